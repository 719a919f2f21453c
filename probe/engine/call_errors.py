"""How a failed call reads: one line for a request's record, and whether it was torch.compile's
failure or the model's (the engine serves a compile failure eager; a model failure fails the
request)."""

from __future__ import annotations

import torch


def short_error(exc: BaseException, limit: int = 300) -> str:
    """`Type: message` on one line, the message's lines joined (a backend failure names the
    real cause on its second line)."""
    message = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    return f"{type(exc).__name__}: {message}"[:limit]


def is_compile_failure(exc: BaseException) -> bool:
    """A failure of torch.compile itself (dynamo or a backend), as opposed to the model's."""
    if isinstance(exc, (torch._dynamo.exc.TorchDynamoException,)):
        return True
    module = type(exc).__module__ or ""
    return module.startswith(("torch._dynamo", "torch._inductor"))
