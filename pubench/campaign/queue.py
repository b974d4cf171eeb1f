"""A campaign's queue: the ordered cells it runs, read from a YAML file committed with the
code (``campaigns/paper-gpu.yaml``)::

    tier: paper
    device: cuda                  # what projected_min is on
    projected_on: NVIDIA H200     # the device of the figures projected_min comes from
    entries:
      - spec: table1-punce
        only: ["MNIST n_P=1k|*"]  # row|col globs, as `pubench run --only`
        seeds: 5                  # optional: default the tier's
        why: "completes puNCE's caption claim on MNIST and its regime column"
        projected_min: 85.4       # the entry's jobs one at a time on `device`, in minutes

The order is the order of running: a campaign starts the first entry's jobs first and only
takes a later one's when nothing earlier fits the time left. ``projected_min`` says what
the order was chosen by; a campaign projects every job itself
(:mod:`pubench.campaign.plan`) and reads ``projected_min`` only for jobs it has no figure
for (then each of the entry's jobs is its share). A test holds the committed queue's
``projected_min`` to what the committed figures give.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from pubench.errors import PubenchError

QUEUE_KEYS = {"tier", "device", "projected_on", "entries"}
ENTRY_KEYS = {"spec", "only", "seeds", "why", "projected_min"}


class QueueError(PubenchError, ValueError):
    """A queue file that cannot be read: ``file: where: problem``."""


@dataclass(frozen=True)
class Entry:
    spec: str
    only: tuple[str, ...]
    why: str
    seeds: int | None = None
    projected_min: float | None = None

    @property
    def label(self) -> str:
        return f"{self.spec} {' '.join(self.only) or '(every cell)'}"


@dataclass(frozen=True)
class Queue:
    path: Path
    tier: str
    device: str
    entries: tuple[Entry, ...]
    projected_on: str | None = None


def default_path() -> Path:
    from pubench.paths import project_root

    return project_root() / "campaigns" / "paper-gpu.yaml"


def load(path: str | Path) -> Queue:
    """The queue of ``path``; a :class:`QueueError` naming the key when it is malformed."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as e:
        raise QueueError(f"{path}: cannot read the queue ({e.strerror or e})") from None
    except yaml.YAMLError as e:
        raise QueueError(f"{path}: not YAML ({' '.join(str(e).split())[:200]})") from None

    def fail(where: str, problem: str):
        raise QueueError(f"{path}: {where}: {problem}")

    if not isinstance(data, dict):
        fail("top level", "a mapping with tier, device and entries")
    if unknown := set(data) - QUEUE_KEYS:
        fail(sorted(unknown)[0], f"unknown key (one of {', '.join(sorted(QUEUE_KEYS))})")
    if not isinstance(data.get("entries"), list) or not data["entries"]:
        fail("entries", "a list of at least one entry")
    entries = []
    for i, e in enumerate(data["entries"]):
        where = f"entries[{i}]"
        if not isinstance(e, dict) or not isinstance(e.get("spec"), str):
            fail(where, "a mapping with spec (a table or figure id)")
        if unknown := set(e) - ENTRY_KEYS:
            fail(f"{where}.{sorted(unknown)[0]}", f"unknown key (one of {', '.join(sorted(ENTRY_KEYS))})")
        only = e.get("only") or []
        if isinstance(only, str):
            only = [only]
        if not all(isinstance(o, str) and "|" in o for o in only):
            fail(f"{where}.only", "row|col globs")
        if not isinstance(e.get("why"), str) or not e["why"].strip():
            fail(f"{where}.why", "say why the entry is where it is in the order")
        seeds, minutes = e.get("seeds"), e.get("projected_min")
        if seeds is not None and (isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1):
            fail(f"{where}.seeds", f"an integer >= 1, got {seeds!r}")
        if minutes is not None and (isinstance(minutes, bool) or not isinstance(minutes, (int, float)) or minutes < 0):
            fail(f"{where}.projected_min", f"minutes >= 0, got {minutes!r}")
        entries.append(Entry(e["spec"], tuple(only), " ".join(e["why"].split()), seeds,
                             None if minutes is None else float(minutes)))
    tier, device = data.get("tier", "paper"), data.get("device", "cuda")
    if device not in ("cpu", "cuda"):
        fail("device", f"cpu or cuda, got {device!r}")
    return Queue(path, str(tier), device, tuple(entries), data.get("projected_on"))
