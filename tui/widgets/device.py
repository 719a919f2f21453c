"""Device load: NVML figures on a GPU, the whole machine's CPU % and the engine's RSS on a CPU;
on both, the engine's own CPU (100% = one core busy), the compilers it starts included. None
reads N/A."""

from __future__ import annotations

from rich.text import Text

from probe.analysis.load_check import contention
from probe.common.units import NOT_AVAILABLE, fmt_bytes, fmt_pct
from probe.contract.device_sample import DeviceSample
from probe.contract.figures import EnergyStats
from probe.contract.live import LiveView
from tui import derive
from tui.format import fitting
from tui.widgets.panel import Panel, Parts

TITLE = "Device"


def _memory(sample: DeviceSample) -> str:
    used = fmt_bytes(sample.mem_used_bytes)
    if sample.mem_total_bytes is None:
        return used
    return f"{used} / {fmt_bytes(sample.mem_total_bytes)}"


def engine_cpu(sample: DeviceSample, width: int = 80) -> str:
    """The engine process's CPU, said so that it cannot pass for the machine's."""
    pct = sample.process_cpu_pct
    if pct is None:
        return f"engine CPU {NOT_AVAILABLE}"
    return fitting(width, f"engine {pct:.0f}% of a core", f"engine {pct / 100:.1f} cores")


def device_headline(sample: DeviceSample | None, width: int = 80) -> Text:
    if sample is None:
        return Text("no device sample yet", style="dim")
    if sample.kind == "CPU":
        # psutil's system-wide % (100 = every core) beside the process's (100 = one core)
        long = f"machine CPU {fmt_pct(sample.util_pct)} · {engine_cpu(sample)}"
        short = f"machine {fmt_pct(sample.util_pct)} · {engine_cpu(sample, 0)}"
        text = Text(fitting(width, long, short), no_wrap=True, overflow="ellipsis")
        if contention(sample) is not None and text.cell_len + 12 <= width:
            text.append(" · contended", style="bold yellow")
        return text
    return Text(f"GPU {fmt_pct(sample.util_pct)} · mem {_memory(sample)}", no_wrap=True,
                overflow="ellipsis")


def device_detail(sample: DeviceSample | None, energy: Text | None = None) -> Text:
    """`energy` (energy_line) goes third, where the panel's height still shows it."""
    if sample is None:
        return energy or Text("")
    text = Text(no_wrap=True, overflow="ellipsis")
    if sample.kind == "CPU":
        text.append(f"engine RSS {_memory(sample)}\n")
        text.append(f"machine free {fmt_bytes(sample.mem_free_bytes)}\n")
        if energy is not None and energy.plain:
            text.append_text(energy)
            text.append("\n")
        busy = contention(sample)
        if busy is not None:
            text.append(f"others use {busy.others_cores:.1f} of {busy.cores} cores: "
                        "figures unreliable", style="bold yellow")
        else:
            text.append("machine CPU: 100% = all cores busy", style="dim")
        return text
    power = NOT_AVAILABLE if sample.power_w is None else f"{sample.power_w:.0f} W"
    temperature = NOT_AVAILABLE if sample.temperature_c is None else f"{sample.temperature_c:.0f} °C"
    text.append(f"{engine_cpu(sample)} (host)\n")
    text.append(f"power {power} · temp {temperature}\n")
    if energy is not None and energy.plain:
        text.append_text(energy)
        text.append("\n")
    text.append(f"torch alloc {fmt_bytes(sample.torch_allocated_bytes)} · "
                f"reserved {fmt_bytes(sample.torch_reserved_bytes)}")
    if sample.mem_reserved_bytes is not None:   # apart from "mem", as nvidia-smi shows it
        text.append(f"\ndriver reserved {fmt_bytes(sample.mem_reserved_bytes)} (not in mem)")
    if sample.cuda_graphs:
        text.append(f"\nCUDA graphs {sample.cuda_graphs} · their pools "
                    f"{fmt_bytes(sample.cuda_graph_bytes)}")
    return text


def served_energy(view: LiveView) -> EnergyStats | None:
    """The served config's energy figure (its segment's: the one `snapshot show` prints)."""
    current = derive.segment(view, view.config_id)
    return current.energy if current is not None else None


def energy_line(energy: EnergyStats | None) -> Text:
    """ "energy 812 J · 0.412 J/token · avg 38.2 W", or why it is not measurable here."""
    if energy is None:
        return Text("")
    if energy.unavailable is not None:
        return Text(energy.text(), style="dim", no_wrap=True, overflow="ellipsis")
    joules = NOT_AVAILABLE if energy.joules is None else f"{energy.joules:.3g} J"
    power = NOT_AVAILABLE if energy.avg_power_w is None else f"{energy.avg_power_w:.3g} W"
    return Text(f"energy {joules} · {energy.short_text()} · avg {power}", no_wrap=True,
                overflow="ellipsis")


def device_title(sample: DeviceSample | None) -> Text:
    if sample is None:
        return Text(TITLE)
    return Text(f"{TITLE} · {sample.kind} {sample.name}")


class DevicePanel(Panel):
    TITLE = TITLE

    def render_key(self, view: LiveView) -> object:
        return view.device_sample, served_energy(view)

    def draw(self, view: LiveView, width: int) -> None:
        super().draw(view, width)
        self.border_title = device_title(view.device_sample)  # a Text: never markup

    def render_parts(self, view: LiveView, width: int) -> Parts:
        sample = view.device_sample
        return Parts(device_headline(sample, width),
                     device_detail(sample, energy_line(served_energy(view))))
