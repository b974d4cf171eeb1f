"""Helper threads that never take the process's stop signals.

Linux delivers a process-directed signal (SIGTERM from a runner, SLURM's SIGUSR2, ...) to any
thread that does not block it. Python runs its handler in the main thread, but only once the
main thread returns to the interpreter: a main thread in a long ``time.sleep`` or a C call is
interrupted only when the signal lands on it. A helper thread (a claim's heartbeat, a parent
watchdog) that took the signal would leave the job running past its runner's grace period, to
be killed without its "interrupted" record. So helper threads start with the stop signals
blocked (a new thread inherits its creator's mask), and the signals go to the main thread.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Callable, Iterator

STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR2}


@contextlib.contextmanager
def stop_signals_blocked() -> Iterator[None]:
    """Threads started inside (also by a library, e.g. a multiprocessing queue's feeder
    thread on its first ``put``) never take :data:`STOP_SIGNALS`; signals that arrive
    meanwhile wait and reach this thread after."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def start_helper_thread(target: Callable[[], None], name: str) -> threading.Thread:
    """Start ``target`` in a daemon thread whose signal mask blocks :data:`STOP_SIGNALS`."""
    thread = threading.Thread(target=target, name=name, daemon=True)
    with stop_signals_blocked():
        thread.start()
    return thread
