"""Which node ran what, for a study spread over a Ray cluster: each node's environment, how
fast the calibration workload ran there, and the differences between nodes a reader must know
before comparing two runs that ran on different ones."""

from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import Mapping

from probe.bench.study_setup import bench_environment
from probe.common.percentile import median
from probe.common.units import NO_DATA
from probe.runs.results import Outcome, RunResult
from probe.runs.verdict import DRIFT_TOLERANCE
from probe.session_store.tables import table

# environment keys whose difference between nodes the report names
COMPARED = (("device_name", "device"), ("cpu_count", "CPUs"), ("torch_threads", "torch threads"),
            ("torch", "torch"), ("transformers", "transformers"), ("python", "Python"))


@dataclass(frozen=True)
class NodeInfo:
    node_id: str
    hostname: str
    environment: Mapping[str, object]       # study_setup.bench_environment, on the node

    @classmethod
    def here(cls, device) -> NodeInfo:
        return cls(_ray_node_id() or "local", socket.gethostname(), bench_environment(device))


@dataclass(frozen=True)
class Placement:
    """Where a run (or an open-loop experiment) ran last, and in how many attempts."""
    node: NodeInfo | None                   # None: lost before any node reported it
    attempts: int = 1

    def as_dict(self) -> dict:
        return {"node_id": self.node.node_id if self.node else None,
                "hostname": self.node.hostname if self.node else None,
                "attempts": self.attempts}


def _ray_node_id() -> str | None:
    try:
        import ray
        return ray.get_runtime_context().get_node_id() if ray.is_initialized() else None
    except ImportError:
        return None


def place_runs(report: dict, placements: Mapping[str, Placement],
               results: Mapping[str, Outcome]) -> None:
    """report.json: `node` on every run, and `nodes`: each node, its runs, its calibration
    times and what differs between nodes."""
    for key, place in placements.items():
        if isinstance(report["runs"].get(key), dict):
            report["runs"][key]["node"] = place.as_dict()
    report["nodes"] = nodes_summary(placements, results)


def nodes_summary(placements: Mapping[str, Placement],
                  results: Mapping[str, Outcome]) -> dict:
    nodes: dict[str, dict] = {}
    for key, place in placements.items():
        if place.node is None:
            continue
        entry = nodes.setdefault(place.node.node_id, {
            "hostname": place.node.hostname, "environment": dict(place.node.environment),
            "runs": [], "calibration_ms": []})
        entry["runs"].append(key)
        result = results.get(key)
        if isinstance(result, RunResult):
            entry["calibration_ms"] += [v for v in result.calibration_ms if v]
    for entry in nodes.values():
        values = entry.pop("calibration_ms")
        entry["calibration_ms"] = ({"min": min(values), "median": median(values),
                                    "max": max(values)} if values else None)
    retried = sorted(k for k, p in placements.items() if p.attempts > 1)
    return {"by_node": nodes, "retried": retried, "differences": differences(nodes)}


def differences(nodes: Mapping[str, dict]) -> list[str]:
    """Every way the nodes differ that moves a timing, or that they match."""
    if len(nodes) < 2:
        return [f"every run ran on one node ({n['hostname']})" for n in nodes.values()]
    lines = []
    for key, name in COMPARED:
        values = {n["hostname"]: n["environment"].get(key) for n in nodes.values()}
        if len(set(map(str, values.values()))) > 1:
            lines.append(f"{name} differs: " + ", ".join(f"{h} {v}" for h, v in values.items()))
    medians = {n["hostname"]: n["calibration_ms"]["median"] for n in nodes.values()
               if n["calibration_ms"]}
    if len(medians) >= 2:
        fast = min(medians, key=lambda host: medians[host])
        slow = max(medians, key=lambda host: medians[host])
        ratio = medians[slow] / medians[fast]
        lines.append(
            f"the calibration workload ran {ratio:.2f}× slower on {slow} than on {fast} (median "
            f"{medians[slow]:.1f} vs {medians[fast]:.1f} ms)" +
            (f": more than the {DRIFT_TOLERANCE}× the report tolerates, so a difference between "
             "runs on these nodes smaller than that is reported as noise; compare ratios within "
             "a node" if ratio > DRIFT_TOLERANCE else
             f": within the {DRIFT_TOLERANCE}× the report tolerates"))
    return lines or ["the nodes match in device, CPUs, threads and software"]


def nodes_markdown(report: dict) -> list[str]:
    """report.md's executor line and, for a Ray study, its Nodes section."""
    executor = report.get("executor") or {}
    if executor.get("name") != "ray":
        return []
    summary = report.get("nodes") or {}
    asks = ", ".join(f"{k}={v}" for k, v in (executor.get("asks") or {}).items())
    whole = "a GPU of its own" if executor.get("device") == "cuda" else "a whole node's CPUs"
    out = ["## Nodes", "",
           f"Ran on Ray {executor.get('ray')} at `{executor.get('address')}`: every run was a "
           f"task asking for {asks} — {whole} — so no two timed runs shared a device; "
           f"{executor.get('slots')} ran at once at most. A task whose worker "
           f"died or whose node left ran {executor.get('retries')} more time, then was marked "
           f"failed. The calibration workload ran before and after every run, on its node; a "
           f"study's environment line and report.json `environment` are its first node's.",
           "",
           table(["node", "host", "device", "CPUs", "torch threads", "torch", "runs",
                      "calibration ms (median, min–max)"],
                     [_node_row(node_id, n) for node_id, n in
                      (summary.get("by_node") or {}).items()]), ""]
    out += [f"- {line}" for line in summary.get("differences") or []]
    if summary.get("retried"):
        out.append("- ran a second time after a lost worker or node: "
                   + ", ".join(f"`{k}`" for k in summary["retried"]))
    return out + [""]


def _node_row(node_id: str, node: dict) -> list[str]:
    env, cal = node["environment"], node.get("calibration_ms")
    return [node_id[:12], node["hostname"], str(env.get("device_name")), str(env.get("cpu_count")),
            str(env.get("torch_threads")), str(env.get("torch")), str(len(node["runs"])),
            f"{cal['median']:.1f} ({cal['min']:.1f}–{cal['max']:.1f})" if cal else NO_DATA]
