"""The figure renderer's x-axes and legend names (pubench/report/plot.py)."""

from __future__ import annotations

from pubench.report.plot import axis_values, is_geometric, is_irregular, legend_names


def test_axis_values_reads_panel_tag_name_and_magnitude_suffix():
    xs, name, ticks = axis_values(["(a) n_P=1k", "(a) n_P=3k", "(a) n_P=10k"])
    assert xs == [1000.0, 3000.0, 10000.0]
    assert name == "n_P"
    assert ticks == ["1k", "3k", "10k"]
    assert axis_values(["alpha=0.5", "alpha=1.0"]) == ([0.5, 1.0], "alpha", ["0.5", "1.0"])
    assert axis_values(["(c) epoch=10", "(c) epoch=100"])[:2] == ([10.0, 100.0], "epoch")
    # a panel's fixed parameter before the last comma is not the axis
    assert axis_values(["gamma=0.1, epoch=25", "gamma=0.1, epoch=50"])[:2] == ([25.0, 50.0], "epoch")
    assert axis_values(["CIFAR-hard gamma=0.01", "CIFAR-hard gamma=0.25"])[:2] == ([0.01, 0.25], "gamma")


def test_axis_values_falls_back_to_positions():
    assert axis_values(["CIFAR", "STL"]) == ([0, 1], None, None)
    # different quantities before '=' are not one axis
    assert axis_values(["N=16", "gamma=0.2"]) == ([0, 1], None, None)


def test_geometric_grids_get_a_log_axis_even_grids_a_linear_one():
    assert is_geometric([1000, 3000, 10000])
    assert is_geometric([16, 32, 64, 128, 256, 512])
    assert not is_geometric([10, 20, 30, 40, 50, 60, 70, 80, 90, 100])
    assert not is_geometric([0.05, 0.1, 0.15, 0.2, 0.25, 0.3])
    assert not is_geometric([0.0, 0.2, 0.4])  # zero cannot go on a log axis
    assert not is_geometric([1, 10])  # two points: no spacing to compare


def test_legend_names_drop_the_first_word_every_row_shares():
    assert legend_names(["probe PN", "probe uPU", "probe nnPU"]) == ["PN", "uPU", "nnPU"]
    assert legend_names(["init puNCE", "init random"]) == ["puNCE", "random"]
    assert legend_names(["infoNCE", "DCL", "SCL", "puNCE"]) == ["infoNCE", "DCL", "SCL", "puNCE"]
    assert legend_names(["probe PN", "init random"]) == ["probe PN", "init random"]
    assert legend_names(["probe PN"]) == ["probe PN"]


def test_grids_even_on_neither_scale_are_drawn_at_positions():
    assert is_irregular([0.9, 0.99, 0.999, 0.9999])  # 004 Fig. 3's alpha and lambda
    assert not is_irregular([1e-3, 1e-2, 1e-1, 1.0])  # geometric: a log axis
    assert not is_irregular([0.05, 0.1, 0.12, 0.15, 0.2])  # fig3-pucl's alpha: near even, linear
    assert not is_irregular([0.2, 0.3, 0.4, 0.5, 0.6])
    assert not is_irregular([1, 2])
