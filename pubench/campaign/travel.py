"""What a campaign carries to a machine that has neither the data sets nor the git history
(a GPU machine of this project gets a copy of the working tree, at most 64 MiB in all, and
``carry`` brings ignored folders within that limit): a folder, ``.campaign/`` by default.

:func:`pack` writes into it, here:

* each data set the queue still needs, as its files' uncompressed bytes compressed with xz
  (preset 9e; MNIST's four files 9.2 MB, Fashion-MNIST's 26.4 MB, against 11.6 and 30.9 MB
  as gzip; ``data.json`` lists them with their SHA-256), in queue order while they fit
  the room the working tree leaves;
* ``source.json``: the commit of the code (``git rev-parse HEAD``) and a fingerprint of the
  code and specs (:data:`pubench.store.provenance.CODE_PATHS`, every file as it travels).

:func:`unpack`, there, writes the data files a job needs into the data root (checked
against their SHA-256), and :func:`source_env` gives the environment under which the
records name that commit (``PUBENCH_SOURCE_SHA``; ``PUBENCH_SOURCE_DIRTY=1`` when the
code's fingerprint there differs from the one packed).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import lzma
import os
from pathlib import Path
from typing import Callable

DEFAULT_FOLDER = ".campaign"
#: what a GPU machine of this project takes of the working tree, carried folders included
TRAVEL_LIMIT = 64 * 2**20
XZ_PRESET = 9 | lzma.PRESET_EXTREME


def _slug(rel: str) -> str:
    return rel.replace("/", "--")


def pack(datasets: list[str], folder: Path, data_root: Path, room: int | None = None,
         say: Callable[[str], None] = print) -> dict:
    """Pack ``datasets`` (in order; those that do not fit ``room`` bytes are left out and said)
    and the source stamp into ``folder``; the manifest written (``data.json``)."""
    from pubench.data import DATASETS

    folder.mkdir(parents=True, exist_ok=True)
    manifest = _read_manifest(folder)
    used = sum(f["packed_bytes"] for f in manifest["files"] if f["dataset"] in datasets)
    for name in datasets:
        ds = DATASETS.get(name)
        files = [f for split in getattr(ds, "prepare_splits", ()) for f in ds.split_files(split)]
        if not files or any(f.folder for f in files):
            say(f"  {name}: not packable (no files of its own, or a folder of images): left out")
            continue
        have = {f["rel"] for f in manifest["files"] if f["dataset"] == name}
        for spec in files:
            rel = spec.alternatives[0] if spec.path.endswith(".gz") and spec.alternatives else spec.path
            if rel in have:
                continue
            src = spec.find(data_root)
            if src is None:
                raise FileNotFoundError(f"{name}: {data_root / spec.path} is missing: `pubench prepare {name}` first")
            raw = gzip.decompress(src.read_bytes()) if src.suffix == ".gz" else src.read_bytes()
            packed = lzma.compress(raw, preset=XZ_PRESET)
            if room is not None and used + len(packed) > room:
                say(f"  {name}: left out: {rel} would take the carried files to "
                    f"{(used + len(packed)) / 2**20:.1f} MiB, over the {room / 2**20:.1f} MiB left")
                break
            (folder / f"{_slug(rel)}.xz").write_bytes(packed)
            manifest["files"].append({"dataset": name, "rel": rel, "sha256": hashlib.sha256(raw).hexdigest(),
                                      "bytes": len(raw), "packed": f"{_slug(rel)}.xz", "packed_bytes": len(packed)})
            used += len(packed)
            say(f"  {name}: {rel}: {len(raw) / 2**20:.1f} MiB -> {len(packed) / 2**20:.1f} MiB")
    (folder / "data.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return manifest


def _read_manifest(folder: Path) -> dict:
    try:
        m = json.loads((folder / "data.json").read_text())
        m["files"] = [f for f in m["files"] if (folder / f["packed"]).is_file()]
        return m
    except (OSError, ValueError, KeyError, TypeError):
        return {"files": []}


def unpack(folder: Path, data_root: Path, datasets: set[str], say: Callable[[str], None] = print) -> list[str]:
    """Write the packed files of ``datasets`` that the data root lacks; the data sets written."""
    from pubench.utils.io import atomic_write

    done = []
    for f in _read_manifest(folder)["files"]:
        target = data_root / f["rel"]
        if f["dataset"] not in datasets or target.is_file() or Path(f"{target}.gz").is_file():
            continue
        raw = lzma.decompress((folder / f["packed"]).read_bytes())
        if hashlib.sha256(raw).hexdigest() != f["sha256"]:
            raise ValueError(f"{folder / f['packed']}: its content is not the file packed (SHA-256 differs)")
        atomic_write(target, lambda out, raw=raw: out.write(raw), binary=True)
        say(f"  {f['dataset']}: {f['rel']} unpacked from {folder.name}/ ({len(raw) / 2**20:.1f} MiB)")
        done.append(f["dataset"])
    return sorted(set(done))


# ---- the commit of the code -------------------------------------------------------------
def code_fingerprint(root: Path) -> str:
    """SHA-256 over the path and content of every file under the code paths (``__pycache__``,
    ``*.pyc`` and ``*.egg-info``, which do not travel, left out)."""
    from pubench.store.provenance import CODE_PATHS

    h = hashlib.sha256()
    for top in CODE_PATHS:
        base = root / top
        paths = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file()) if base.is_dir() else []
        for p in paths:
            rel = p.relative_to(root).as_posix()
            if "__pycache__" in p.parts or p.suffix == ".pyc" or any(x.endswith(".egg-info") for x in p.parts):
                continue
            h.update(rel.encode() + b"\0" + hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def stamp_source(folder: Path, root: Path) -> dict:
    """Write ``source.json``: the commit and the code's fingerprint (and whether the code had
    uncommitted changes when packed)."""
    from pubench.store.provenance import code_changes, provenance

    prov = provenance()
    stamp = {"git_sha": prov["git_sha"], "code_changes": code_changes(), "fingerprint": code_fingerprint(root)}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "source.json").write_text(json.dumps(stamp, indent=1, sort_keys=True) + "\n")
    return stamp


def source_env(folder: Path, root: Path) -> dict[str, str]:
    """The environment that makes records name the packed commit where git is not there (none
    when there is no stamp or when git answers here)."""
    from pubench.store.provenance import provenance

    if provenance()["git_sha"] is not None:
        return {}
    try:
        stamp = json.loads((folder / "source.json").read_text())
    except (OSError, ValueError):
        return {}
    if not stamp.get("git_sha"):
        return {}
    same = not stamp.get("code_changes") and stamp.get("fingerprint") == code_fingerprint(root)
    return {"PUBENCH_SOURCE_SHA": stamp["git_sha"], "PUBENCH_SOURCE_DIRTY": "0" if same else "1"}


def tracked_bytes(root: Path) -> int | None:
    """The size of the files git tracks (what travels besides the carried folders)."""
    import subprocess

    out = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, timeout=60)
    if out.returncode != 0:
        return None
    return sum(os.path.getsize(root / p) for p in out.stdout.decode().split("\0") if p and (root / p).is_file())
