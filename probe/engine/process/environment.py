"""Where a session ran (python, torch, transformers, the device and its threads): read on the
engine's side, which has torch loaded, and handed to the contract's session document."""

from __future__ import annotations

import os
import platform
import sys
from typing import Any


def environment(device) -> dict[str, Any]:
    """Where a session ran, for the session document's `environment`."""
    import torch
    import transformers
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
    else:
        name = platform.processor() or platform.machine()
    return {"python": sys.version.split()[0], "torch": torch.__version__,
            "transformers": transformers.__version__, "device": str(device),
            "device_name": name, "cpu_count": os.cpu_count(),
            "torch_threads": torch.get_num_threads(), "platform": platform.platform()}
