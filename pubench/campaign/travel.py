"""What a campaign carries to a machine that has neither the data sets nor the git history
(a GPU machine of this project gets a copy of the working tree, at most 64 MiB in all counted
in 4-KiB blocks, and ``carry`` brings ignored folders within that limit; ``../shared`` does
not travel): a folder, ``.campaign/`` by default.

:func:`pack` writes into it, here:

* each data set the queue still needs, as its files' uncompressed bytes compressed with xz
  (preset 9e; MNIST's four files 9.2 MB, Fashion-MNIST's 26.4 MB, against 11.6 and 30.9 MB
  as gzip; ``data.json`` lists them with their SHA-256), in queue order, **each whole or not
  at all**: a data set whose files do not all fit the room the working tree leaves is left
  out, said, and its jobs wait for a machine that has it (never a train split without its
  test split);
* the checkpoints of the queue's stopped jobs (``checkpoints/<job id>/``: a window's archive
  brings them back, ``campaign import`` puts them in the store, and the next window resumes
  from them: :func:`pack_checkpoints`, :func:`restore_checkpoints`);
* ``source.json``: the commit of the code (``git rev-parse HEAD``) and a fingerprint of the
  code and specs (:data:`pubench.store.provenance.CODE_PATHS`, every file as it travels).

:func:`unpack`, there, writes the data files a job needs into the data root (checked
against their SHA-256; only data sets carried whole), and :func:`source_env` gives the
environment under which the records name that commit (``PUBENCH_SOURCE_SHA``;
``PUBENCH_SOURCE_DIRTY=1`` when the code's fingerprint there differs from the one packed).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import lzma
import re
from pathlib import Path
from typing import Callable

DEFAULT_FOLDER = ".campaign"
#: what a GPU machine of this project takes of the working tree, carried folders included
TRAVEL_LIMIT = 64 * 2**20  # pubench.campaign.lease's
XZ_PRESET = 9 | lzma.PRESET_EXTREME


def _slug(rel: str) -> str:
    return rel.replace("/", "--")


def files_of(name: str) -> list | None:
    """The files data set ``name`` is packed as (its splits' files; None: it cannot be packed,
    having no files of its own or a folder of images)."""
    from pubench.data import DATASETS

    if name not in DATASETS:
        return None
    ds = DATASETS.get(name)
    files = [f for split in getattr(ds, "prepare_splits", ()) for f in ds.split_files(split)]
    return None if not files or any(f.folder for f in files) else files


def _rel(spec) -> str:
    return spec.alternatives[0] if spec.path.endswith(".gz") and spec.alternatives else spec.path


def missing(datasets: list[str], data_root: Path) -> dict[str, list[str]]:
    """Data set -> the files of it the data root lacks (packable data sets only)."""
    out = {}
    for name in datasets:
        files = files_of(name)
        lacking = [str(data_root / f.path) for f in files or () if f.find(data_root) is None]
        if lacking:
            out[name] = lacking
    return out


def pack(datasets: list[str], folder: Path, data_root: Path, room: int | None = None,
         say: Callable[[str], None] = print, preset: int | None = None) -> dict:
    """Pack ``datasets`` (in order) into ``folder``, each whole or not at all: a data set whose
    files do not all fit ``room`` bytes (counted in the travel limit's blocks) is left out and
    said, and nothing of it is written. The manifest written (``data.json``; ``datasets``: the
    data sets it holds whole). A file the data root lacks raises FileNotFoundError before
    anything is written (:func:`missing` says which first)."""
    from pubench.campaign.lease import BLOCK

    lacking = missing(datasets, data_root)
    if lacking:
        name, files = next(iter(lacking.items()))
        raise FileNotFoundError(f"{name}: {files[0]} is missing: `pubench prepare {name} --from DIR` first")
    manifest = _read_manifest(folder)
    blocks = lambda n: -(-n // BLOCK) * BLOCK  # noqa: E731
    used = sum(blocks(f["packed_bytes"]) for f in manifest["files"]) + sum(
        blocks(p.stat().st_size) for p in (folder / CHECKPOINTS).rglob("*") if p.is_file())
    for name in datasets:
        files = files_of(name)
        if files is None:
            say(f"  {name}: not packable (no files of its own, or a folder of images): left out")
            continue
        have = {f["rel"] for f in manifest["files"] if f["dataset"] == name}
        staged = []
        for spec in files:
            rel = _rel(spec)
            if rel in have:
                continue
            src = spec.find(data_root)
            raw = gzip.decompress(src.read_bytes()) if src.suffix == ".gz" else src.read_bytes()
            staged.append((rel, raw, lzma.compress(raw, preset=XZ_PRESET if preset is None else preset)))
            size = used + sum(blocks(len(x[2])) for x in staged)
            if room is not None and size > room:
                say(f"  {name}: left out whole: with {rel} its files take the carried files to {size / 2**20:.1f} "
                    f"MiB, over the {room / 2**20:.1f} MiB of room (a data set travels whole or not at all; its "
                    "jobs wait for a machine that has it)")
                manifest["files"] = [f for f in manifest["files"] if f["dataset"] != name]
                for f in [f for f in _read_manifest(folder)["files"] if f["dataset"] == name]:
                    (folder / f["packed"]).unlink(missing_ok=True)
                staged = None
                break
        if staged is None:
            continue
        folder.mkdir(parents=True, exist_ok=True)
        for rel, raw, packed in staged:
            (folder / f"{_slug(rel)}.xz").write_bytes(packed)
            manifest["files"].append({"dataset": name, "rel": rel, "sha256": hashlib.sha256(raw).hexdigest(),
                                      "bytes": len(raw), "packed": f"{_slug(rel)}.xz", "packed_bytes": len(packed)})
            used += blocks(len(packed))
            say(f"  {name}: {rel}: {len(raw) / 2**20:.1f} MiB -> {len(packed) / 2**20:.1f} MiB")
    manifest["datasets"] = whole(manifest)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "data.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return manifest


def whole(manifest: dict) -> list[str]:
    """The data sets ``manifest`` holds every file of."""
    names = sorted({f["dataset"] for f in manifest["files"]})
    out = []
    for name in names:
        files = files_of(name)
        if files is not None and {_rel(s) for s in files} <= {f["rel"] for f in manifest["files"] if f["dataset"] == name}:
            out.append(name)
    return out


def carried(folder: Path) -> list[str]:
    """The data sets ``folder`` carries whole."""
    return whole(_read_manifest(folder))


def _read_manifest(folder: Path) -> dict:
    try:
        m = json.loads((folder / "data.json").read_text())
        m["files"] = [f for f in m["files"] if (folder / f["packed"]).is_file()]
        return m
    except (OSError, ValueError, KeyError, TypeError):
        return {"files": []}


def unpack(folder: Path, data_root: Path, datasets: set[str], say: Callable[[str], None] = print) -> list[str]:
    """Write the packed files of ``datasets`` that the data root lacks (only data sets carried
    whole); the data sets written."""
    from pubench.utils.io import atomic_write

    manifest = _read_manifest(folder)
    complete = set(whole(manifest))
    done = []
    for f in manifest["files"]:
        target = data_root / f["rel"]
        if f["dataset"] not in datasets or f["dataset"] not in complete or target.is_file() \
                or Path(f"{target}.gz").is_file():
            continue
        raw = lzma.decompress((folder / f["packed"]).read_bytes())
        if hashlib.sha256(raw).hexdigest() != f["sha256"]:
            raise ValueError(f"{folder / f['packed']}: its content is not the file packed (SHA-256 differs)")
        atomic_write(target, lambda out, raw=raw: out.write(raw), binary=True)
        say(f"  {f['dataset']}: {f['rel']} unpacked from {folder.name}/ ({len(raw) / 2**20:.1f} MiB)")
        done.append(f["dataset"])
    return sorted(set(done))


# ---- stopped jobs' checkpoints: back from one lease, on to the next ----------------------
CHECKPOINTS = "checkpoints"
_JOB_ID = re.compile(r"^[0-9a-f]{8,64}$")
_STAGE_FILE = re.compile(r"^[^/\\]+\.pt$")


def checkpoint_files(root: Path, job_ids: list[str]) -> dict[str, list[Path]]:
    """Job id -> its checkpoint files under ``root`` (``<root>/<job id>/*.pt``), for the jobs that have any."""
    out = {}
    for job_id in job_ids:
        files = sorted(p for p in (root / job_id).glob("*.pt") if p.is_file()) if _JOB_ID.match(job_id) else []
        if files:
            out[job_id] = files
    return out


def pack_checkpoints(store_root: Path, job_ids: list[str], folder: Path, room: int | None,
                     say: Callable[[str], None] = print) -> list[str]:
    """Copy the checkpoints of ``job_ids`` (stopped jobs still to run) from the store into
    ``folder/checkpoints/<job id>/`` while they fit ``room``; the jobs carried. What no longer
    has a checkpoint in the store is removed from the folder."""
    import shutil

    from pubench.campaign.lease import BLOCK
    from pubench.train.checkpoint import checkpoint_root

    have = checkpoint_files(checkpoint_root(store_root), job_ids)
    target = folder / CHECKPOINTS
    if target.is_dir():
        for old in target.iterdir():
            if old.name not in have:
                shutil.rmtree(old, ignore_errors=True)
    used, carried_ = 0, []
    for job_id, files in have.items():
        size = sum(-(-p.stat().st_size // BLOCK) * BLOCK for p in files)
        if room is not None and used + size > room:
            say(f"  checkpoints of {job_id}: left out ({size / 2**20:.1f} MiB over the room left); the job starts over")
            shutil.rmtree(target / job_id, ignore_errors=True)
            continue
        (target / job_id).mkdir(parents=True, exist_ok=True)
        for p in files:
            shutil.copyfile(p, target / job_id / p.name)
        used += size
        carried_.append(job_id)
    if carried_:
        say(f"  checkpoints of {len(carried_)} stopped job(s): {used / 2**20:.1f} MiB (the next window resumes them)")
    return carried_


def restore_checkpoints(folder: Path, store_root: Path, job_ids: list[str], say: Callable[[str], None] = print) -> int:
    """Put the carried checkpoints of ``job_ids`` where their jobs resume from (the store's
    checkpoint folder), where it has none of its own; how many jobs got theirs."""
    import shutil

    from pubench.train.checkpoint import checkpoint_root

    root = checkpoint_root(store_root)
    restored = 0
    for job_id, files in checkpoint_files(folder / CHECKPOINTS, job_ids).items():
        if checkpoint_files(root, [job_id]):
            continue
        (root / job_id).mkdir(parents=True, exist_ok=True)
        for p in files:
            shutil.copyfile(p, root / job_id / p.name)
        restored += 1
    if restored:
        say(f"  checkpoints: {restored} stopped job(s) resume from what {folder.name}/ carried")
    return restored


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
    """The size of the files git tracks (what travels besides the carried folders), each counted
    in whole blocks of :data:`pubench.campaign.lease.BLOCK` bytes as the travel limit counts them."""
    import subprocess

    from pubench.campaign.lease import tree_blocks

    out = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, timeout=60)
    if out.returncode != 0:
        return None
    return tree_blocks([root / p for p in out.stdout.decode().split("\0") if p and (root / p).is_file()])


def folder_bytes(folder: Path) -> int:
    """The files under ``folder`` in whole blocks (0: no folder)."""
    from pubench.campaign.lease import tree_blocks

    return tree_blocks([p for p in folder.rglob("*") if p.is_file()]) if folder.is_dir() else 0
