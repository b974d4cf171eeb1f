"""The float views of uint8 image sets (pubench.data.pixels): normalization statistics in
chunks that keep the committed records' numbers."""

from __future__ import annotations

import pytest
import torch

from pubench.data.pixels import channel_stats, stats_chunk


def test_channel_stats():
    x = torch.zeros(4, 2, 3, 3, dtype=torch.uint8)
    x[:, 1] = 255
    x[:2, 0] = 255
    mean, std = channel_stats(x, chunk=3)
    assert mean == pytest.approx([0.5, 1.0]) and std[0] == pytest.approx(0.5) and std[1] == pytest.approx(0, abs=1e-5)


def test_channel_stats_chunks_large_images_by_values_and_keeps_small_ones_whole():
    """Images up to 3x32x32 are summed 4,096 at a time, as before the chunk was sized (the committed
    records' normalization is unchanged); larger images in fewer per chunk, with the same statistics."""
    assert stats_chunk(torch.zeros(5, 3, 32, 32, dtype=torch.uint8)) == 4096
    assert stats_chunk(torch.zeros(5, 1, 28, 28, dtype=torch.uint8)) == 4096
    assert stats_chunk(torch.zeros(5, 3, 96, 96, dtype=torch.uint8)) == 4096 * 32 * 32 // (96 * 96)
    assert stats_chunk(torch.zeros(5, 3, 4096, 4096, dtype=torch.uint8)) == 1
    x = torch.randint(0, 256, (40, 3, 96, 96), generator=torch.Generator().manual_seed(1), dtype=torch.uint8)
    whole = channel_stats(x, chunk=40)
    mean, std = channel_stats(x)
    assert mean == pytest.approx(whole[0], rel=1e-12) and std == pytest.approx(whole[1], rel=1e-12)
    ref = x.double() / 255.0
    assert mean == pytest.approx(ref.mean(dim=(0, 2, 3)).tolist(), rel=1e-12)
    assert std == pytest.approx(ref.std(dim=(0, 2, 3), unbiased=False).tolist(), rel=1e-9)
