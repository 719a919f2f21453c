"""How many continuous-batching slots an engine gets: from the device's free memory and the
trace's lengths, unless --max-batch or --kv-budget says otherwise. Pure arithmetic (no torch),
so it is tested on given free-memory figures.

A slot of the static layout holds a region of (longest output + longest input) positions of
K and V in every decoder layer. On a GPU the slots share half the memory free after the model
is loaded (the rest is for activations, CUDA graphs' pools and a warm side engine), up to
MAX_SLOTS["cuda"], vLLM's default max_num_seqs: past it a decode step's attention reads grow
with no slot left idle to fill. On a CPU a step is compute-bound on a few cores: more slots
add latency to every request rather than throughput, so the CPU keeps 8.
"""

from __future__ import annotations

from dataclasses import dataclass

from probe.common.errors import BadInput

MAX_SLOTS = {"cuda": 256, "cpu": 8}
SHARE_OF_FREE = 0.5


@dataclass(frozen=True)
class SlotSizing:
    slots: int
    region_bytes: int               # one slot's static KV region
    budget_bytes: int | None        # what the slots were sized against; None: the fixed CPU count
    source: str                     # one line: where the count came from

    @property
    def held_bytes(self) -> int:
        return self.slots * self.region_bytes


def region_bytes(*, position_bytes: int, max_input_tokens: int, max_new_tokens: int) -> int:
    """One slot's static region: K and V of every decoder layer at every position it can use
    (`position_bytes` = 2 · layers · heads · d_kv · bytes per element)."""
    return position_bytes * (max_input_tokens + max_new_tokens)


def size_slots(*, device_type: str, free_bytes: int | None, position_bytes: int,
               max_input_tokens: int, max_new_tokens: int, max_batch: int = 0,
               kv_budget_bytes: int | None = None) -> SlotSizing:
    """`max_batch` 0 and `kv_budget_bytes` None: sized from the device. `max_batch` given is
    the count (`kv_budget_bytes` is then the paged pool's alone); else `kv_budget_bytes` given
    is what the regions share. BadInput when the regions cannot fit in the free memory."""
    region = region_bytes(position_bytes=position_bytes, max_input_tokens=max_input_tokens,
                          max_new_tokens=max_new_tokens)
    cap = MAX_SLOTS.get(device_type, MAX_SLOTS["cpu"])
    if max_batch and free_bytes is not None and max_batch * region > free_bytes:
        raise BadInput(
            f"--max-batch {max_batch}: its static KV regions need {max_batch * region / 2**30:.1f}"
            f" GiB ({region / 2**20:.1f} MiB a slot) but the device has "
            f"{free_bytes / 2**30:.1f} GiB free; at most {free_bytes // region} slots fit")
    if kv_budget_bytes is not None and free_bytes is not None and kv_budget_bytes > free_bytes:
        raise BadInput(f"--kv-budget {kv_budget_bytes / 2**30:.1f} GiB: the device has "
                          f"{free_bytes / 2**30:.1f} GiB free")
    if max_batch:
        return SlotSizing(max_batch, region, kv_budget_bytes, f"--max-batch {max_batch}")
    if kv_budget_bytes is not None:
        slots = max(1, min(cap, kv_budget_bytes // region))
        return SlotSizing(slots, region, kv_budget_bytes,
                          f"--kv-budget {kv_budget_bytes:,} bytes ÷ {region:,} a slot"
                          + (f", at most {cap}" if slots == cap else ""))
    if device_type != "cuda" or free_bytes is None:
        return SlotSizing(cap, region, None, f"{cap} slots on a {device_type.upper()}")
    budget = int(free_bytes * SHARE_OF_FREE)
    slots = max(1, min(cap, budget // region))
    return SlotSizing(slots, region, budget,
                      f"half of {free_bytes / 2**30:.1f} GiB free ÷ {region / 2**20:.1f} MiB "
                      f"a slot" + (f", at most {cap}" if slots == cap else ""))
