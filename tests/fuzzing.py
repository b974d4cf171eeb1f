"""What the generated-input tests share (issue 55, item 3): the budgets, the outcome every
case must end in, and running the CLI in this process.

Budgets are Hypothesis settings profiles, picked by ``PUBENCH_FUZZ``:

* ``fast`` (default, ``make test``): a few dozen cases per test, a few hundred in all,
  derandomized: every run tries the same cases, so a failure is there again on the rerun;
* ``thorough`` (``PUBENCH_FUZZ=thorough``, the nightly): twenty times as many, from a random
  seed each run;
* ``triage`` (``PUBENCH_FUZZ=triage``): the fast cases without shrinking a failure (shrinking
  a spec case can take minutes), to see the first failure at once.

Either way a failing case is shrunk and printed with the blob that replays it
(``@reproduce_failure(...)``, ``print_blob``); nothing is written to a ``.hypothesis`` folder.
A generated case ends in success, or in one line and exit 2 (the CLI), or in a
:class:`~pubench.errors.PubenchError` with a one-line message (library calls); never a
traceback, a hang (each case has :data:`CASE_SECONDS`) or a lost valid record.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
from dataclasses import dataclass

import datetime

import yaml
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

PROFILE = os.environ.get("PUBENCH_FUZZ", "fast")
THOROUGH_FACTOR = 20
#: one case's limit: the slowest take about a second on the loaded 2-core machine
CASE_SECONDS = 60

_COMMON = dict(deadline=None, database=None, print_blob=True,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                      HealthCheck.data_too_large, HealthCheck.filter_too_much])
settings.register_profile("fast", derandomize=True, **_COMMON)
settings.register_profile("thorough", derandomize=False, **_COMMON)
settings.register_profile("triage", derandomize=True, phases=[Phase.explicit, Phase.reuse, Phase.generate], **_COMMON)
if PROFILE not in ("fast", "thorough", "triage"):
    raise RuntimeError(f"PUBENCH_FUZZ={PROFILE!r}: expected fast, thorough or triage")
settings.load_profile(PROFILE)


def budget(fast: int) -> settings:
    """Settings of a test that tries ``fast`` cases in the fast profile (x20 when thorough)."""
    return settings(max_examples=fast * (THOROUGH_FACTOR if PROFILE == "thorough" else 1))


class Hang(Exception):
    """A generated case ran past :data:`CASE_SECONDS`."""


@contextlib.contextmanager
def time_limit(seconds: float = CASE_SECONDS):
    """Raise :class:`Hang` in the block after ``seconds``; again every second after that, since
    an exception raised inside a garbage-collector callback is only printed, and once more when
    the block ends, so a hang can never pass."""
    fired = []

    def expire(signum, frame):
        fired.append(True)
        raise Hang(f"the case ran for more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds, 1.0)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    if fired:
        raise Hang(f"the case ran for more than {seconds} s")


@dataclass
class Outcome:
    rc: int | None
    out: str
    err: str

    @property
    def lines(self) -> list[str]:
        return [x for x in self.err.splitlines() if x.strip()]


def call_cli(argv: list[str]) -> Outcome:
    """``pubench argv`` in this process: its exit status (argparse's SystemExit included),
    stdout and stderr. Anything else it raises propagates: a traceback is a failed case."""
    from pubench.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), time_limit():
        try:
            rc = main(argv)
        except SystemExit as e:
            rc = e.code
    return Outcome(rc, out.getvalue(), err.getvalue())


def assert_clean_end(o: Outcome, argv: list[str], bad_input_lines: int | tuple[int, ...] = 1) -> None:
    """Success, or exit 2 with ``bad_input_lines`` lines (``pubench: error: ...`` or argparse's)
    on stderr; a run whose jobs failed may exit 1, with its own lines. Never a traceback."""
    shown = f"pubench {' '.join(map(repr, argv))[:300]}"
    assert "Traceback" not in o.err and "Traceback" not in o.out, f"{shown}: a traceback\n{o.err[-3000:]}"
    assert o.rc in (0, 1, 2), f"{shown}: exit {o.rc!r}\n{o.err[-2000:]}"
    if o.rc == 2:
        errors = [x for x in o.lines if "error:" in x]
        allowed = bad_input_lines if isinstance(bad_input_lines, tuple) else (bad_input_lines,)
        assert len(errors) in allowed, f"{shown}: exit 2 with {len(errors)} error lines:\n{o.err[-2000:]}"
        assert all(len(x) < 1500 for x in errors), f"{shown}: an error line of {max(map(len, errors))} characters"


class CaseCounter:
    """How many cases a test tried: the session prints the figures (``pubench reliability``)."""

    def __init__(self, name: str):
        self.name, self.cases = name, 0

    def __call__(self) -> None:
        self.cases += 1

    def record(self) -> None:
        from tests.conftest import record_reliability

        record_reliability("fuzz", self.name, {"profile": PROFILE, "cases": self.cases})


# ---- values YAML can say (the specs' and --set's generators) ------------------------------
class Tagged:
    """A scalar with an explicit tag (``!!int abc``, ``!!python/object/apply:os.system ...``)."""

    def __init__(self, tag: str, text: str):
        self.tag, self.text = tag, text


class FuzzDumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):
    pass


FuzzDumper.add_representer(Tagged, lambda d, v: d.represent_scalar(v.tag, v.text))

TAGS = ["tag:yaml.org,2002:" + t for t in ("int", "float", "bool", "null", "str", "timestamp", "binary", "merge",
                                            "value", "python/object/apply:os.system", "python/name:os.system",
                                            "python/tuple")] + ["!custom", "!include"]
ODD_TEXT = ["", " ", "~", "null", "yes", "No", "0x1F", "1_000", "1e3", "2026-02-30", "*|*", "|", "a|b|c", "..",
            "\u202eevil", "\U0001F600", "e\u0301", "\u00a0", "tab\there", "new\nline", "NUL\x00", "\ufeffbom",
            "{{ jinja }}", "${HOME}", "../../etc/passwd", "%s%n", "'quoted'", "#comment", "- dash"]
NUMBERS = [-1, 0, 1, -(10**12), 10**12, 10**300, 2**63, 1001, 999999999, 1e-300, -0.0, 1e308, 0.5, -2.5]

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**40), 10**40), st.floats(), st.sampled_from(NUMBERS),
    st.text(max_size=20), st.sampled_from(ODD_TEXT), st.builds(lambda: "x" * 5000),
    st.dates(min_value=datetime.date(1, 1, 1)), st.datetimes(), st.binary(max_size=6),
    st.sets(st.integers(0, 3), max_size=3),
    st.builds(Tagged, st.sampled_from(TAGS), st.one_of(st.sampled_from(["abc", "1", "x", "2026-02-30", "ls", ""]),
                                                       st.text(max_size=8))),
)
keys = st.one_of(st.text(max_size=12), st.sampled_from(ODD_TEXT[:20]), st.integers(-3, 3), st.none(), st.booleans())
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
                      max_leaves=6)


def laughs(levels: int, width: int) -> list:
    """A list of ``width`` aliases of a list of ``width`` aliases ... (``levels`` deep): a few
    lines of YAML, ``width ** levels`` values once expanded."""
    node: list = ["lol"] * width
    for _ in range(levels):
        node = [node] * width
    return node
