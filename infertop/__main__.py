"""`python -m infertop`. SIGTERM and SIGHUP end it as Ctrl-C does from its first moment, while
its modules still import (about 2 s on a busy machine): 128 + the signal, never a kill by the
default handler; `infertop.cli.main` then takes over."""

import signal
import sys

from probe.checks.interrupts import (
    STOP_SIGNALS,
    Interrupted,
    exit_status,
    signal_of,
    signals_as_interrupt,
)

with signals_as_interrupt():
    try:
        from infertop.cli import main
        status = main()
    except KeyboardInterrupt as exc:    # Ctrl-C needs no words; a SIGTERM from afar does
        if isinstance(exc, Interrupted):
            print(f"infertop: stopped by {exc}", file=sys.stderr)
        status = exit_status(signal_of(exc))
# The run is over and has said so: a stop that lands while the interpreter shuts down (torch's
# teardown takes a while) would only turn its status into a kill by the default handler.
for stop in STOP_SIGNALS:
    signal.signal(stop, signal.SIG_IGN)
sys.exit(status)
