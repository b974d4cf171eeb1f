"""One base class for errors a user can fix (bad input, a broken spec, missing data).

The CLI prints a :class:`PubenchError` as one line and exits with status 2; anything else
is a bug and keeps its traceback.
"""


class PubenchError(Exception):
    """A user error: printed as one line by the CLI."""
