"""guards=lean: which of dynamo's guards a compiled call keeps.

Before every call of a compiled function dynamo checks the guards it wrote while tracing. For
t5's decode step that is about 1,700 checks — the model's module attributes and hooks, the
classes and registries of transformers' globals, a dynamic-marking check per tensor dimension —
and dynamo's own "Guard eval latency" reads ~0.5 ms on the 2-core VM, a tenth of a 5 ms step.
This engine never changes a module attribute or a library global between calls (each config is
a fresh model copy and a fresh compile), so the only guards that can fail are the inputs': a
request of a new length, a new batch, a new dtype. `lean_guards` keeps those (every tensor
guard except the model's own parameters and buffers, the global grad/autocast state, and the
non-tensor arguments) and drops the rest, through torch.compile's `guard_filter_fn` hook.

torch.compiler ships two filters, `skip_guard_on_all_nn_modules_unsafe` (leaves the globals:
~190 µs here) and `keep_tensor_guards_unsafe` (leaves parameter tensors: ~160 µs, and also
drops the argument checks); this one removes both, for ~85 µs.
"""

from __future__ import annotations

from collections.abc import Sequence

# Dimension-marking guards check that nobody called mark_dynamic on a tensor since tracing:
# this engine never does.
_DYNAMIC_MARKING = "DIMENSION_DYNAMIC_MARKING_GUARD"


def lean_guards(entries: Sequence) -> list[bool]:
    """torch.compile's guard_filter_fn: True keeps a guard (entries are dynamo's
    GuardFilterEntry: guard_type, is_global, orig_guard.source)."""
    return [_keep(entry) for entry in entries]


def _keep(entry) -> bool:
    if entry.guard_type == _DYNAMIC_MARKING or entry.is_global:
        return False
    return not entry.orig_guard.source.is_unspecialized_nn_module()


def guard_filter(guards: str):
    """The guard_filter_fn for a `guards` option value, or None for dynamo's full set."""
    return lean_guards if guards == "lean" else None
