"""`bench`'s option checks that need neither torch nor Ray, done before anything starts: the
compile backend and the Ray address's form (a malformed one would otherwise
be retried by Ray for a minute)."""

from __future__ import annotations

import ipaddress
import re

from probe.common.errors import BadInput

# dynamo's own backends that need nothing beyond torch (tvm, openxla, ts need packages of
# their own; the *_TESTING_ONLY and minifier ones are no study)
COMPILE_BACKENDS = ("inductor", "eager", "aot_eager", "aot_eager_decomp_partition", "cudagraphs")
RAY_WORDS = ("local", "auto")
_HOSTNAME = re.compile(r"^(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)"
                       r"(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$")


def check_compile_backend(name: str) -> str:
    if name not in COMPILE_BACKENDS:
        raise BadInput(f"--compile-backend {name!r}: not a torch.compile backend infertop "
                          f"can study; choose one of {', '.join(COMPILE_BACKENDS)}")
    return name


def check_ray_address(address: str, option: str = "--ray") -> str:
    """`local`, `auto`, HOST:PORT or ray://HOST:PORT, with HOST an IP address or a host name
    and PORT 1-65535; the form only (whether a cluster answers there is Ray's to find)."""
    if address in RAY_WORDS:
        return address
    rest = address[len("ray://"):] if address.startswith("ray://") else address
    host, colon, port = rest.rpartition(":")
    if not colon:
        raise _bad_address(option, address, "expected local, auto, HOST:PORT or "
                                            "ray://HOST:PORT")
    if not (port.isascii() and port.isdigit() and 1 <= int(port) <= 65535):
        raise _bad_address(option, address, f"port {port!r} is not a whole number from 1 to "
                                            f"65535")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
        if not _is_ip(host, version=6):
            raise _bad_address(option, address, f"{host!r} is not an IPv6 address")
    elif re.fullmatch(r"[0-9.]+", host):
        if not _is_ip(host, version=4):
            raise _bad_address(option, address, f"{host!r} is not an IPv4 address")
    elif not _HOSTNAME.match(host):
        raise _bad_address(option, address, f"{host!r} is not a host name")
    return address


def _is_ip(text: str, version: int) -> bool:
    try:
        return ipaddress.ip_address(text).version == version
    except ValueError:
        return False


def _bad_address(option: str, address: str, why: str) -> BadInput:
    return BadInput(f"{option} {address!r}: not a Ray address: {why}")
