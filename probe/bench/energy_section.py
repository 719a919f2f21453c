"""Energy in bench's report: each run's J per output token where a counter was read (its
session segment's `energy_stats`, over every request the run served, warm-up included), and
for the runs where none was, the reason, said once however many runs share it."""

from __future__ import annotations

from probe.common.units import fmt_fraction
from probe.contract.figures import NOT_RECORDED
from probe.session_store.tables import table


def energy_by_run(runs: dict) -> dict:
    """report.json `energy`: {"j_per_token": {run: J/token}, "unavailable": {why: [runs]}};
    {} where no run carries an energy figure (runs that failed, reports from before)."""
    measured: dict[str, float | None] = {}
    unavailable: dict[str, list[str]] = {}
    for key, run in runs.items():
        energy = run.get("energy") if isinstance(run, dict) else None
        if not isinstance(energy, dict):
            continue
        if energy.get("unavailable") is not None:
            unavailable.setdefault(str(energy["unavailable"]), []).append(key)
        else:
            measured[key] = energy.get("j_per_token")
    if not measured and not unavailable:
        return {}
    return {"j_per_token": measured, "unavailable": unavailable}


def energy_markdown(report: dict) -> list[str]:
    summary = report.get("energy") or {}
    runs = report.get("runs") or {}
    measured, unavailable = summary.get("j_per_token") or {}, summary.get("unavailable") or {}
    if not measured and not unavailable:
        return []
    out = ["## Energy per token", ""]
    if measured:
        rows = []
        for key in measured:
            energy = runs.get(key, {}).get("energy") or {}
            rows.append([f"`{key}`", str(runs.get(key, {}).get("label")),
                         _unit(energy.get("j_per_token"), "J"),
                         _unit(energy.get("j_per_good_token"), "J"),
                         _unit(energy.get("avg_power_w"), "W"),
                         fmt_fraction(energy.get("padding_share")), str(energy.get("source"))])
        out += ["Joules the device's counter charged to each run's requests (warm-up "
                "included) per output token they made; the idle floor between steps is apart "
                "(docs/energy.md).", "",
                table(["run", "config", "J/token", "J/good token", "avg power", "padding",
                       "counter"], rows), ""]
    for why, keys in unavailable.items():
        named = ", ".join(f"`{k}`" for k in keys)
        said = (NOT_RECORDED if why == NOT_RECORDED else f"not measurable here ({why})")
        out.append(f"- {len(keys)} run{'s' if len(keys) != 1 else ''} without J/token: "
                   f"{said} — {named}")
    if unavailable:
        out.append("")
    return out


def _unit(value, unit: str) -> str:
    return "n/a" if value is None else f"{value:.3g} {unit}"
