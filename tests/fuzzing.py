"""What the generated-input tests share (issue 55, item 3): the budgets, the outcome every
case must end in, and running the CLI in this process.

Every generated-input test runs twice, once per budget (the ``fuzz`` fixture, tests/conftest.py):

* ``fast`` (``make test``): its own few dozen cases, a few hundred in all, from a seed fixed by
  the test's name: every run tries the same cases, so a failure is there again on the rerun;
* ``thorough`` (``make test-all``, the nightly; marked ``fuzz`` and ``slow`` by tests/markers.py):
  :data:`THOROUGH_FACTOR` times as many, thousands in all, from the session's seed:
  ``PUBENCH_FUZZ_SEED`` when set (the nightly sets the night's date), else 55 (CI and
  ``make test-all`` try the same cases on every push; a random seed per push failed CI on crashes
  the push did not cause).

A failing case is shrunk and printed with the blob that replays it (``@reproduce_failure(...)``,
``print_blob``) and a line with the seed and the command that tries the same cases again;
nothing is written to a ``.hypothesis`` folder. ``PUBENCH_FUZZ_SHRINK=0`` reports the first
failure as found (shrinking a spec case can take minutes).
A generated case ends in success, or in one line and exit 2 (the CLI), or in a
:class:`~pubench.errors.PubenchError` with one line (library calls); never a traceback, a
hang (each case has :data:`CASE_SECONDS` of CPU time) or a lost valid record.
"""

from __future__ import annotations

import contextlib
import datetime
import io
import os
import signal
import zlib
from dataclasses import dataclass

import yaml
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

BUDGETS = ("fast", "thorough")
THOROUGH_FACTOR = 10
#: one case's limit in CPU seconds (the slowest take about a second) and, for a case that waits
#: forever instead, in wall-clock seconds (a niced test on the busy 2 cores gets a tenth of one)
CASE_SECONDS = 60
CASE_WALL_SECONDS = 900
#: the thorough budget's seed for this session (the fast budget's is 0)
SESSION_SEED = int(os.environ.get("PUBENCH_FUZZ_SEED") or 55) % 2**32  # 55: tests/conftest.py FUZZ_CI_SEED
SHRINK = os.environ.get("PUBENCH_FUZZ_SHRINK", "1") != "0"
#: returned by a case that turned out to have nothing to try (not counted)
NOT_A_CASE = object()


class Fuzz:
    """One generated-input test at one budget: :meth:`run` tries its cases and counts them."""

    def __init__(self, budget: str, nodeid: str):
        if budget not in BUDGETS:
            raise ValueError(f"budget {budget!r}: expected one of {BUDGETS}")
        self.budget, self.nodeid, self.cases = budget, nodeid, 0
        self.session_seed = SESSION_SEED if budget == "thorough" else 0
        name = nodeid.split("[")[0]
        self.seed = (zlib.crc32(name.encode()) + self.session_seed) % 2**32

    def examples(self, fast: int) -> int:
        return fast * (THOROUGH_FACTOR if self.budget == "thorough" else 1)

    def replay(self) -> str:
        env = f"PUBENCH_FUZZ_SEED={self.session_seed} " if self.budget == "thorough" else ""
        return (f"generated inputs: {self.budget} budget, seed {self.seed}; the same cases again: "
                f"{env}python -m pytest -p no:randomly -n 0 -m '' '{self.nodeid}'")

    def run(self, fast: int, case, *args) -> None:
        """``case(*args, data)`` on ``fast`` generated cases (x :data:`THOROUGH_FACTOR` at the
        thorough budget), from this test's seed; a failure carries the line that replays it."""
        # no explain phase: on Python < 3.12 it traces every line of the replays after a failure (10-50x
        # slower), and a traced replay of a slow case then passes the CPU limit: a flaky "hang"
        phases = [p for p in Phase if p is not Phase.explain and (SHRINK or p is not Phase.shrink)]

        @settings(max_examples=self.examples(fast), deadline=None, database=None, print_blob=True, phases=phases,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                         HealthCheck.filter_too_much, HealthCheck.large_base_example])
        @seed(self.seed)
        @given(data=st.data())
        def cases(data):
            if case(*args, data) is not NOT_A_CASE:
                self.cases += 1

        try:
            cases()
        except BaseException as e:
            e.add_note(self.replay())
            print(self.replay())
            raise

    def record(self) -> None:
        from tests.conftest import record_reliability

        record_reliability("fuzz", self.nodeid, {"budget": self.budget, "cases": self.cases,
                                                 "seed": self.session_seed})


class Hang(Exception):
    """A generated case ran past :data:`CASE_SECONDS`."""


@contextlib.contextmanager
def time_limit(seconds: float = CASE_SECONDS, wall: float = CASE_WALL_SECONDS):
    """Raise :class:`Hang` in the block after ``seconds`` of this process's CPU time (a loop that
    never ends; CPU time, so that the load of the machine does not count) or ``wall`` seconds
    (a wait that never ends); again every second after that, since an exception raised inside a
    garbage-collector callback is only printed, and once more when the block ends, so a hang
    can never pass."""
    fired = []

    def expire(signum, frame):
        fired.append(signum)
        raise Hang(f"the case ran for more than {seconds} CPU seconds" if signum == signal.SIGPROF
                   else f"the case took more than {wall} s")

    timers = ((signal.ITIMER_PROF, signal.SIGPROF, seconds), (signal.ITIMER_REAL, signal.SIGALRM, wall))
    previous = {sig: signal.signal(sig, expire) for _, sig, _ in timers}
    for timer, _, after in timers:
        signal.setitimer(timer, after, 1.0)
    try:
        yield
    finally:
        for timer, sig, _ in timers:
            signal.setitimer(timer, 0)
            signal.signal(sig, previous[sig])
    if fired:
        raise Hang(f"the case ran for more than {seconds} CPU seconds or {wall} s")


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
    # `log` prints what a failure record holds: its job's own traceback, on stdout
    in_out = "Traceback" in o.out and argv[:1] != ["log"]
    assert "Traceback" not in o.err and not in_out, f"{shown}: a traceback\n{o.err[-3000:]}"
    assert o.rc in (0, 1, 2), f"{shown}: exit {o.rc!r}\n{o.err[-2000:]}"
    if o.rc == 2:
        errors = [x for x in o.lines if "error:" in x]
        allowed = bad_input_lines if isinstance(bad_input_lines, tuple) else (bad_input_lines,)
        assert len(errors) in allowed, f"{shown}: exit 2 with {len(errors)} error lines:\n{o.err[-2000:]}"
        assert all(len(x) < 1500 for x in errors), f"{shown}: an error line of {max(map(len, errors))} characters"


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


# ---- mutations of a parsed YAML document (a spec, an overlay file) ---------------------------
def _slots(node, out: list, seen: set | None = None) -> list:
    """(container, key) of every value inside ``node``, in document order; a container met
    before (an alias, or one that holds itself) is not entered again."""
    seen = set() if seen is None else seen
    if isinstance(node, (dict, list)):
        if id(node) in seen:
            return out
        seen.add(id(node))
    if isinstance(node, dict):
        for k in list(node):
            out.append((node, k))
            _slots(node[k], out, seen)
    elif isinstance(node, list):
        for i in range(len(node)):
            out.append((node, i))
            _slots(node[i], out, seen)
    return out


def _typo(text: str, draw) -> str:
    if not text:
        return "x"
    i = draw(st.integers(0, len(text) - 1))
    how = draw(st.sampled_from(["drop", "double", "swap", "upper", "lookalike", "space"]))
    if how == "drop":
        return text[:i] + text[i + 1:]
    if how == "double":
        return text[:i] + text[i] + text[i:]
    if how == "swap" and len(text) > 1:
        i = min(i, len(text) - 2)
        return text[:i] + text[i + 1] + text[i] + text[i + 2:]
    if how == "upper":
        return text.upper() if text != text.upper() else text.lower()
    if how == "lookalike":
        return text.replace("a", "\u0430", 1).replace("o", "\u03bf", 1) if any(c in text for c in "ao") else text + "\u200b"
    return text + " "


def _out_of_range(value, draw):
    if isinstance(value, bool):
        return draw(st.sampled_from(["true", 1, None]))
    if isinstance(value, (int, float)):
        return draw(st.sampled_from(NUMBERS + [float("nan"), float("inf"), -float("inf")]))
    if isinstance(value, str):
        return draw(st.sampled_from(ODD_TEXT + [value * 200, value + "\u0301", value.strip() + "\n"]))
    if isinstance(value, list):
        return draw(st.sampled_from([[], value + value, value[:1] * 3, [None]]))
    if isinstance(value, dict):
        return draw(st.sampled_from([{}, None, [value]]))
    return None


MUTATIONS = ("drop", "rename", "retype", "range", "alias", "recursive", "laughs", "tag")


def mutate(data: dict, draw) -> list[str]:
    """Apply 1-3 mutations to ``data`` in place; returns what was done (for the failure report)."""
    done = []
    for _ in range(draw(st.integers(1, 3))):
        slots = _slots(data, [])
        if not slots:
            break
        # a key name first, then one of its places: `format` or `seeds` (a few places) are hit as
        # often as `row` (hundreds of reported cells)
        names = sorted({k if isinstance(k, str) else "[item]" for _, k in slots})
        name = draw(st.sampled_from(names))
        places = [(c, k) for c, k in slots if (k if isinstance(k, str) else "[item]") == name]
        container, key = places[draw(st.integers(0, len(places) - 1))]
        op = draw(st.sampled_from(MUTATIONS))
        where = f"{op} at {key!r}"
        if op == "drop":
            del container[key]
        elif op == "rename" and isinstance(container, dict):
            siblings = [k for _, k in slots if isinstance(k, str)][:50] or ["id"]
            new = draw(st.one_of(st.just(_typo(str(key), draw)), keys, st.sampled_from(siblings)))
            value = container.pop(key)
            container[new] = value
            where += f" -> {new!r}"
        elif op == "range":
            container[key] = _out_of_range(container[key], draw)
        elif op == "alias":  # the same object twice: the dumper writes an anchor and an alias
            other_container, other_key = slots[draw(st.integers(0, len(slots) - 1))]
            container[key] = other_container[other_key]
        elif op == "recursive" and isinstance(container, (dict, list)):
            container[key] = container
        elif op == "laughs":
            container[key] = laughs(draw(st.integers(1, 9)), draw(st.integers(2, 10)))
        elif op == "tag":
            container[key] = draw(st.builds(Tagged, st.sampled_from(TAGS), st.text(max_size=8)))
        else:
            container[key] = draw(values)
        done.append(where)
    return done


def dump(data: dict, draw) -> str:
    text = yaml.dump(data, Dumper=FuzzDumper, sort_keys=False, allow_unicode=draw(st.booleans()),
                     default_flow_style=draw(st.sampled_from([False, None, True])), width=draw(st.sampled_from([80, 4096])))
    how = draw(st.sampled_from(["as is"] * 6 + ["truncate", "insert", "drop line", "tab"]))
    if how == "truncate":
        text = text[:draw(st.integers(0, len(text)))]
    elif how == "insert":
        i = draw(st.integers(0, len(text)))
        text = text[:i] + draw(st.text(max_size=5) | st.sampled_from([":", "- ", "{", "[", "&a ", "*a", "!!", "\t",
                                                                      "? ", "<<: *a\n", "%YAML 1.1\n", "---\n"])) + text[i:]
    elif how == "drop line":
        lines = text.splitlines(keepends=True)
        if lines:
            del lines[draw(st.integers(0, len(lines) - 1))]
        text = "".join(lines)
    elif how == "tab":
        text = text.replace("\n  ", "\n\t", 1)
    return text
