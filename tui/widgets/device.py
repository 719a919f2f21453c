"""Device load: NVML figures on a GPU, CPU % and the engine's RSS on a CPU. None reads N/A."""

from __future__ import annotations

from rich.text import Text

from probe.device_sample import DeviceSample
from probe.live import LiveSnapshot
from tui.format import NOT_AVAILABLE, fmt_bytes, fmt_pct
from tui.widgets.panel import Panel, Parts


def _memory(sample: DeviceSample) -> str:
    used = fmt_bytes(sample.mem_used_bytes)
    if sample.mem_total_bytes is None:
        return used
    return f"{used} / {fmt_bytes(sample.mem_total_bytes)}"


def device_headline(sample: DeviceSample | None) -> Text:
    if sample is None:
        return Text("no device sample yet", style="dim")
    memory = "RSS" if sample.kind == "CPU" else "mem"
    return Text(f"{sample.kind} {fmt_pct(sample.util_pct)} · {memory} "
                f"{fmt_bytes(sample.mem_used_bytes)}")


def device_detail(sample: DeviceSample | None) -> Text:
    if sample is None:
        return Text("")
    text = Text(f"{sample.name}\n", style="bold")
    if sample.kind == "CPU":
        text.append(f"RSS  {_memory(sample)}\n")
        text.append(f"free {fmt_bytes(sample.mem_free_bytes)}")
        return text
    power = NOT_AVAILABLE if sample.power_w is None else f"{sample.power_w:.0f} W"
    temperature = NOT_AVAILABLE if sample.temperature_c is None else f"{sample.temperature_c:.0f} °C"
    text.append(f"mem {_memory(sample)}\n")
    text.append(f"power {power} · temp {temperature}\n")
    text.append(f"torch alloc {fmt_bytes(sample.torch_allocated_bytes)} · "
                f"reserved {fmt_bytes(sample.torch_reserved_bytes)}")
    return text


class DevicePanel(Panel):
    TITLE = "Device"

    def render_key(self, snapshot: LiveSnapshot) -> object:
        return snapshot.device_sample

    def render_parts(self, snapshot: LiveSnapshot, width: int) -> Parts:
        sample = snapshot.device_sample
        return Parts(device_headline(sample), device_detail(sample))
