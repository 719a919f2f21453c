"""A listening port checked before the model loads: one in use is refused in a second, not
after the engine has loaded (ten seconds and more)."""

from __future__ import annotations

import socket

from probe.common.errors import Busy


def check_port_free(port: int | None, option: str = "--metrics-port",
                    host: str = "127.0.0.1") -> None:
    """Busy when `port` cannot be listened on now; None and 0 (any free port) pass.
    Bound with SO_REUSEADDR, as the exporter's http.server binds: a port held only by
    connections in TIME_WAIT is free to it."""
    if not port:
        return
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
            probe.listen(1)
        except OSError as exc:
            raise Busy(f"{option} {port}: cannot listen on {host}:{port} "
                              f"({exc.strerror or exc})") from None
