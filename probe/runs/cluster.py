"""`bench --ray`: Ray itself (an optional extra), the cluster the study joins or starts, and
what every run asks of it — a whole device, so no two timed runs ever share one."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import Mapping

from probe.common.errors import BadInput

INSTALL_HINT = "pip install 'infertop[ray]'"
SLOT = "bench_slot"                 # a CPU node's custom resource: 1 = the whole node
RETRIES = 1                         # a run whose worker died or whose node left runs once more


def require_ray():
    try:
        import ray
    except ImportError:
        raise BadInput(f"--ray needs Ray, which is not installed here: {INSTALL_HINT}") \
            from None
    return ray


@dataclass(frozen=True)
class Cluster:
    address: str                    # "local", or the address joined
    device: str                     # what every run serves on: "cuda" or "cpu"
    asks: Mapping[str, object]      # the resources one run asks for (ray.remote options)
    slots: int                      # runs timed at once: the cluster's GPUs or bench slots
    nodes: int
    ray_version: str
    owned: bool = field(default=False, compare=False)  # this process joined: it leaves at the end

    def as_dict(self) -> dict:
        return {"name": "ray", "address": self.address, "ray": self.ray_version,
                "device": self.device, "asks": dict(self.asks), "slots": self.slots,
                "nodes": self.nodes, "retries": RETRIES}

    def close(self) -> None:
        if self.owned:
            require_ray().shutdown()


def connect(target: str, device: str) -> Cluster:
    """`local` starts a Ray instance on this machine (its CPUs as one bench slot, its GPUs as
    Ray finds them); anything else is an address to join ("" reads RAY_ADDRESS, else local).
    A process that already runs Ray (a test) keeps its instance."""
    ray = require_ray()
    address = target or os.environ.get("RAY_ADDRESS") or "local"
    owned = not ray.is_initialized()
    if owned:
        kwargs = dict(log_to_driver=False, logging_level=logging.WARNING)
        try:
            if address == "local":
                ray.init(address="local", num_cpus=os.cpu_count(), include_dashboard=False,
                         resources={SLOT: 1}, **kwargs)
            else:
                ray.init(address=address, **kwargs)
        except (ConnectionError, ValueError, RuntimeError) as exc:
            raise BadInput(f"--ray {address}: cannot join the cluster: {exc}") from None
    try:
        resources = ray.cluster_resources()
        run_device, asks, slots = run_slot(device, resources)
        nodes = sum(1 for node in ray.nodes() if node.get("Alive"))
    except BadInput:
        if owned:
            ray.shutdown()
        raise
    return Cluster(address, run_device, asks, slots, nodes, ray.__version__, owned)


def run_slot(device: str, resources: Mapping[str, float]) -> tuple[str, dict, int]:
    """A GPU each on a GPU cluster (Ray hands the task its own one as cuda:0); else a whole
    node, through the bench_slot resource each CPU node declares once."""
    gpus, cpu_slots = int(resources.get("GPU", 0)), int(resources.get(SLOT, 0))
    if device != "cpu" and gpus:
        return "cuda", {"num_cpus": 1, "num_gpus": 1}, gpus
    if device.startswith("cuda"):
        raise BadInput(f"--device {device}: the Ray cluster has no GPUs")
    if not cpu_slots:
        raise BadInput(
            f"the Ray cluster has no GPUs and no {SLOT!r} resource, so a run cannot own a "
            f"node: start each node with `ray start ... --resources '{{\"{SLOT}\": 1}}'`")
    return "cpu", {"num_cpus": 1, "resources": {SLOT: 1}}, cpu_slots
