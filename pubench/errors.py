"""One base class for errors a user can fix (bad input, a broken spec, missing data).

The CLI prints a :class:`PubenchError` as one line and exits with status 2; anything else
is a bug and keeps its traceback.
"""


class PubenchError(Exception):
    """A user error: printed as one line by the CLI (exit status ``exit_code``)."""

    exit_code = 2


class UsageError(PubenchError):
    """Bad input to a command (a flag, a folder, a tier): printed as one line, exit status 2."""


class SpecError(PubenchError, ValueError):
    """An invalid file of the registry (a spec, a preset, the PU data set catalogue, ...):
    ``file: key: problem``."""

    def __init__(self, file: str, key: str, problem: str):
        self.file, self.key, self.problem = file, key, problem
        super().__init__(f"{file}: {key}: {problem}")


class StorageError(PubenchError, OSError):
    """Writing a record, a claim, a checkpoint or a report failed (disk full, read-only,
    quota): the run stops with one line naming the folder and the system's reason; what
    finished is kept and a rerun, once there is room, continues."""

    exit_code = 1

    @classmethod
    def from_os(cls, exc: OSError, folder) -> "StorageError":
        """From the ``OSError`` of a write into ``folder``."""
        if isinstance(exc, StorageError):
            return exc
        import errno as _errno

        name = _errno.errorcode.get(exc.errno or 0, "")
        reason = exc.strerror or str(exc) or type(exc).__name__
        return cls(exc.errno, f"cannot write in {folder}: {reason}{f' ({name})' if name else ''}")

    def __str__(self) -> str:
        return str(self.strerror)


class PubenchWarning(UserWarning):
    """A warning the CLI prints as one line (``pubench: warning: ...``)."""


def install_warning_format() -> None:
    """Print :class:`PubenchWarning` s as one line, other warnings as Python does."""
    import warnings

    default = warnings.formatwarning
    if getattr(default, "_pubench", False):
        return

    def fmt(message, category, filename, lineno, line=None):
        if issubclass(category, PubenchWarning):
            return f"pubench: warning: {' '.join(str(message).split())}\n"
        return default(message, category, filename, lineno, line)

    fmt._pubench = True
    warnings.formatwarning = fmt


class JobInterrupted(BaseException):
    """A stop signal (SIGTERM, SIGINT, SLURM's SIGUSR1 / SIGUSR2) arrived while a job ran:
    not an error of the job; the next run retries it (from its checkpoint, if any)."""

    def __init__(self, signum: int):
        import signal

        super().__init__(f"interrupted by {signal.Signals(signum).name}; the next run retries this job")
        self.signum = signum


def shorten(text: str, limit: int = 80) -> str:
    """``text`` cut to about ``limit`` characters, saying how much was left out (user input
    echoed in a message: a 100k-character argument must not flood the terminal)."""
    text = str(text)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"
