"""One base class for errors a user can fix (bad input, a broken spec, missing data).

The CLI prints a :class:`PubenchError` as one line and exits with status 2; anything else
is a bug and keeps its traceback.
"""


class PubenchError(Exception):
    """A user error: printed as one line by the CLI."""


class JobInterrupted(BaseException):
    """A stop signal (SIGTERM, SIGINT, SLURM's SIGUSR1 / SIGUSR2) arrived while a job ran:
    not an error of the job; the next run retries it (from its checkpoint, if any)."""

    def __init__(self, signum: int):
        import signal

        super().__init__(f"interrupted by {signal.Signals(signum).name}; the next run retries this job")
        self.signum = signum
