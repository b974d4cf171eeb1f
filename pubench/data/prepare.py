"""``pubench prepare``: make data sets available offline under the data root and check them.

For every requested data set (default: all image data sets, SST-2 and, when
:mod:`pubench.data.graphs` is present, the graph data sets) :func:`prepare`

1. checks the files already under the data root (checksums where known: the canonical
   md5s torchvision checks, the sha256s of ``../shared/data/MANIFEST.md``);
2. copies what is missing from ``--from DIR`` (a folder laid out like ``../shared/data``,
   or in torchvision's own layout), verifying checksums; MNIST / Fashion-MNIST ``.gz``
   files go to ``<root>/MNIST/raw/`` (``FashionMNIST/raw/``) and are also unpacked there,
   as torchvision's own download does; a torchvision archive found in ``DIR`` or the root
   (``cifar-10-python.tar.gz``, ...) is unpacked;
3. downloads what is still missing through torchvision, only when online (never in
   ``--check`` mode; set ``PUBENCH_OFFLINE=1`` to forbid it);
4. loads every split once, which writes the decoded caches into the cache folder, not the
   data root (:func:`pubench.paths.data_cache`; the JPEG copy of CIFAR-10 is decoded here,
   ~10 s) and checks the number of images.

It is idempotent (files already in place and valid are kept) and prints one table row per
data set: ``present`` / ``copied`` / ``downloaded`` / ``missing`` (with the reason and what
to place where) / ``error`` (e.g. a checksum mismatch). Returns 0 when everything
requested is available, 1 otherwise.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import socket
from pathlib import Path
from urllib.parse import urlparse

from pubench.data.images import DATASETS_BY_NAME, FileSpec, ImageDataset, cached, load_images
from pubench.data.text import TEXT_DATASETS, GlueTextDataset
from pubench.errors import PubenchError


class PrepareError(PubenchError, ValueError):
    """Bad input to `pubench prepare` (unknown dataset, missing --from folder)."""

TEXT_NAMES = tuple(TEXT_DATASETS)
GROUPS = {"images": "image data sets", "graphs": "graph data sets", "text": "text data sets"}
BIG_FILE = 32 << 20  # show a progress bar when copying files larger than this


# ---------------------------------------------------------------------------- helpers
def file_digest(path: Path, algo: str) -> str:
    h = hashlib.new(algo)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _check(path: Path, md5: str | None = None, sha256: str | None = None) -> str | None:
    """None when the file matches its known checksum (or none is known), else why not."""
    for algo, want in (("md5", md5), ("sha256", sha256)):
        if want:
            got = file_digest(path, algo)
            if got != want:
                return f"{path}: {algo} {got}, expected {want}"
    return None


def _copy(src: Path, dst: Path) -> None:
    """Copy atomically, with a progress bar for big files."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(f".tmp-{dst.name}")
    size = src.stat().st_size
    try:
        if size > BIG_FILE:
            from tqdm import tqdm

            with open(src, "rb") as fin, open(tmp, "wb") as fout, \
                    tqdm(total=size, unit="B", unit_scale=True, desc=f"copy {src.name}", disable=None,
                         leave=False) as bar:
                for chunk in iter(lambda: fin.read(1 << 22), b""):
                    fout.write(chunk)
                    bar.update(len(chunk))
        else:
            shutil.copyfile(src, tmp)
        os.replace(tmp, dst)
    finally:
        tmp.unlink(missing_ok=True)


def _gunzip(src: Path, dst: Path) -> None:
    tmp = dst.with_name(f".tmp-{dst.name}")
    try:
        with gzip.open(src, "rb") as fin, open(tmp, "wb") as fout:
            shutil.copyfileobj(fin, fout, 1 << 20)
        os.replace(tmp, dst)
    finally:
        tmp.unlink(missing_ok=True)


def online(url: str | None, timeout: float = 3.0) -> bool:
    """Whether the host of ``url`` answers (False when ``PUBENCH_OFFLINE`` is set)."""
    if not url or os.environ.get("PUBENCH_OFFLINE"):
        return False
    u = urlparse(url)
    try:
        socket.create_connection((u.hostname, u.port or (443 if u.scheme == "https" else 80)), timeout).close()
        return True
    except OSError:
        return False


def _short(paths: list[str], k: int = 3) -> str:
    return ", ".join(paths[:k]) + (f" and {len(paths) - k} more" if len(paths) > k else "")


# ---------------------------------------------------------------------------- image data sets
def _image_files(ds: ImageDataset) -> list[FileSpec]:
    out: list[FileSpec] = []
    for s in ds.prepare_splits:
        out += [f for f in ds.split_files(s) if f not in out]
    return out


def _verify_present(f: FileSpec, root: Path) -> str | None:
    p = f.find(root)
    if p is None:
        return "missing"
    if p == root / f.path:
        return _check(p, f.md5, f.sha256)
    return None  # an alternative (e.g. the unpacked file): no known checksum


def _prepare_image(ds: ImageDataset, root: Path, source: Path | None, check_only: bool,
                   download: bool | None) -> tuple[str, str]:
    files = _image_files(ds)
    actions: list[str] = []
    problems: list[str] = []
    for f in files:
        state = _verify_present(f, root)
        if state is None:
            if f.unpack_gz and not check_only and not (root / f.path[:-3]).is_file() and (root / f.path).is_file():
                _gunzip(root / f.path, root / f.path[:-3])
            continue
        if check_only or source is None:
            if state != "missing":
                problems.append(state)
            continue
        rejected = []
        for rel in (f.path, *f.sources):
            cand = source / rel
            if not cand.is_file():
                continue
            bad = _check(cand, f.md5, f.sha256)
            if bad is None:
                _copy(cand, root / f.path)
                if f.unpack_gz:
                    _gunzip(root / f.path, root / f.path[:-3])
                actions.append("copied")
                break
            rejected.append(bad)
        else:
            if state != "missing":
                problems.append(state)
            problems.extend(rejected)  # the source has the file, damaged: a real failure, not a gap
    missing = [f for f in files if f.find(root) is None]
    build_note = None
    if missing and not check_only and source is not None and ds.build is not None:
        build_note = ds.build(source, root)  # a subset of the --from folders (e.g. ImageNet-I's pool)
        missing = [f for f in files if f.find(root) is None]
        if not missing:
            actions.append("built")
    if missing and not check_only and ds.archive:
        fn, md5 = ds.archive
        for cand in ([source / fn] if source else []) + [root / fn]:
            if cand.is_file() and _check(cand, md5) is None:
                from torchvision.datasets.utils import extract_archive

                extract_archive(str(cand), str(root))
                actions.append(f"unpacked {fn}")
                break
        missing = [f for f in files if f.find(root) is None]
    if missing and not check_only and download is not False and ds.download and online(ds.url):
        ds.download(root)
        actions.append("downloaded")
        missing = [f for f in files if f.find(root) is None]
    if problems:
        return "error", "checksum mismatch: " + "; ".join(problems)
    if missing:
        why = ds.how_to_get if not check_only else f"{ds.how_to_get} (--check copies nothing)"
        why = f"{why} ({build_note})" if build_note else why
        return "missing", f"{ds.title}: {why}. Missing: {_short([str(root / f.path) for f in missing])}"
    # every file in place: load each split (builds the cache) and count the images
    sizes = []
    for s in ds.prepare_splits:
        if check_only:
            sizes.append(f"{s} cached" if cached(ds.name, s, root) is not None else f"{s} not cached yet")
            continue
        n = len(load_images(ds.name, s, root))
        want = ds.sizes.get(s)
        if want is not None and n != want:
            return "error", f"{ds.name} {s}: {n} images, expected {want}"
        sizes.append(f"{s} {n:,}")
    status = "downloaded" if "downloaded" in actions else "copied" if actions else "present"
    detail = ", ".join(sizes) + (" (checksums ok)" if any(f.md5 or f.sha256 for f in files) else "")
    if ds.prepare_note:
        detail += f"; {ds.prepare_note}"
    if build_note:
        detail += f"; {build_note}"
    return status, detail


# ---------------------------------------------------------------------------- text (GLUE tsv)
def _prepare_text(ds: GlueTextDataset, root: Path, source: Path | None, check_only: bool) -> tuple[str, str]:
    dst = root / ds.folder
    copied, problems, missing = [], [], []
    for fn, sha in ds.sha256.items():
        p = dst / fn
        bad = _check(p, sha256=sha) if p.is_file() else "missing"
        if bad is None:
            continue
        cand = source / ds.folder / fn if source else None
        if not check_only and cand is not None and cand.is_file() and _check(cand, sha256=sha) is None:
            _copy(cand, p)
            copied.append(fn)
        elif bad == "missing":
            missing.append(str(p))
        else:
            problems.append(bad)
    if problems:
        return "error", "checksum mismatch: " + "; ".join(problems)
    if missing:
        return "missing", (f"{ds.title} (GLUE tsv): place {_short(missing)}; ../shared/data/{ds.folder} has them "
                           f"(`pubench prepare {ds.name} --from ../shared/data`)")
    return ("copied" if copied else "present"), "train/dev/test tsv (sha256 ok)"


# ---------------------------------------------------------------------------- graphs
def _graph_module():
    try:
        from pubench.data import graphs
    except ImportError:
        return None
    return graphs if hasattr(graphs, "prepare_graphs") and hasattr(graphs, "SPECS") else None


def _prepare_graph(graphs, name: str, root: Path, source: Path | None, check_only: bool) -> tuple[str, str]:
    spec = graphs.SPECS[name]
    if check_only or source is None:
        try:
            fmt, path = graphs.find_source(spec, root)
        except FileNotFoundError as e:
            return "missing", str(e)
        return "present", f"{fmt} format ({path})"
    try:
        (line,) = graphs.prepare_graphs(source, root, [name])
    except FileNotFoundError as e:
        return "missing", str(e)
    except ValueError as e:
        return "error", str(e)
    detail = line.split(": ", 1)[1] if ": " in line else line
    return ("present" if "copied 0 file" in line else "copied"), detail


# ---------------------------------------------------------------------------- main entry
def _resolve(names: list[str] | None, graphs) -> tuple[list[str], list[str], list[str]]:
    graph_names = list(graphs.SPECS) if graphs is not None else []
    if not names:
        return list(DATASETS_BY_NAME), list(TEXT_NAMES), graph_names
    img, txt, gr = [], [], []
    for n in names:
        if n == "images":
            img += list(DATASETS_BY_NAME)
        elif n == "text":
            txt += list(TEXT_NAMES)
        elif n == "graphs":
            if graphs is None:
                raise ValueError("graph data sets: pubench.data.graphs is not available")
            gr += graph_names
        elif n in DATASETS_BY_NAME:
            img.append(n)
        elif n in TEXT_NAMES:
            txt.append(n)
        elif n in graph_names:
            gr.append(n)
        else:
            import difflib

            known = list(DATASETS_BY_NAME) + list(TEXT_NAMES) + graph_names + list(GROUPS)
            close = difflib.get_close_matches(n, known, n=1)
            raise PrepareError(f"unknown dataset {n!r}" + (f"; did you mean {close[0]!r}?" if close else "") +
                             f" (known: {', '.join(known)})")
    return list(dict.fromkeys(img)), list(dict.fromkeys(txt)), list(dict.fromkeys(gr))


def prepare_rows(names: list[str] | None = None, source: Path | str | None = None,
                 root: Path | str | None = None, check_only: bool = False,
                 download: bool | None = None, progress=None) -> list[tuple[str, str, str]]:
    """Do the work of :func:`prepare`; one ``(dataset, status, detail)`` row per data set.
    ``progress(i, total, name)`` is called before each data set."""
    if root is None:
        from pubench.paths import data_root

        root = data_root()
    root = Path(root)
    source = Path(source) if source is not None else None
    if source is not None and not source.is_dir():
        raise PrepareError(f"--from {source}: no such folder")
    graphs = _graph_module()
    img, txt, gr = _resolve(names, graphs)
    if not check_only:
        root.mkdir(parents=True, exist_ok=True)

    rows = []
    total = len(img) + len(txt) + len(gr)

    def step(name: str, work) -> None:
        if progress is not None:
            progress(len(rows) + 1, total, name)
        rows.append((name, *work()))

    for n in img:
        def image(n=n):
            try:
                return _prepare_image(DATASETS_BY_NAME[n], root, source, check_only, download)
            except (OSError, ValueError, RuntimeError) as e:
                return "error", f"{type(e).__name__}: {e}"
        step(n, image)
    for n in txt:
        step(n, lambda n=n: _prepare_text(TEXT_DATASETS[n], root, source, check_only))
    if graphs is None and not names:
        rows.append(("graphs", "skipped", "pubench.data.graphs not available"))
    for n in gr:
        step(n, lambda n=n: _prepare_graph(graphs, n, root, source, check_only))
    return rows


def prepare(names: list[str] | None = None, source: Path | str | None = None, root: Path | str | None = None,
            check_only: bool = False, download: bool | None = None) -> int:
    """Make ``names`` (default: all) available under ``root``; print a line per data set as
    it goes (stderr) and a status table.

    ``source``: folder with local copies (``--from``). ``check_only``: copy, download and
    write nothing. ``download``: None = only when online, False = never.

    Returns 1 on a real failure: a data set that could not be placed (checksum, unreadable
    file: status ``error``), a data set named on the command line that is missing, or, with
    ``check_only``, any missing one. Otherwise 0: data sets that neither the source holds nor
    a download gives are listed (with the files to place), not an error, so
    ``pubench prepare --from ../shared/data`` succeeds in a ``set -e`` script when it placed
    everything the folder has.
    """
    import sys

    from tabulate import tabulate

    from pubench.paths import data_root

    def progress(i: int, total: int, name: str) -> None:
        print(f"pubench prepare: [{i}/{total}] {name} ...", file=sys.stderr, flush=True)

    root = Path(root) if root is not None else data_root()
    rows = prepare_rows(names, source, root, check_only, download, progress=progress)
    mode = "check only" if check_only else f"from {source}" if source else "no --from folder"
    print(f"pubench prepare: data root {root.resolve()} ({mode})")
    print(tabulate(rows, headers=["dataset", "status", "detail"], tablefmt="simple", maxcolwidths=[None, None, 100]))
    errors = [r[0] for r in rows if r[1] == "error"]
    missing = [r[0] for r in rows if r[1] == "missing"]
    if missing:
        where = f"{source} has no copy and none can be downloaded here" if source else "not placed"
        print(f"\n{len(missing)} of {len(rows)} not available ({where}): {', '.join(missing)}")
    if errors:
        print(f"{len(errors)} failed: {', '.join(errors)} (see the detail column)")
    failed = errors or (check_only and missing) or [n for n in missing if names and n in names]
    return 1 if failed else 0
