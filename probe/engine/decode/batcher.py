"""The interface continuous batching drives: slots that requests join and leave, and a step
that makes one token for every occupied slot. `continuous.SlotBatcher` gives each slot a fixed
region of the KV cache; `paged.PagedBatcher` gives it blocks of a shared pool and so admits
by free blocks. The scheduler (probe/engine/continuous_scheduler.py) sees only this."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Protocol

if TYPE_CHECKING:
    import torch

    from probe.contract.records import KVPool
    from probe.engine.decode.slot_graphs import SlotGraphs


class Batcher(Protocol):
    # read-only here (properties), so a batcher may hold narrower values, as paged's None graphs
    @property
    def layout(self) -> str: ...            # "static" or "paged"
    @property
    def slots(self) -> int: ...
    @property
    def dtype(self) -> torch.dtype: ...
    @property
    def max_new_tokens(self) -> int: ...
    @property
    def max_input_tokens(self) -> int: ...
    @property
    def last_rows(self) -> int: ...         # the rows the last step ran over
    @property
    def graphs(self) -> SlotGraphs | None: ...  # CUDA graphs per padded batch size, if captured

    def admit(self, input_length: int, output_length: int) -> bool:
        """Reserve what a request of these lengths needs, or say it must wait."""
        ...

    def fits(self, input_length: int, output_length: int) -> bool:
        """Whether such a request can ever be served here."""
        ...

    def capacity_text(self) -> str: ...

    def info(self) -> KVPool | None:
        """The block pool's state; None where each slot's region is its own."""
        ...

    def cancel_admitted(self) -> None:
        """Drop the reservations no join used."""
        ...

    def join(self, slot_ids: list[int], input_ids: torch.Tensor,
             attention_mask: torch.Tensor, output_lengths: list[int]) -> None: ...

    def leave(self, slot_ids: list[int]) -> None: ...

    def step(self) -> None: ...

    def read(self, slot: int, count: int) -> torch.Tensor: ...

    def rebuild_step(self, wrap: Callable[[Callable], Callable]) -> None: ...
