"""Graph classification data sets (TU collection), read offline (issue 6).

Registered in :data:`pubench.data.DATASETS` under ``ptc_mr``, ``enzymes``, ``dd``,
``reddit_binary``, ``mutag``, ``proteins``, ``nci1``, ``imdb_binary``; each entry is a
:class:`GraphDatasetSpec` whose ``load(root=None)`` returns a :class:`GraphSet`.

Each data set is read one way, the way ``pubench prepare --from ../shared/data`` lays it out
(:attr:`GraphDatasetSpec.reads`), so a data root gives the numbers of every other root with
the same files. Where the files are looked for, under the data root (``$PUBENCH_DATA``,
default ``./data``):

1. ``reads == "tu"`` (all but REDDIT-BINARY): ``<root>/tu/<NAME>/<NAME>_A.txt``,
   ``_graph_indicator.txt``, ``_graph_labels.txt`` (``_node_labels.txt`` where the data set
   has node labels): the TU raw format, read with torch-geometric's TU reader as its
   ``TUDataset`` reads it. A folder laid out like ``../shared/data`` itself, whose ``tu/DD``
   lacks ``DD_A.txt`` and holds it as ``tu_reconstructed/DD/DD_A.txt.gz``, is read the same
   way (the adjacency unpacked into the cache folder): what ``pubench prepare`` would copy.
   A GIN-format file is not read in their place: DD's GIN copy numbers its node labels
   otherwise (82 one-hot columns for TU's 89) and MUTAG's orders its graphs otherwise, so it
   gives other numbers (DD InfoGraph: 77.76 where the TU copy gives 75.47); the loader
   refuses it, naming the files and the ``pubench prepare NAME --from ../shared/data``
   command (``pubench run`` stops with that line, exit status 2);
2. ``reads == "gin"`` (REDDIT-BINARY, of which no TU copy exists here):
   ``<root>/gin/<GIN_NAME>/<GIN_NAME>.txt``, the GIN / DGCNN text format (first line the
   number of graphs; per graph a line ``n label`` then ``n`` lines ``tag degree nbr_1 ...
   nbr_degree [attributes]``, 0-based neighbours), read by :func:`read_gin_txt`.

The processed graphs are cached by pubench (written and read with ``weights_only=True``) in
the cache folder, never in the data root (a root shared read-only must work):
``<data cache>/graphs/<format>/<NAME>/<hash>/data.pt`` (:func:`pubench.paths.data_cache`); a
cache an older version wrote into ``<root>/processed/<format>/<NAME>/<hash>/`` is still read.

Nothing is downloaded: on a miss the error names the files to place and the
``pubench prepare NAME --from ../shared/data`` command. :func:`prepare_graphs` copies the
files from a folder laid out like ``../shared/data`` (see its ``MANIFEST.md``).

Preprocessing (identical for both formats): self-loops removed, edges coalesced (each
undirected edge stored in both directions once), graph labels mapped to ``0..C-1`` in
sorted order (TU's ``-1/1`` and GIN's shifted ``0/2`` both become ``0/1``).

Node features (``features="auto"``, the rule of the InfoGraph code of HCL, Robinson et
al. 2021, ``graph/deepinfomax.py``):

* data sets with node labels (MUTAG, PTC_MR, ENZYMES, PROTEINS, NCI1, DD): the one-hot
  node label, as InfoGraph uses it (ENZYMES' and PROTEINS' continuous node attributes
  are not used, as in ``TUDataset(use_node_attr=False)``);
* without node labels (IMDB-BINARY, REDDIT-BINARY): the node degree, one-hot when the
  largest degree in the data set is below 1000 (IMDB-BINARY: 136 columns), else the
  degree standardized by the data set's mean and std over all nodes, one column
  (REDDIT-BINARY, max degree 3062). ``features="degree"`` / ``"constant"`` force the
  standardized degree / a constant 1.
"""

from __future__ import annotations

import gzip
import shutil
import tempfile
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pubench.data.base import DATASETS, Dataset
from pubench.utils.hashing import config_hash
from pubench.utils.io import atomic_write
from pubench.utils.lazy import lazy

# torch_geometric's import applies torch.jit.script, which torch 2.x deprecates with a FutureWarning
# that nothing here can act on (issue 54: `pubench prepare` printed it for every graph data set)
warnings.filterwarnings("ignore", message=r"`torch\.jit\.script` is deprecated", category=FutureWarning)

torch = lazy("torch")  # loaded on first use: importing this module stays cheap (issue 34)

LOADER_VERSION = 2  # bump when the cached processed data would change (2: TU sets cached by pubench, not PyG)
ONE_HOT_DEGREE_MAX = 1000  # HCL's rule: one-hot degree below this max degree, else standardized
FEATURES = ("auto", "degree", "constant")
PREPARE_HINT = "pubench prepare --from ../shared/data"
READS = ("tu", "gin")


@dataclass(frozen=True)
class GraphDatasetSpec(Dataset):
    """A TU graph classification data set and its published statistics (TU / MANIFEST)."""

    modality = "graph"

    name: str  # pubench name
    tu_name: str  # TU name: folder and file prefix under <root>/tu/
    gin_name: str  # folder and file name under <root>/gin/
    graphs: int
    nodes: int
    edges: int  # undirected edges (unique {u, v}, no self-loops)
    class_counts: tuple[int, ...]  # per class 0..C-1 after the sorted relabelling
    node_labels: bool  # the data set has discrete node labels
    reads: str = "tu"  # the one format it is read from: "tu" (TU raw) or "gin" (GIN text), module docstring

    @property
    def num_classes(self) -> int:
        return len(self.class_counts)

    def load(self, root: str | Path | None = None, *, features: str = "auto") -> "GraphSet":
        return load_graphs(self.name, root, features=features)

    def availability(self, root: str | Path | None = None) -> str | None:
        try:
            find_source(self, _root(root))
        except FileNotFoundError as exc:
            return str(exc)
        return None


# Statistics: MANIFEST.md of ../shared/data (computed from the files, equal to the
# published TU statistics); edges = avg edges x graphs, recounted from the files.
SPECS: dict[str, GraphDatasetSpec] = {
    s.name: s
    for s in [
        GraphDatasetSpec("mutag", "MUTAG", "MUTAG", 188, 3371, 3721, (63, 125), True),
        GraphDatasetSpec("ptc_mr", "PTC_MR", "PTC_MR", 344, 4915, 5054, (192, 152), True),
        GraphDatasetSpec("enzymes", "ENZYMES", "ENZYMES", 600, 19580, 37282, (100,) * 6, True),
        GraphDatasetSpec("proteins", "PROTEINS", "PROTEINS", 1113, 43471, 81044, (663, 450), True),
        GraphDatasetSpec("nci1", "NCI1", "NCI1", 4110, 122747, 132753, (2053, 2057), True),
        GraphDatasetSpec("dd", "DD", "DD", 1178, 334925, 843046, (691, 487), True),
        GraphDatasetSpec("imdb_binary", "IMDB-BINARY", "IMDBBINARY", 1000, 19773, 96531, (500, 500), False),
        GraphDatasetSpec("reddit_binary", "REDDIT-BINARY", "REDDIT-BINARY", 2000, 859254, 995508,
                         (1000, 1000), False, reads="gin"),
    ]
}


@dataclass
class GraphSet:
    """A loaded data set: PyG ``Data`` graphs with float features ``x`` and label ``y``."""

    name: str
    graphs: list  # list[torch_geometric.data.Data]
    num_features: int
    num_classes: int
    info: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.graphs)

    @property
    def labels(self) -> torch.Tensor:
        return torch.cat([g.y.view(-1) for g in self.graphs])


# ------------------------------------------------------------------ file locations
def _root(root: str | Path | None) -> Path:
    if root is None:
        from pubench.paths import data_root

        root = data_root()
    return Path(root)


def tu_required_files(spec: GraphDatasetSpec) -> list[str]:
    parts = ["A", "graph_indicator", "graph_labels"] + (["node_labels"] if spec.node_labels else [])
    return [f"{spec.tu_name}_{p}.txt" for p in parts]


def tu_folder(spec: GraphDatasetSpec, root: Path) -> Path:
    return root / "tu" / spec.tu_name


def gin_file(spec: GraphDatasetSpec, root: Path) -> Path:
    return root / "gin" / spec.gin_name / f"{spec.gin_name}.txt"


def reconstructed_adjacency(spec: GraphDatasetSpec, root: Path) -> Path:
    """``<root>/tu_reconstructed/<NAME>/<NAME>_A.txt.gz``: the layout of ``../shared/data``, where
    DD's adjacency exists only gzipped (``MANIFEST.md``)."""
    return root / "tu_reconstructed" / spec.tu_name / f"{spec.tu_name}_A.txt.gz"


def prepare_hint(spec: GraphDatasetSpec) -> str:
    return f"pubench prepare {spec.name} --from ../shared/data"


@dataclass(frozen=True)
class Source:
    """Where a data set's files are: its format, the folder (TU) or file (GIN), and for a TU
    folder without its ``_A.txt`` the gzipped adjacency read in its place."""

    kind: str
    path: Path
    adjacency_gz: Path | None = None

    def __iter__(self):  # (kind, path), as find_source returned before
        return iter((self.kind, self.path))


def find_source(spec: GraphDatasetSpec, root: Path) -> Source:
    """The files ``spec`` is read from under ``root`` (module docstring); FileNotFoundError
    naming what to place where, and the command that places it, when they are not there."""
    if spec.reads == "gin":
        txt = gin_file(spec, root)
        if txt.is_file():
            return Source("gin", txt)
        raise FileNotFoundError(
            f"graph data set {spec.name!r} ({spec.tu_name}) is read from its GIN-format file, not found under "
            f"{root}: place {txt} (`{prepare_hint(spec)}` puts it there; data root = $PUBENCH_DATA, default "
            f"./data). Nothing is downloaded.")
    folder = tu_folder(spec, root)
    required = tu_required_files(spec)
    missing = [f for f in required if not (folder / f).is_file()]
    if not missing:
        return Source("tu", folder)
    gz = reconstructed_adjacency(spec, root)
    if missing == [f"{spec.tu_name}_A.txt"] and gz.is_file():
        return Source("tu", folder, gz)
    txt = gin_file(spec, root)
    other = (f"; the GIN-format file {txt} here is not read in their place: it gives {spec.name} other node "
             "features or graph order, hence other numbers" if txt.is_file() else "")
    raise FileNotFoundError(
        f"graph data set {spec.name!r} ({spec.tu_name}) is read from its TU raw files, not found under {root}: "
        f"place {', '.join(required)} in {folder}/ (missing: {', '.join(missing)}; `{prepare_hint(spec)}` puts "
        f"them there{other}; data root = $PUBENCH_DATA, default ./data). Nothing is downloaded."
    )


# ------------------------------------------------------------------ readers
def _tu_processed(spec: GraphDatasetSpec, source: Source, caches: list[Path]) -> tuple[list, bool]:
    """The graphs of TU raw files in ``source``'s folder as torch-geometric's ``TUDataset``
    gives them (its reader; continuous node and edge attributes dropped, as with
    ``use_node_attr=False``) and whether they have node labels. Cached by pubench, not by
    ``TUDataset``: its processed folder is read with ``torch.load(weights_only=False)``
    (``pre_transform.pt``) and falls back to it for a file ``weights_only`` refuses, so a
    planted file there would run code. ``caches``: where to look, the first also where to write."""
    from torch_geometric.io import read_tu_data

    for cache in caches:
        cached = _read_processed(cache)
        if cached is not None and isinstance(cached[1].get("num_node_labels"), int):
            graphs, sizes = cached
            return graphs, sizes["num_node_labels"] > 0
    if source.adjacency_gz is None:
        data, slices, sizes = read_tu_data(str(source.path), spec.tu_name)
    else:
        with tempfile.TemporaryDirectory(dir=_mkdirs(caches[0].parent)) as tmp:
            raw = _with_adjacency(spec, source, Path(tmp))
            data, slices, sizes = read_tu_data(str(raw), spec.tu_name)
    if data.x is not None:  # attributes come before the one-hot labels
        data.x = data.x[:, sizes["num_node_attributes"]:]
    if data.edge_attr is not None:
        data.edge_attr = data.edge_attr[:, sizes["num_edge_attributes"]:]
    _write_processed(caches[0], data, slices, sizes)
    return _separate(data, slices), sizes["num_node_labels"] > 0


def _mkdirs(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _with_adjacency(spec: GraphDatasetSpec, source: Source, tmp: Path) -> Path:
    """A folder in ``tmp`` with the TU files of ``source`` (linked) and the ``_A.txt`` unpacked
    from its gzipped copy: the files ``pubench prepare`` would copy, read from where they are."""
    for f in source.path.glob("*.txt"):  # every file the TU reader looks for, optional ones included
        (tmp / f.name).symlink_to(f.resolve())
    with gzip.open(source.adjacency_gz, "rb") as fin, open(tmp / f"{spec.tu_name}_A.txt", "wb") as fout:
        shutil.copyfileobj(fin, fout)
    return tmp


def _separate(data, slices: dict) -> list:
    from torch_geometric.data import InMemoryDataset

    ds = InMemoryDataset()
    ds.data, ds.slices = data, slices
    return [ds[i] for i in range(len(ds))]


def _read_processed(cache: Path) -> tuple[list, dict[str, int]] | None:
    """The graphs and sizes :func:`_write_processed` stored under ``cache``, or None."""
    from torch_geometric.data import Data

    target = cache / "data.pt"
    if not target.is_file():
        return None
    try:  # tensors and plain containers only: a file in a shared data root never runs code
        blob = torch.load(target, weights_only=True)
        return _separate(Data.from_dict(blob["data"]), blob["slices"]), dict(blob.get("sizes") or {})
    except Exception:  # noqa: BLE001 - an old (pickled Data), corrupt or unsafe cache is rebuilt
        return None


def _write_processed(cache: Path, data, slices: dict, sizes: dict[str, int] | None = None) -> None:
    blob = {"data": data.to_dict(), "slices": dict(slices), **({"sizes": dict(sizes)} if sizes else {})}
    try:
        cache.mkdir(parents=True, exist_ok=True)
        atomic_write(cache / "data.pt", lambda f: torch.save(blob, f), binary=True)
    except OSError:  # a cache folder that cannot be written only costs the cache
        pass


def read_gin_txt(path: str | Path) -> list:
    """Parse a GIN / DGCNN-format file into PyG ``Data`` (``x`` = one-hot tag, ``y``, ``edge_index``).

    ``y`` is the raw label as printed (relabel with :func:`relabel`); ``x`` has one
    column per distinct tag in the file, in sorted tag order. Self-loops are dropped and
    edges coalesced (both directions, each once), as PyG's TU reader does. Checks the
    graph count and that every neighbour index is in range.
    """
    from torch_geometric.data import Data
    from torch_geometric.utils import coalesce, remove_self_loops

    lines = Path(path).read_text().split("\n")
    pos = 0

    def next_line() -> list[str]:
        nonlocal pos
        while pos < len(lines) and not lines[pos].strip():
            pos += 1
        if pos >= len(lines):
            raise ValueError(f"{path}: unexpected end of file")
        pos += 1
        return lines[pos - 1].split()

    n_graphs = int(next_line()[0])
    raw = []
    all_tags: set[int] = set()
    for g in range(n_graphs):
        head = next_line()
        n, label = int(head[0]), int(head[1])
        tags, src, dst = [], [], []
        for i in range(n):
            row = next_line()
            tag, m = int(row[0]), int(row[1])
            nbrs = [int(v) for v in row[2 : 2 + m]]
            if len(nbrs) != m or any(v < 0 or v >= n for v in nbrs):
                raise ValueError(f"{path}: graph {g} node {i}: bad neighbour list {row[:2 + m]}")
            tags.append(tag)
            src += [i] * m
            dst += nbrs
        all_tags.update(tags)
        raw.append((n, label, tags, src, dst))
    tag_index = {t: k for k, t in enumerate(sorted(all_tags))}
    out = []
    for n, label, tags, src, dst in raw:
        edge_index = torch.tensor([src + dst, dst + src], dtype=torch.long).view(2, -1)
        edge_index, _ = remove_self_loops(edge_index)
        edge_index = coalesce(edge_index, num_nodes=n)
        t = torch.tensor([tag_index[v] for v in tags], dtype=torch.long)
        x = torch.nn.functional.one_hot(t, len(tag_index)).float()
        out.append(Data(x=x, edge_index=edge_index, y=torch.tensor([label]), num_nodes=n))
    return out


def relabel(graphs: list) -> list[int]:
    """Map graph labels to ``0..C-1`` in sorted order, in place; return the sorted raw labels."""
    raw = sorted({int(g.y) for g in graphs})
    index = {v: k for k, v in enumerate(raw)}
    for g in graphs:
        g.y = torch.tensor([index[int(g.y)]])
    return raw


def _gin_processed(spec: GraphDatasetSpec, txt: Path, caches: list[Path]) -> list:
    from torch_geometric.data import InMemoryDataset

    for cache in caches:
        cached = _read_processed(cache)
        if cached is not None:
            return cached[0]
    graphs = read_gin_txt(txt)
    relabel(graphs)
    data, slices = InMemoryDataset.collate(graphs)
    _write_processed(caches[0], data, slices)
    return graphs


# ------------------------------------------------------------------ features
def degree_features(graphs: list, rule: str) -> dict[str, Any]:
    """Set ``x`` from node degrees (in place): one-hot below max degree 1000 (``auto``),
    else standardized; ``constant`` = a column of ones. Returns what was done."""
    from torch_geometric.utils import degree

    if rule == "constant":
        for g in graphs:
            g.x = torch.ones(g.num_nodes, 1)
        return {"node_features": "constant"}
    degs = [degree(g.edge_index[0], g.num_nodes, dtype=torch.long) for g in graphs]
    max_deg = int(max(int(d.max()) if d.numel() else 0 for d in degs))
    if rule == "auto" and max_deg < ONE_HOT_DEGREE_MAX:
        for g, d in zip(graphs, degs):
            g.x = torch.nn.functional.one_hot(d, max_deg + 1).float()
        return {"node_features": f"one-hot degree ({max_deg + 1} columns)", "max_degree": max_deg}
    flat = torch.cat(degs).double()
    mean, std = float(flat.mean()), float(flat.std())
    for g, d in zip(graphs, degs):
        g.x = ((d.double() - mean) / std).float().view(-1, 1)
    return {"node_features": "standardized degree", "max_degree": max_deg,
            "degree_mean": round(mean, 4), "degree_std": round(std, 4)}


# ------------------------------------------------------------------ loading
def load_graphs(name: str, root: str | Path | None = None, *, features: str = "auto") -> GraphSet:
    """Load a registered graph data set from ``root`` (default: the data root); see module doc."""
    if name not in SPECS:
        raise KeyError(f"unknown graph data set {name!r} (one of {', '.join(SPECS)})")
    if features not in FEATURES:
        raise ValueError(f"features must be one of {FEATURES}, got {features!r}")
    spec = SPECS[name]
    root = _root(root)
    source = find_source(spec, root)
    kind, where = source.kind, source.path
    caches = processed_caches(spec, root, kind)
    if kind == "tu":
        graphs, has_labels = _tu_processed(spec, source, caches)
    else:
        graphs = _gin_processed(spec, where, caches)
        has_labels = spec.node_labels
    info: dict[str, Any] = {"source": kind, "path": str(where)}
    if source.adjacency_gz is not None:
        info["adjacency"] = str(source.adjacency_gz)
    if features == "auto" and has_labels:
        for g in graphs:
            g.x = g.x.float()
        info["node_features"] = f"one-hot node label ({graphs[0].x.shape[1]} columns)"
    else:
        info.update(degree_features(graphs, "degree" if features == "degree" else features))
    for g in graphs:
        g.edge_attr = None
    counts = Counter(int(g.y) for g in graphs)
    num_classes = max(counts) + 1
    info.update(graphs=len(graphs), class_counts=[counts.get(k, 0) for k in range(num_classes)])
    return GraphSet(spec.name, graphs, int(graphs[0].x.shape[1]), num_classes, info)


def processed_caches(spec: GraphDatasetSpec, root: Path, kind: str) -> list[Path]:
    """Where the processed graphs are looked for: the data root's folder in the cache (written
    there), then ``<root>/processed/`` (an older version's cache; read only)."""
    from pubench.paths import data_cache

    key = config_hash({"format": kind, "name": spec.tu_name, "loader_version": LOADER_VERSION})
    rel = Path(kind) / spec.tu_name / key
    return [data_cache(root) / "graphs" / rel, root / "processed" / rel]


def dataset_stats(gs: GraphSet) -> dict[str, Any]:
    """Graph, node and undirected-edge counts and the class counts of a loaded set."""
    nodes = sum(int(g.num_nodes) for g in gs.graphs)
    edges = sum(int(g.edge_index.shape[1]) for g in gs.graphs) // 2
    return {"graphs": len(gs.graphs), "nodes": nodes, "edges": edges,
            "class_counts": tuple(gs.info["class_counts"])}


def check_against_published(gs: GraphSet) -> list[str]:
    """Differences between a loaded set and its published statistics (empty = all agree)."""
    spec = SPECS[gs.name]
    got = dataset_stats(gs)
    want = {"graphs": spec.graphs, "nodes": spec.nodes, "edges": spec.edges, "class_counts": spec.class_counts}
    return [f"{gs.name}: {k} = {got[k]}, published {want[k]}" for k in want if got[k] != want[k]]


# ------------------------------------------------------------------ prepare
def prepare_graphs(source: Path, root: Path, names: list[str] | None = None) -> list[str]:
    """Copy the graph data sets from ``source`` into the data root ``root`` and check them.

    ``source`` is laid out like ``../shared/data`` (see its ``MANIFEST.md``):
    ``tu/<NAME>/*.txt`` (TU raw), ``tu_reconstructed/DD/DD_A.txt.gz`` (DD's adjacency,
    missing from ``tu/DD``; gunzipped here into ``<root>/tu/DD/DD_A.txt``) and
    ``gin/<NAME>/<NAME>.txt`` (GIN format, the only copy of REDDIT-BINARY). For each data
    set (``names``, default all registered graph sets) the files of the one format it is
    read from (:attr:`GraphDatasetSpec.reads`) are copied; then the set is loaded (which
    builds the processed cache in the cache folder) and its graph, node, edge and class counts are
    checked against the published statistics. Files already in place with the same size
    are kept. Returns one line per data set (``"<name>: ok (...)"``); raises
    ``FileNotFoundError`` when the files of its format are in neither folder and
    ``ValueError`` when the counts disagree.
    """
    source, root = Path(source), Path(root)
    lines = []
    for name in names or list(SPECS):
        spec = SPECS[name]
        src_tu = source / "tu" / spec.tu_name
        dst_tu = root / "tu" / spec.tu_name
        copied = []
        if spec.reads == "tu" and src_tu.is_dir():
            for f in sorted(src_tu.glob("*.txt")):
                copied += _copy(f, dst_tu / f.name)
            gz = reconstructed_adjacency(spec, source)
            target = dst_tu / f"{spec.tu_name}_A.txt"
            if gz.is_file() and not target.is_file():
                dst_tu.mkdir(parents=True, exist_ok=True)
                tmp = target.with_suffix(".tmp")
                with gzip.open(gz, "rb") as fin, open(tmp, "wb") as fout:
                    shutil.copyfileobj(fin, fout)
                tmp.replace(target)
                copied.append(target.name)
        if spec.reads == "gin":
            src_gin = source / "gin" / spec.gin_name / f"{spec.gin_name}.txt"
            if src_gin.is_file():
                copied += _copy(src_gin, gin_file(spec, root))
        gs = load_graphs(name, root)
        problems = check_against_published(gs)
        if problems:
            raise ValueError("; ".join(problems))
        st = dataset_stats(gs)
        lines.append(f"{name}: ok ({gs.info['source']}, {st['graphs']} graphs, {st['nodes']} nodes, "
                     f"classes {list(st['class_counts'])}; copied {len(copied)} file(s))")
    return lines


def _copy(src: Path, dst: Path) -> list[str]:
    if dst.is_file() and dst.stat().st_size == src.stat().st_size:
        return []
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_suffix(dst.suffix + ".tmp")
    shutil.copyfile(src, tmp)
    tmp.replace(dst)
    return [dst.name]


for _spec in SPECS.values():
    DATASETS.register(_spec.name, _spec)
