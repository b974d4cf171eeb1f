"""Graph data (issue 6): TU and GIN readers on tiny generated files, features, caching,
errors, prepare_graphs, and the real data sets' counts when ../shared/data exists."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
import torch

import pubench.data.graphs as G
from pubench.data import DATASETS
from pubench.paths import data_cache

# Three tiny graphs. Graph 0: triangle 0-1-2 plus a self-loop on 0 (dropped);
# graph 1: path 3-4; graph 2: a star 5-(6, 7, 8). Node labels 1..3, graph labels -1 / 1.
GRAPH_OF = [1, 1, 1, 2, 2, 3, 3, 3, 3]  # 1-based graph indicator per node
NODE_LABELS = [1, 2, 3, 1, 1, 2, 3, 3, 3]
GRAPH_LABELS = [-1, 1, 1]
UNDIRECTED = [(1, 2), (2, 3), (1, 3), (4, 5), (6, 7), (6, 8), (6, 9)]  # 1-based global ids
SELF_LOOPS = [(1, 1)]
EXPECTED_EDGES = {0: {(0, 1), (1, 2), (0, 2)}, 1: {(0, 1)}, 2: {(0, 1), (0, 2), (0, 3)}}  # local, undirected


def tiny_spec(name="tiny", node_labels=True, graphs=3, nodes=9, edges=7, classes=(1, 2), reads="tu"):
    return G.GraphDatasetSpec(name, "TINY", "TINY", graphs, nodes, edges, classes, node_labels, reads)


def write_tu(folder: Path, prefix="TINY", node_labels=True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    pairs = [(u, v) for u, v in UNDIRECTED] + [(v, u) for u, v in UNDIRECTED] + SELF_LOOPS
    (folder / f"{prefix}_A.txt").write_text("".join(f"{u}, {v}\n" for u, v in pairs))
    (folder / f"{prefix}_graph_indicator.txt").write_text("".join(f"{g}\n" for g in GRAPH_OF))
    (folder / f"{prefix}_graph_labels.txt").write_text("".join(f"{y}\n" for y in GRAPH_LABELS))
    if node_labels:
        (folder / f"{prefix}_node_labels.txt").write_text("".join(f"{t}\n" for t in NODE_LABELS))
    return folder


def write_gin(path: Path, node_labels=True) -> Path:
    """The same graphs in the GIN text format (labels shifted to 0 / 2 as in the GIN files)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [str(len(GRAPH_LABELS))]
    first = 1
    for g, label in enumerate(GRAPH_LABELS, start=1):
        nodes = [i + 1 for i, gg in enumerate(GRAPH_OF) if gg == g]
        lines.append(f"{len(nodes)} {label + 1}")
        for v in nodes:
            nbrs = [b for a, b in UNDIRECTED if a == v] + [a for a, b in UNDIRECTED if b == v]
            nbrs += [b for a, b in SELF_LOOPS if a == v]
            tag = NODE_LABELS[v - 1] - 1 if node_labels else 0
            lines.append(" ".join(map(str, [tag, len(nbrs)] + [u - first for u in nbrs])))
        first += len(nodes)
    path.write_text("\n".join(lines) + "\n")
    return path


def local_edges(g) -> set:
    return {(min(u, v), max(u, v)) for u, v in g.edge_index.t().tolist()}


@pytest.fixture
def tiny(monkeypatch):
    def register(**kw):
        spec = tiny_spec(**kw)
        monkeypatch.setitem(G.SPECS, spec.name, spec)
        return spec
    return register


def check_tiny(gs, node_labels=True):
    assert len(gs) == 3 and gs.num_classes == 2
    assert gs.labels.tolist() == [0, 1, 1]  # -1 / 1 and 0 / 2 both relabelled to 0 / 1
    assert gs.info["class_counts"] == [1, 2]
    for k, g in enumerate(gs.graphs):
        assert local_edges(g) == EXPECTED_EDGES[k]
        assert g.edge_index.shape[1] == 2 * len(EXPECTED_EDGES[k])  # both directions, once, no self-loop
        assert g.x.dtype == torch.float32 and g.x.shape[0] == g.num_nodes
    if node_labels:
        x = torch.cat([g.x for g in gs.graphs])
        assert x.shape[1] == 3 and torch.equal(x.argmax(1) + 1, torch.tensor(NODE_LABELS))
        assert torch.equal(x.sum(1), torch.ones(9))


def test_tu_reader(tmp_path, tiny):
    tiny()
    write_tu(tmp_path / "tu" / "TINY")
    gs = G.load_graphs("tiny", tmp_path)
    assert gs.info["source"] == "tu"
    check_tiny(gs)
    caches = list((data_cache(tmp_path) / "graphs" / "tu" / "TINY").iterdir())
    assert len(caches) == 1 and (caches[0] / "data.pt").is_file()  # <data cache>/graphs/tu/NAME/<hash>/
    assert not (tmp_path / "processed").exists()  # nothing written into the data root


def test_gin_reader(tmp_path, tiny):
    tiny(reads="gin")
    write_gin(tmp_path / "gin" / "TINY" / "TINY.txt")
    gs = G.load_graphs("tiny", tmp_path)
    assert gs.info["source"] == "gin"
    check_tiny(gs)
    again = G.load_graphs("tiny", tmp_path)  # from the processed cache
    for a, b in zip(gs.graphs, again.graphs):
        assert torch.equal(a.edge_index, b.edge_index) and torch.equal(a.x, b.x) and torch.equal(a.y, b.y)


def test_tu_and_gin_agree(tmp_path, tiny):
    tiny()
    write_tu(tmp_path / "a" / "tu" / "TINY")
    a = G.load_graphs("tiny", tmp_path / "a")
    tiny(reads="gin")
    write_gin(tmp_path / "b" / "gin" / "TINY" / "TINY.txt")
    b = G.load_graphs("tiny", tmp_path / "b")
    for ga, gb in zip(a.graphs, b.graphs):
        assert torch.equal(ga.edge_index, gb.edge_index) and torch.equal(ga.x, gb.x) and torch.equal(ga.y, gb.y)
    assert G.check_against_published(a) == []


def test_a_data_set_is_read_from_its_one_format_only(tmp_path, tiny):
    """A TU data set never falls back to a GIN file (DD's GIN copy gives other numbers), and
    the refusal names the files and the command that puts them there; REDDIT-BINARY's format
    is GIN."""
    tiny()
    write_gin(tmp_path / "gin" / "TINY" / "TINY.txt")
    with pytest.raises(FileNotFoundError) as e:
        G.load_graphs("tiny", tmp_path)
    msg = str(e.value)
    assert "read from its TU raw files" in msg and "TINY_A.txt" in msg and "pubench prepare tiny --from" in msg
    assert "TINY.txt here is not read in their place" in msg and "\n" not in msg
    write_tu(tmp_path / "tu" / "TINY")
    assert G.load_graphs("tiny", tmp_path).info["source"] == "tu"
    assert G.SPECS["reddit_binary"].reads == "gin" and {s.reads for n, s in G.SPECS.items() if n != "reddit_binary"} \
        == {"tu"}
    tiny(reads="gin")
    with pytest.raises(FileNotFoundError, match="read from its GIN-format file"):
        G.load_graphs("tiny", tmp_path / "nothing")


def test_a_raw_folder_with_the_gzipped_adjacency_reads_as_the_prepared_copy(tmp_path, tiny):
    """../shared/data's layout (DD: ``tu/DD`` without ``DD_A.txt``, the adjacency in
    ``tu_reconstructed/``, a GIN copy beside it) as the data root: read from the TU files and
    the unpacked adjacency, the graphs the prepared copy gives, and nothing written there."""
    tiny()
    raw = tmp_path / "raw"
    write_tu(raw / "tu" / "TINY")
    a = raw / "tu" / "TINY" / "TINY_A.txt"
    gz = raw / "tu_reconstructed" / "TINY" / "TINY_A.txt.gz"
    gz.parent.mkdir(parents=True)
    gz.write_bytes(gzip.compress(a.read_bytes()))
    a.unlink()
    write_gin(raw / "gin" / "TINY" / "TINY.txt")
    before = sorted(p.relative_to(raw) for p in raw.rglob("*"))
    direct = G.load_graphs("tiny", raw)
    assert direct.info["source"] == "tu" and direct.info["adjacency"] == str(gz)
    check_tiny(direct)
    G.prepare_graphs(raw, tmp_path / "prepared", ["tiny"])
    prepared = G.load_graphs("tiny", tmp_path / "prepared")
    for ga, gb in zip(direct.graphs, prepared.graphs):
        assert torch.equal(ga.edge_index, gb.edge_index) and torch.equal(ga.x, gb.x) and torch.equal(ga.y, gb.y)
    assert sorted(p.relative_to(raw) for p in raw.rglob("*")) == before
    again = G.load_graphs("tiny", raw)  # from the cache folder
    assert all(torch.equal(g.x, h.x) for g, h in zip(direct.graphs, again.graphs))


def test_read_gin_rejects_bad_neighbour(tmp_path):
    p = tmp_path / "bad.txt"
    p.write_text("1\n2 0\n0 1 1\n0 1 5\n")
    with pytest.raises(ValueError, match="bad neighbour"):
        G.read_gin_txt(p)


@pytest.mark.parametrize("fmt", ["tu", "gin"])
def test_degree_features_without_node_labels(tmp_path, tiny, fmt):
    tiny(node_labels=False, reads=fmt)
    if fmt == "tu":
        write_tu(tmp_path / "tu" / "TINY", node_labels=False)
    else:
        write_gin(tmp_path / "gin" / "TINY" / "TINY.txt", node_labels=False)
    gs = G.load_graphs("tiny", tmp_path)
    deg = torch.tensor([2, 2, 2, 1, 1, 3, 1, 1, 1])
    x = torch.cat([g.x for g in gs.graphs])
    assert gs.info["node_features"].startswith("one-hot degree") and x.shape[1] == 4  # max degree 3 < 1000
    assert torch.equal(x.argmax(1), deg)
    z = torch.cat([g.x for g in G.load_graphs("tiny", tmp_path, features="degree").graphs]).view(-1)
    ref = (deg.double() - deg.double().mean()) / deg.double().std()
    assert torch.allclose(z.double(), ref, atol=1e-6)
    c = G.load_graphs("tiny", tmp_path, features="constant")
    assert c.num_features == 1 and all(torch.equal(g.x, torch.ones(g.num_nodes, 1)) for g in c.graphs)


def test_standardized_degree_above_one_hot_limit(monkeypatch, tmp_path, tiny):
    tiny(node_labels=False, reads="gin")
    write_gin(tmp_path / "gin" / "TINY" / "TINY.txt", node_labels=False)
    monkeypatch.setattr(G, "ONE_HOT_DEGREE_MAX", 3)  # max degree 3 is not below it
    gs = G.load_graphs("tiny", tmp_path)
    assert gs.info["node_features"] == "standardized degree" and gs.num_features == 1


def test_missing_files_error(tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        G.load_graphs("ptc_mr", tmp_path)
    msg = str(e.value)
    assert "PTC_MR_A.txt" in msg and "PTC_MR_graph_indicator.txt" in msg and str(tmp_path / "tu" / "PTC_MR") in msg
    assert "pubench prepare ptc_mr --from ../shared/data" in msg


def test_bad_arguments(tmp_path):
    with pytest.raises(KeyError, match="unknown graph data set"):
        G.load_graphs("cora", tmp_path)
    with pytest.raises(ValueError, match="features"):
        G.load_graphs("ptc_mr", tmp_path, features="random")


def test_registered_names():
    for name in ["ptc_mr", "enzymes", "dd", "reddit_binary", "mutag", "proteins", "nci1", "imdb_binary"]:
        spec = DATASETS.get(name)
        assert isinstance(spec, G.GraphDatasetSpec) and sum(spec.class_counts) == spec.graphs


def test_prepare_graphs(tmp_path, tiny):
    """TU files copied, the A file gunzipped from tu_reconstructed/, counts checked."""
    tiny()
    src = tmp_path / "src"
    write_tu(src / "tu" / "TINY")
    a = src / "tu" / "TINY" / "TINY_A.txt"
    gz = src / "tu_reconstructed" / "TINY" / "TINY_A.txt.gz"
    gz.parent.mkdir(parents=True)
    gz.write_bytes(gzip.compress(a.read_bytes()))
    a.unlink()  # as DD: the A file only exists gzipped
    root = tmp_path / "root"
    lines = G.prepare_graphs(src, root, ["tiny"])
    assert lines[0].startswith("tiny: ok (tu, 3 graphs")
    assert (root / "tu" / "TINY" / "TINY_A.txt").read_bytes() == gzip.decompress(gz.read_bytes())
    assert G.prepare_graphs(src, root, ["tiny"])[0].endswith("copied 0 file(s))")  # idempotent


def test_prepare_graphs_gin_fallback_and_count_check(tmp_path, tiny):
    tiny(graphs=4, reads="gin")  # published count disagrees with the files
    src = tmp_path / "src"
    write_gin(src / "gin" / "TINY" / "TINY.txt")
    with pytest.raises(ValueError, match="graphs = 3, published 4"):
        G.prepare_graphs(src, tmp_path / "root", ["tiny"])
    assert (tmp_path / "root" / "gin" / "TINY" / "TINY.txt").is_file()


# ------------------------------------------------------------------ real data
SMALL = ["ptc_mr", "enzymes", "mutag", "imdb_binary"]


@pytest.fixture
def real_root(shared_graph_root):
    return shared_graph_root  # (source, one session root): each set is prepared once (conftest)


def test_real_small_sets(real_root):
    source, root = real_root
    lines = G.prepare_graphs(source, root, SMALL)  # raises on any count / class mismatch
    assert all(": ok (tu," in line for line in lines)
    enz = G.load_graphs("enzymes", root)
    assert enz.num_features == 3 and enz.info["class_counts"] == [100] * 6  # node labels, no attributes
    imdb = G.load_graphs("imdb_binary", root)
    assert imdb.info["node_features"] == "one-hot degree (136 columns)"


def test_real_all_sets(real_root):
    """All 8 sets incl. DD (rebuilt A file) and REDDIT-BINARY (GIN format): ~20 s."""
    source, root = real_root
    lines = G.prepare_graphs(source, root)
    assert len(lines) == len(G.SPECS)
    red = G.load_graphs("reddit_binary", root)
    assert red.info["source"] == "gin" and red.info["node_features"] == "standardized degree"
    assert red.info["max_degree"] >= G.ONE_HOT_DEGREE_MAX
    dd = G.load_graphs("dd", root)
    assert dd.info["source"] == "tu" and dd.num_features == 89


def test_real_dd_from_the_shared_raw_folder_reads_as_the_prepared_copy(real_root):
    """Issue 61: ``PUBENCH_DATA=../shared/data`` read DD from its GIN file (82 one-hot columns;
    InfoGraph accuracy 77.76) where the prepared copy reads the TU files (89 columns; the
    record's 75.47). Now both give the same graphs, and the shared folder is not written."""
    source, root = real_root
    G.prepare_graphs(source, root, ["dd"])
    prepared = G.load_graphs("dd", root)
    raw = G.load_graphs("dd", source)
    assert raw.info["source"] == prepared.info["source"] == "tu" and raw.num_features == prepared.num_features == 89
    assert raw.info["adjacency"].endswith("tu_reconstructed/DD/DD_A.txt.gz")
    for ga, gb in zip(raw.graphs, prepared.graphs):
        assert torch.equal(ga.edge_index, gb.edge_index) and torch.equal(ga.x, gb.x) and torch.equal(ga.y, gb.y)
