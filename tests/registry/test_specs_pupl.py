"""The pupl (paper 003) specs: shape, exact reported values, nulls, and a few resolved configs.

Paper 003's text conversion lost almost every number of Tables 1-3 and all figure and table captions:
those cells are null with a note, the figures have no reported cells, and each caption is a short
description from the section that cites it, marked as such.
"""

from __future__ import annotations

import pytest

from pubench.registry import get_spec
from pubench.registry.changes import deviation_lines

ISSUE = "reduced config not designed yet (issue 5: PU image track)"
DATASETS6 = ["F-MNIST-I", "F-MNIST-II", "CIFAR-I", "CIFAR-II", "STL-I", "STL-II"]
DATASETS4 = ["CIFAR-III", "SVHN-I", "STL-III", "Alzheimer"]


def cell(spec, row, col):
    found = [c for c in spec.reported if (c.row, c.col) == (row, col)]
    assert len(found) == 1, (row, col)
    return found[0]


# id, kind, task, rows, cols, runnable cells, reported cells, reported numbers
SHAPES = [
    ("table1-pupl", "table", "contrastive_probe", 6, 4, 24, 24, 0),
    ("table2-pupl", "table", "contrastive_probe", 12, 7, 72, 84, 2),
    ("table3-pupl", "table", "pu_benchmark", 19, 7, 114, 133, 0),
    ("table4-pupl", "table", "pu_benchmark", 14, 5, 56, 70, 64),
    ("fig2-pupl", "figure", "contrastive_probe", 3, 15, 45, 0, 0),
    ("fig3-pupl", "figure", "contrastive_probe", 5, 5, 25, 0, 0),
    ("fig5-pupl", "figure", "contrastive_probe", 2, 15, 30, 0, 0),
    ("fig8-pupl", "figure", "contrastive_probe", 4, 16, 64, 0, 0),
    ("fig10-pupl", "figure", "contrastive_probe", 3, 11, 33, 0, 0),
    ("fig11-pupl", "figure", "contrastive_probe", 3, 10, 30, 0, 0),
    ("fig12-pupl", "figure", "contrastive_probe", 9, 5, 45, 0, 0),
    ("fig13-pupl", "figure", "contrastive_probe", 3, 7, 21, 0, 0),
    ("fig14-pupl", "figure", "contrastive_probe", 5, 8, 40, 0, 0),
]


@pytest.mark.parametrize("sid, kind, task, rows, cols, cells, reported, numbers", SHAPES)
def test_shape(sid, kind, task, rows, cols, cells, reported, numbers):
    s = get_spec(sid)
    assert s.paper == "pupl" and s.kind == kind and s.experiment["task"] == task
    assert (len(s.rows), len(s.cols)) == (rows, cols)
    assert len(s.cells()) == cells
    assert len(s.reported) == reported
    assert sum(c.mean is not None for c in s.reported) == numbers
    assert all(c.note for c in s.reported if c.mean is None)
    assert s.reported_seeds == 5
    assert s.tiers["paper"].seeds == 5 and s.tiers["reduced"].seeds == 3 and s.tiers["smoke"].seeds == 1
    assert s.decisions
    if kind == "figure":
        assert s.col_groups or s.row_groups or len(s.cols) <= 7


def test_table1_all_null():
    s = get_spec("table1-pupl")
    assert s.cols == ["ssCL", "dCL†", "puCL", "puNCE†"]
    assert s.rows[0] == "MNIST-I n_L=1k" and s.rows[-1] == "CIFAR-III n_L=10k"
    c = cell(s, "CIFAR-III n_L=3k", "puNCE†")
    assert c.mean is None and "lost in the text conversion" in c.note
    assert cell(s, "MNIST-I n_L=1k", "ssCL").mean is None
    # prior-aware losses get the exact prior of the unlabeled set
    p = s.resolve("paper", "CIFAR-III n_L=3k", "puNCE†")["params"]
    assert p["pretrain"]["loss"] == {"temperature": 0.5, "name": "punce", "prior": 17000 / 47000}
    assert p["data"]["split"] == {"kind": "pu", "n_labeled": 3000, "scheme": "single_training_set"}
    p = s.resolve("paper", "MNIST-I n_L=10k", "dCL†")["params"]
    assert p["pretrain"]["loss"]["tau_plus"] == 0.41016 and p["model"]["backbone"]["name"] == "mlp_001"
    assert p["downstream"]["name"] == "pupl"


def test_table2_values():
    s = get_spec("table2-pupl")
    assert s.cols == DATASETS6 + ["Mean"]
    c = cell(s, "ssCL + nnPU† (1)", "F-MNIST-I")
    assert (c.mean, c.std) == (86.6, None)
    c = cell(s, "pu-sCL + nnPU† (1)", "F-MNIST-I")
    assert (c.mean, c.std) == (72.5, None)
    c = cell(s, "puCL + puPL (2)", "STL-II")
    assert c.mean is None and "lost" in c.note
    assert cell(s, "ssCL + nnPU† (1)", "Mean").mean is None
    assert not any(col == "Mean" for _, col in s.cells())
    # block 2 on STL uses 2,250 labeled positives; the prior comes from the PU data set catalogue
    p = s.resolve("paper", "puCL + nnPU† (2)", "STL-I")["params"]
    assert p["data"]["split"]["n_labeled"] == 2250 and p["data"]["prior"] == 0.51
    assert p["downstream"]["risk"] == "nnpu" and p["pretrain"]["loss"]["name"] == "supcon_pu"
    p = s.resolve("paper", "pu-sCL + puPL (1)", "CIFAR-II")["params"]
    assert p["data"]["split"]["n_labeled"] == 1000 and p["data"]["labels"]["positive"] == [2, 3, 4, 5, 6, 7]
    assert p["model"]["backbone"]["name"] == "cnn7_003" and p["pretrain"]["loss"]["name"] == "supcon"


def test_table3_values():
    s = get_spec("table3-pupl")
    assert s.rows[:3] == ["uPU† (1)", "nnPU† (1)", "nnPU† (MixUp) (1)"] and s.rows[-2] == "puNCE(puPL)† (2)"
    # the reference row: PAN (1) with the released discriminator and nothing else changed
    ref, pan = (s.resolve("paper", r, "CIFAR-I")["params"] for r in ("PAN released D (1)", "PAN (1)"))
    assert ref["pu_method"].pop("discriminator") == "released" and ref == pan
    assert s.row_groups["Reference rows (not in the paper)"] == ["PAN released D (1)"]
    assert all("no such row" in c.note for c in s.reported if c.row == "PAN released D (1)")
    assert all(c.mean is None for c in s.reported)
    assert cell(s, "P3mix-c (1)", "STL-II").mean is None
    assert cell(s, "RP (2)", "Mean").note
    # dispatch: baselines carry pu_method, contrastive rows pretrain + downstream
    p = s.resolve("paper", "Self-PU† (1)", "F-MNIST-I")["params"]
    assert p["pu_method"]["name"] == "self_pu" and "pretrain" not in p
    assert (p["pu_method"]["pace1"], p["pu_method"]["pace2"]) == (0.2, 0.3)     # 003 App. B.2
    assert p["model"]["backbone"]["name"] == "lenet5" and p["data"]["prior"] == 0.3
    p = s.resolve("paper", "puNCE(puPL)† (2)", "STL-II")["params"]
    assert "pu_method" not in p and p["pretrain"]["loss"]["prior"] == 0.49
    assert p["data"]["split"]["n_labeled"] == 2250 and p["downstream"]["name"] == "pupl"
    p = s.resolve("paper", "vPU† (2)", "CIFAR-I")["params"]
    assert p["pu_method"]["lam"] == 0.03 and p["train"]["optimizer"]["lr"] == 3.0e-5
    # vPU's released commands (HC-Feynman/vpu README): STL-10 lam 0.3, lr 1e-4; F-MNIST lam 0.3, lr 3e-4
    for block in ("(1)", "(2)"):
        p = s.resolve("paper", f"vPU† {block}", "STL-II")["params"]
        assert p["pu_method"]["lam"] == 0.3 and p["train"]["optimizer"]["lr"] == 1.0e-4
        p = s.resolve("paper", f"vPU† {block}", "F-MNIST-I")["params"]
        assert p["pu_method"]["lam"] == 0.3 and p["train"]["optimizer"]["lr"] == 3.0e-4
        assert p["train"]["optimizer"]["betas"] == [0.5, 0.99] and p["pu_method"]["iterations_per_epoch"] == 30
        assert p["pu_method"]["model_selection"] == "validation_loss"


def test_table4_values():
    s = get_spec("table4-pupl")
    assert s.cols == DATASETS4 + ["Mean"]
    c = cell(s, "uPU†", "CIFAR-III")
    assert (c.mean, c.std) == (88.41, 0.41)
    c = cell(s, "uPU†", "Mean")
    assert (c.mean, c.std) == (83.83, None) and "83.3275" in c.note
    c = cell(s, "RP", "Alzheimer")
    assert (c.mean, c.std) == (63.02, 2.33) and "62.03" in c.note
    c = cell(s, "PUbN", "Alzheimer")
    assert (c.mean, c.std) == (70.00, 1.17)
    c = cell(s, "Dist-PU", "SVHN-I")
    assert (c.mean, c.std) == (85.10, 0.33)
    c = cell(s, "WConPU†", "Mean")
    assert (c.mean, c.std) == (89.69, None)
    # the puCL(puPL) row, printed one column to the left
    assert cell(s, "puCL(puPL)", "CIFAR-III").mean is None
    assert (cell(s, "puCL(puPL)", "SVHN-I").mean, cell(s, "puCL(puPL)", "SVHN-I").std) == (90.80, 1.01)
    assert (cell(s, "puCL(puPL)", "STL-III").mean, cell(s, "puCL(puPL)", "STL-III").std) == (96.22, 0.95)
    assert (cell(s, "puCL(puPL)", "Alzheimer").mean, cell(s, "puCL(puPL)", "Alzheimer").std) == (73.91, 0.86)
    assert cell(s, "puCL(puPL)", "Mean").mean == 89.58
    assert all(cell(s, "puNCE(puPL)†", c).mean is None for c in s.cols)
    # configs
    p = s.resolve("paper", "WConPU†", "Alzheimer")["params"]
    assert p["pu_method"]["queue"] == 4096 and p["train"]["batch_size"] == 8 and p["data"]["prior"] == 0.5
    p = s.resolve("paper", "puNCE(puPL)†", "SVHN-I")["params"]
    assert "train" not in p and "pu_method" not in p
    assert p["pretrain"]["loss"]["prior"] == 0.46 and p["model"]["backbone"]["name"] == "cnn13"
    assert s.resolve("paper", "vPU†", "STL-III")["params"]["data"]["labels"]["positive"] == [0, 2, 8, 9]
    # vPU under 004's protocol: SGD / cosine / 800 epochs, the last epoch's model; lam of the released commands
    p = s.resolve("paper", "vPU†", "STL-III")["params"]
    assert p["pu_method"]["lam"] == 0.3 and p["pu_method"]["model_selection"] == "last_epoch"
    assert s.resolve("paper", "vPU†", "CIFAR-III")["params"]["pu_method"]["lam"] == 0.03


def test_figures_resolve():
    s = get_spec("fig13-pupl")
    p = s.resolve("paper", "gamma=0.05 (n_L=500)", "eps=-0.5")["params"]
    assert p["pretrain"]["loss"] == {"name": "punce", "temperature": 0.5, "prior": 0.25}
    assert p["data"]["split"]["n_labeled"] == 500
    s = get_spec("fig12-pupl")
    p = s.resolve("paper", "sCL / CIFAR-medium", "gamma=0.25")["params"]
    assert p["data"]["split"] == {"kind": "pnu", "labeled_fraction": 1.0}
    assert s.resolve("paper", "puCL / CIFAR-medium", "gamma=0.25")["params"]["data"]["split"]["n_labeled"] == 4000
    s = get_spec("fig8-pupl")
    p = s.resolve("paper", "dCL†", "CIFAR-III gamma=0.1")["params"]
    assert p["pretrain"]["loss"]["tau_plus"] == 0.4 and p["data"]["split"]["n_labeled"] == 2000
    s = get_spec("fig10-pupl")
    p = s.resolve("paper", "sCL-PU", "(b) pi=0.9")["params"]
    assert p["data"]["prior"] == 0.9 and p["data"]["split"]["n_labeled"] == 1000
    assert p["model"]["backbone"]["name"] == "resnet34"


@pytest.mark.parametrize("sid", [s[0] for s in SHAPES])
def test_pupl_downstream_names_clusters_by_the_positive_mean(sid):
    """Every puPL cell states the variant (no default): nearest_positive_mean on L2-normalized
    features (decisions: the printed Algorithm 2 orientation inverts some draws)."""
    s = get_spec(sid)
    assert s.version >= 2
    seen = 0
    for tier in s.tiers:
        for row, col in s.cells():
            if s.unavailable_reason(tier, row, col):
                continue
            down = s.resolve(tier, row, col)["params"].get("downstream") or {}
            if down.get("name") == "pupl":
                seen += 1
                assert down["orientation"] == "nearest_positive_mean" and down["normalize"] is True, (tier, row, col)
    assert seen and any("nearest_positive_mean" in d for d in s.decisions)


# table4-pupl's baseline rows are 004's Table II rows (003 copies 004's numbers): row -> table2-wconpu row
TABLE4_TO_TABLE2 = {"uPU†": "uPU", "nnPU†": "nnPU", "RP": "RP", "PUSB": "PUSB", "PUbN": "PUBN", "Self-PU†": "Self-PU",
                    "aPU": "aPU", "vPU†": "VPU", "ImbPU": "ImbPU", "Dist-PU": "Dist-PU", "PiCO": "PiCO",
                    "WConPU†": "WConPU"}


def test_table4_reduced_tier_is_table2_wconpus():
    """CIFAR-III is 004's CIFAR-10: every baseline row runs exactly table2-wconpu's reduced config of
    its method (so the two cannot drift), the puPL rows table3-pupl's reduced pre-training on the
    same data, and the other columns (data not here) do not run at the reduced or smoke tier."""
    t4, t2 = get_spec("table4-pupl"), get_spec("table2-wconpu")
    assert set(TABLE4_TO_TABLE2) == {r for r in t4.rows if "puPL" not in r}
    for row, row_t2 in TABLE4_TO_TABLE2.items():
        for tier in ("paper", "reduced"):
            assert t4.resolve(tier, row, "CIFAR-III")["params"] == t2.resolve(tier, row_t2, "CIFAR-10")["params"], (
                tier, row)
    assert t4.resolve("smoke", "WConPU†", "CIFAR-III")["params"] == t2.resolve("smoke", "WConPU", "CIFAR-10")["params"]
    for tier in ("reduced", "smoke"):
        running = {c for c in t4.cells() if t4.unavailable_reason(tier, *c) is None}
        assert running == {(r, "CIFAR-III") for r in t4.rows}, tier
        assert "SVHN" in t4.unavailable_reason(tier, "PiCO", "SVHN-I")
        assert "Alzheimer" in t4.unavailable_reason(tier, "puCL(puPL)", "Alzheimer")
        assert deviation_lines(t4, tier)
    # the puPL rows: table3-pupl's reduced CIFAR pre-training and puPL, on the baselines' data and backbone
    base = t4.resolve("reduced", "nnPU†", "CIFAR-III")["params"]
    t3 = get_spec("table3-pupl").resolve("reduced", "puCL(puPL) (1)", "CIFAR-I")["params"]
    for row, loss in (("puCL(puPL)", {"name": "supcon_pu", "temperature": 0.5}),
                      ("puNCE(puPL)†", {"name": "punce", "temperature": 0.5, "prior": 0.4})):
        p = t4.resolve("reduced", row, "CIFAR-III")["params"]
        assert "train" not in p and "pu_method" not in p
        assert p["data"] == base["data"] and p["model"]["backbone"] == base["model"]["backbone"]
        assert p["pretrain"] == dict(t3["pretrain"], loss=loss)
        assert p["downstream"] == t3["downstream"] and p["model"]["projector"] == t3["model"]["projector"]
        smoke = t4.resolve("smoke", row, "CIFAR-III")["params"]
        assert "train" not in smoke and (smoke["pretrain"]["epochs"], smoke["downstream"]["epochs"]) == (1, 1)
    # the paper tier is untouched by the tiers: the puPL rows keep 003's recipe
    paper = t4.resolve("paper", "puCL(puPL)", "CIFAR-III")["params"]
    assert (paper["pretrain"]["epochs"], paper["pretrain"]["batch_size"], paper["downstream"]["epochs"]) == (300, 1024, 100)


def test_table4_reduced_mean_is_not_averaged_over_missing_columns(tmp_path):
    """The Mean column averages the four dataset columns per seed; at the reduced tier only
    CIFAR-III runs, so a row gets no Mean (not its CIFAR-III value) and the report prints none."""
    from pubench.jobs import expand
    from pubench.report import collect
    from pubench.report.markdown import render_markdown
    from pubench.store import ResultStore

    t4 = get_spec("table4-pupl")
    store = ResultStore(tmp_path)
    for job in expand(t4, "reduced", 2).jobs:
        store.write_ok(job, {"acc": 70.0 + job.seed_index}, {}, {})
    res = collect(t4, "reduced", store)
    assert res.get("PiCO", "CIFAR-III", "acc").mean == 70.5
    assert all(res.get(r, "Mean", "acc") is None for r in t4.rows)
    table_rows = [line.split("|")[1:-1] for line in render_markdown(res).splitlines()
                  if line.startswith("| PiCO ") or line.startswith("| puCL(puPL) ")]
    assert len(table_rows) == 2
    for cells in table_rows:  # CIFAR-III ours / paper's, then SVHN-I, STL-III, Alzheimer, Mean: ours empty
        assert cells[1].strip().startswith("70.50 ± 0.71 (2)")
        assert all(c.strip().startswith("— /") for c in cells[2:]), cells


# ---- captions the text conversion lost (issue 39) ------------------------------------------
LOST = ["table1-pupl", "table2-pupl", "table3-pupl", "table4-pupl", "fig2-pupl", "fig3-pupl", "fig5-pupl", "fig8-pupl",
        "fig10-pupl", "fig11-pupl", "fig12-pupl", "fig13-pupl", "fig14-pupl"]
PAPER = __import__("pathlib").Path(__file__).resolve().parents[3] / "shared" / "papers" / "003_2327adf4bb5c4004.txt"


@pytest.mark.parametrize("spec_id", LOST)
def test_lost_captions_are_marked_descriptions_from_the_text(spec_id):
    """Each lost caption says it was lost and which section it is described from (or that the
    text never names it), then describes it; every number in it is one the paper's text prints
    (section and equation numbers, data set names, years): none is invented."""
    import re

    from pubench.report.layout import caption_parts

    caption = get_spec(spec_id).caption
    marker, text = caption_parts(caption)
    assert marker is not None and re.search(r"described from (Sec\. \d|its surviving header)", marker), caption
    assert "never names" in marker or "Sec." in marker
    assert len(text) > 40 and not text.startswith("(")
    if PAPER.exists():
        paper = PAPER.read_text(encoding="utf-8")
        for number in set(re.findall(r"\d+(?:\.\d+)?", caption)):
            assert number in paper, f"{spec_id}: {number} is not in the paper's text"
