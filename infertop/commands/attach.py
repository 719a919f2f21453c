"""`infertop attach [URL]`: the dashboard on a running `infertop serve`, through ServerLink
(probe/server/attach/link.py). The first dashboard to attach steers (its option keys switch
the server's config through the warm switch); the others watch. `q` leaves the server serving.
The URL and the key are checked before the dashboard opens: one line and exit 2 when nothing
answers there, it is not an infertop server, or the key is refused."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from probe.common.errors import BadInput
from probe.contract.options import OptConfig
from tui.terminal_check import no_terminal_problem, say_no_terminal
from tui.terminal_size import adopt_terminal_size

NAME = "attach"
HELP = "open the dashboard on a running `infertop serve`: watch it, and steer it if first"
DEFAULT_URL = "http://127.0.0.1:8000"
API_KEY_ENV = "INFERTOP_API_KEY"
CHECK_S = 5.0           # the checks' wait for the server's answer
READER_STOP_WAIT_S = 3.0
FIRST_VIEW_S = 5.0      # a ready server's first view comes within a publish interval
WARMING_S = 3600.0      # a server still warming: its compiles before /health is ready


def add_cli_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("url", nargs="?", default=DEFAULT_URL, metavar="URL",
                        help=f"the server, as `infertop serve` printed it (default "
                             f"{DEFAULT_URL}; a trailing /v1 is fine)")
    parser.add_argument("--api-key", default=None, metavar="KEY",
                        help=f"the server's --api-key (default: ${API_KEY_ENV} if set)")
    parser.add_argument("--snapshot-dir", default="snapshots",
                        help="where `s` has the server save its session so far (a folder on "
                             "the server's machine, relative to where it runs)")


def server_url(url: str) -> str:
    """`http(s)://host[:port]`, a trailing `/v1` or `/` dropped; BadInput otherwise."""
    from urllib.parse import urlsplit

    text = url.strip()
    if "://" not in text:
        text = f"http://{text}"
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise BadInput(f"URL {url!r}: {exc}") from None
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[:-3]
    if parts.scheme not in ("http", "https") or not parts.hostname or path or parts.query \
            or parts.fragment or parts.username:
        raise BadInput(f"URL {url!r}: expected http://HOST[:PORT], as `infertop serve` "
                       f"printed it")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}" + (f":{port}" if port else "")


def check_server(url: str, api_key: str | None) -> None:
    """Something answers at `url`, it is an infertop server, and it takes the key."""
    import httpx2

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        with httpx2.Client(base_url=url, headers=headers, timeout=CHECK_S) as client:
            health = client.get("/health")
            models = client.get("/v1/models")
    except httpx2.HTTPError as exc:
        raise BadInput(f"URL {url}: nothing answers there ({type(exc).__name__}: "
                       f"{exc or 'no answer'}); is `infertop serve` running?") from None
    try:
        status = health.json().get("status")
    except (ValueError, AttributeError):
        status = None
    if not isinstance(status, str):
        raise BadInput(f"URL {url}: not an infertop server (its /health answered "
                       f"{health.status_code} without a status)")
    if models.status_code == 401:
        raise BadInput(f"--api-key: the server at {url} refused "
                       + ("the key given" if api_key else f"to answer without one (--api-key "
                                                          f"or ${API_KEY_ENV})"))


def main(args: argparse.Namespace) -> int:
    url = server_url(args.url)
    api_key = args.api_key or os.environ.get(API_KEY_ENV) or None
    check_server(url, api_key)
    problem = no_terminal_problem()
    if problem is not None:     # the dashboard draws on stderr: nothing to draw on
        say_no_terminal(problem)
        return 2
    return _dashboard(url, api_key, Path(args.snapshot_dir))


def _dashboard(url: str, api_key: str | None, snapshot_dir: Path) -> int:
    """The dashboard over a ServerLink, as the replay's is over a LocalLink (tui/launch.py),
    starting from the server's first live view: the options it serves are the ones its keys
    change."""
    from probe.server.attach.link import ServerLink
    from tui.app import InfertopApp

    link = ServerLink(url, api_key)
    link.open()
    view = link.first_view(FIRST_VIEW_S)
    if view is None:
        print(f"infertop attach: {url} is still warming; waiting for its first view "
              f"(Ctrl-C to stop)", file=sys.stderr)
        view = link.first_view(WARMING_S)
    app = InfertopApp(link, initial=view,
                      options=view.options if view is not None else OptConfig(),
                      snapshot_dir=snapshot_dir, speed=None)
    adopt_terminal_size()
    try:
        app.run()
    finally:
        app.reader_stopped.wait(READER_STOP_WAIT_S)
        link.close()        # the server serves on
    return app.return_code or 0
