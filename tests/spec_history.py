"""What git says about the committed specs and records: when a spec's first results came (records
pruned since included), every committed version of a spec file, the commit that introduced a
line of it and which commits contain which. Read by tests/registry/test_claims_fixed.py.

Each read is one git process for the whole history (``git log`` with file names, ``git cat-file
--batch`` for many versions at once), kept per repository: the guard over every committed spec
costs a few seconds, not one process per commit."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path

import yaml

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def git_env() -> dict[str, str]:
    """The environment without what would point git at another repository (a hook's GIT_DIR)."""
    import os

    return {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")}


@dataclass(frozen=True)
class Commit:
    sha: str
    authored: str  # YYYY-MM-DD, in the author's time zone: when the change was written
    committed: str  # YYYY-MM-DD, in the committer's time zone: when it entered the history


#: the parts of a spec the guard reads: its claims and regime blocks, and its tiers' more_seeds
CLAIMS_AND_REGIME, TIERS = ("claims", "regime"), ("tiers",)


@lru_cache(maxsize=4096)
def spec_parts(text: str | None, keys: tuple[str, ...] = CLAIMS_AND_REGIME) -> dict | None:
    """The top-level ``keys`` of a spec file's text, parsed (None for no file). Only those sections are
    parsed: a spec's whole YAML costs about 0.2 s in PyYAML's constructor, its claims a fraction; a section
    that needs another one (an alias of an anchor elsewhere) is parsed with the whole file."""
    if text is None:
        return None
    kept, keep = [], False
    for line in text.splitlines(keepends=True):
        if line[:1].isalpha() or line[:1] == "_":  # a top-level key opens a section
            keep = line.split(":", 1)[0].strip() in keys
        if keep:
            kept.append(line)
    try:
        data = yaml.load("".join(kept), Loader=_LOADER) or {}
    except yaml.YAMLError:
        data = yaml.load(text, Loader=_LOADER) or {}
    return {k: v for k, v in data.items() if k in keys} if isinstance(data, dict) else {}


@dataclass(frozen=True)
class Version:
    """One committed version of a file: the commit, the file's text there and at the commit's first
    parent (None: absent there, or a root commit)."""

    commit: Commit
    text: str | None
    before_text: str | None

    def data(self, keys: tuple[str, ...] = CLAIMS_AND_REGIME) -> dict | None:
        return spec_parts(self.text, keys)

    def before(self, keys: tuple[str, ...] = CLAIMS_AND_REGIME) -> dict | None:
        return spec_parts(self.before_text, keys)


@dataclass(frozen=True)
class RecordAdded:
    """A record file as a commit added it: results/<tier>/<spec id>/<name>."""

    commit: Commit
    path: str
    tier: str
    spec_id: str
    name: str


class History:
    """The git history of the repository at ``root`` (:func:`history` shares one per root)."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self._versions: dict[str, tuple[Version, ...]] = {}

    def git(self, *args: str, stdin: bytes | None = None) -> bytes:
        return subprocess.run(["git", *args], cwd=self.root, input=stdin, capture_output=True, check=True,
                              env=git_env()).stdout

    @cached_property
    def complete(self) -> bool:
        """Whether the whole history is here (a shallow clone cannot say when records came)."""
        try:
            return self.git("rev-parse", "--is-shallow-repository").decode().strip() == "false"
        except (OSError, subprocess.CalledProcessError):
            return False

    @cached_property
    def commits(self) -> dict[str, Commit]:
        out = self.git("log", "--all", "--format=%H %ad %cd", "--date=short").decode()
        return {sha: Commit(sha, a, c) for sha, a, c in (line.split() for line in out.splitlines() if line)}

    @cached_property
    def records_added(self) -> list[RecordAdded]:
        """Every ok record a commit added under results/<tier>/<spec>/ (pruned since or not), oldest
        first (parents before children)."""
        out = self.git("log", "--topo-order", "--reverse", "--diff-filter=A", "--no-renames", "--format=%x00%H",
                       "--name-only", "--", "results").decode()
        added = []
        for chunk in out.split("\0")[1:]:
            sha, *names = chunk.split("\n")
            for path in names:
                parts = path.split("/")
                if len(parts) == 4 and path.endswith(".json") and not path.endswith(".failed.json"):
                    added.append(RecordAdded(self.commits[sha], path, parts[1], parts[2], parts[3]))
        return added

    @cached_property
    def records_added_by_folder(self) -> dict[tuple[str, str], list[RecordAdded]]:
        """:attr:`records_added` by (tier, spec id)."""
        out: dict[tuple[str, str], list[RecordAdded]] = {}
        for r in self.records_added:
            out.setdefault((r.tier, r.spec_id), []).append(r)
        return out

    def first_results(self) -> dict[tuple[str, str], Commit]:
        """(tier, spec id) -> the first commit that added a record of that spec at that tier."""
        first: dict[tuple[str, str], Commit] = {}
        for r in self.records_added:
            first.setdefault((r.tier, r.spec_id), r.commit)
        return first

    def show(self, commit: str, path: str) -> str | None:
        return self.read_many([(commit, path)])[0]

    def read_many(self, wanted: list[tuple[str, str]]) -> list[str | None]:
        """The text of the file at each (commit, path); None where the commit has no such file. One git
        process for them all."""
        if not wanted:
            return []
        out = self.git("cat-file", "--batch", stdin="".join(f"{c}:{p}\n" for c, p in wanted).encode())
        texts, at = [], 0
        for _ in wanted:
            end = out.index(b"\n", at)
            header = out[at:end].split()
            if header[-1] == b"missing":
                texts.append(None)
                at = end + 1
                continue
            size = int(header[2])
            texts.append(out[end + 1:end + 1 + size].decode())
            at = end + 1 + size + 1
        return texts

    def versions(self, path: str) -> tuple[Version, ...]:
        """Every commit that changed ``path``, oldest first (parents before children), with the file there
        and at the commit's first parent."""
        if path not in self._versions:
            self.read_versions([path])
        return self._versions[path]

    def read_versions(self, paths: list[str]) -> None:
        """:meth:`versions` of every path in ``paths``, read in two git processes for them all."""
        paths = [p for p in dict.fromkeys(paths) if p not in self._versions]
        if not paths:
            return
        out = self.git("log", "--topo-order", "--reverse", "--no-renames", "--format=%x00%H", "--name-only", "--",
                       *paths).decode()
        touched: dict[str, list[str]] = {p: [] for p in paths}
        for chunk in out.split("\0")[1:]:
            sha, *names = chunk.split("\n")
            for name in names:
                if name in touched:
                    touched[name].append(sha)
        wanted = [(sha, p) for p in paths for sha in touched[p]]
        files = iter(self.read_many(wanted + [(f"{sha}^", p) for sha, p in wanted]))
        now = [next(files) for _ in wanted]
        for (sha, p), text, before in zip(wanted, now, files):
            self._versions.setdefault(p, []).append(Version(self.commits[sha], text, before))
        for p in paths:
            self._versions[p] = tuple(self._versions.get(p, ()))

    @lru_cache(maxsize=None)
    def contains(self, descendant: str, ancestor: str) -> bool | None:
        """Whether commit ``descendant`` has ``ancestor`` in its history (None: ``descendant`` is no
        commit of this repository)."""
        if descendant not in self.commits:
            return None
        done = subprocess.run(["git", "merge-base", "--is-ancestor", ancestor, descendant], cwd=self.root,
                              capture_output=True, env=git_env())
        return done.returncode == 0

    @cached_property
    def tracked_results(self) -> dict[tuple[str, str], list[str]]:
        """(tier, spec id) -> the names of the files git tracks in results/<tier>/<spec id>/ (one read for all)."""
        out: dict[tuple[str, str], list[str]] = {}
        for path in self.git("ls-files", "-z", "--", "results").decode().split("\0"):
            parts = path.split("/")
            if len(parts) == 4:
                out.setdefault((parts[1], parts[2]), []).append(parts[3])
        return out


@lru_cache(maxsize=None)
def history(root: Path) -> History:
    return History(root)
