"""Batched per-sample augmentations: shapes, ranges, determinism, per-sample variation,
and agreement of the colour ops with torchvision's functional ops."""

from __future__ import annotations

import pytest
import torch
import torchvision.transforms.v2.functional as TF

from pubench.train import augment as A
from pubench.utils.config import ConfigError

MEAN3, STD3 = [0.5, 0.5, 0.5], [0.25, 0.25, 0.25]


def _images(n=8, c=3, h=32, w=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, (n, c, h, w), generator=g, dtype=torch.uint8)


def _gen(seed=1):
    return torch.Generator().manual_seed(seed)


def test_shapes_dtype_range():
    x = _images()
    aug = A.build_augment({"name": "simclr"}, MEAN3, STD3)
    out = aug(x, _gen())
    assert out.shape == (8, 3, 32, 32) and out.dtype == torch.float32
    raw = out * 0.25 + 0.5
    assert raw.min() >= -1e-5 and raw.max() <= 1 + 1e-5
    aug28 = A.build_augment({"name": "mnist_crop", "size": 20}, [0.1307], [0.3081])
    out = aug28(_images(c=1, h=28, w=28), _gen())
    assert out.shape == (8, 1, 20, 20)


def test_deterministic_given_generator():
    x = _images()
    aug = A.build_augment({"name": "simclr", "blur_p": 0.5}, MEAN3, STD3)
    a, b = aug(x, _gen(5)), aug(x, _gen(5))
    assert torch.equal(a, b)
    assert not torch.equal(a, aug(x, _gen(6)))


def test_per_sample_crops_differ():
    # the same image twice in one batch gets two different views
    x = _images(n=1).repeat(2, 1, 1, 1)
    for name in ("simclr", "mnist_crop", "crop"):
        aug = A.build_augment({"name": name}, MEAN3, STD3)
        p = aug.draw(2, 32, 32, 3, _gen(3))
        assert not torch.equal(p["box"][0], p["box"][1])
        out = aug(x, _gen(3))
        assert not torch.allclose(out[0], out[1])


def test_crop_boxes_follow_torchvision_semantics():
    aug = A.build_augment({"name": "crop", "scale": [0.2, 1.0]}, MEAN3, STD3)
    box = aug.crop_params(4000, 32, 32, _gen(0))
    top, left, h, w = box.unbind(1)
    assert (top >= 0).all() and (left >= 0).all() and (top + h <= 32).all() and (left + w <= 32).all()
    assert (h >= 1).all() and (w >= 1).all()
    area = h * w / 1024
    assert area.min() >= 0.15 and area.max() <= 1.0
    assert len(torch.unique(box, dim=0)) > 1000
    assert torch.equal(box, torch.round(box))


def test_full_box_without_flip_is_identity():
    x = _images(n=3)
    aug = A.build_augment({"name": "crop", "flip": 0.0}, [0, 0, 0], [1, 1, 1])
    box = torch.tensor([[0.0, 0.0, 32.0, 32.0]]).repeat(3, 1)
    out = aug(x, _gen(), params={"box": box, "flip": torch.zeros(3, dtype=torch.bool)})
    assert torch.allclose(out, x.float() / 255, atol=1e-5)
    flipped = aug(x, _gen(), params={"box": box, "flip": torch.ones(3, dtype=torch.bool)})
    assert torch.allclose(flipped, x.float().flip(-1) / 255, atol=1e-5)


def test_crop_box_region():
    x = _images(n=1)
    aug = A.build_augment({"name": "crop", "flip": 0.0, "size": 8}, [0, 0, 0], [1, 1, 1])
    box = torch.tensor([[4.0, 10.0, 8.0, 8.0]])
    out = aug(x, _gen(), params={"box": box, "flip": torch.zeros(1, dtype=torch.bool)})
    assert torch.allclose(out[0], x[0, :, 4:12, 10:18].float() / 255, atol=1e-5)


@pytest.mark.parametrize("op,ref", [
    (A.adjust_brightness, TF.adjust_brightness),
    (A.adjust_contrast, TF.adjust_contrast),
    (A.adjust_saturation, TF.adjust_saturation),
])
def test_colour_ops_match_torchvision(op, ref):
    x = _images(n=4).float() / 255
    f = torch.tensor([0.6, 0.9, 1.2, 1.4])
    ours = op(x.clone(), f)
    theirs = torch.stack([ref(x[i], float(f[i])) for i in range(4)])
    assert torch.allclose(ours, theirs, atol=1e-5)


def test_hue_matches_torchvision():
    x = _images(n=4).float() / 255
    f = torch.tensor([-0.1, -0.03, 0.05, 0.1])
    ours = A.adjust_hue(x.clone(), f)
    theirs = torch.stack([TF.adjust_hue(x[i], float(f[i])) for i in range(4)])
    assert torch.allclose(ours, theirs, atol=1e-4)


def test_grayscale_inputs_get_no_colour_ops():
    aug = A.build_augment({"name": "simclr"}, [0.5], [0.25])
    p = aug.draw(4, 28, 28, 1, _gen())
    assert "jitter" not in p
    assert aug(_images(n=4, c=1, h=28, w=28), _gen()).shape == (4, 1, 28, 28)


def test_jitter_probability_and_gray():
    aug = A.build_augment({"name": "simclr"}, MEAN3, STD3)
    p = aug.draw(20000, 32, 32, 3, _gen())
    assert abs(p["jitter_applied"].float().mean() - 0.8) < 0.02
    assert abs(p["gray"].float().mean() - 0.2) < 0.02
    assert abs(p["flip"].float().mean() - 0.5) < 0.02
    j = p["jitter"][p["jitter_applied"]]
    assert j[:, 0].min() >= 0.6 and j[:, 0].max() <= 1.4 and j[:, 3].abs().max() <= 0.1
    # a sample drawn gray is gray: all channels equal
    x = _images(n=64)
    out = aug(x, _gen(2))
    p = aug.draw(64, 32, 32, 3, _gen(2))
    g = p["gray"]
    assert g.any()
    raw = out[g] * 0.25 + 0.5
    assert torch.allclose(raw[:, 0], raw[:, 1], atol=1e-5) and torch.allclose(raw[:, 1], raw[:, 2], atol=1e-5)


def test_blur_runs_and_smooths():
    x = _images(n=4)
    aug = A.build_augment({"name": "simclr", "blur_p": 1.0, "jitter_p": 0.0, "gray_p": 0.0, "flip": 0.0,
                           "scale": [1.0, 1.0], "ratio": [1.0, 1.0], "blur_sigma": [2.0, 2.0]}, [0, 0, 0], [1, 1, 1])
    out = aug(x, _gen())
    assert out.shape == x.shape
    assert out.std() < (x.float() / 255).std()


def test_config_errors():
    with pytest.raises(ConfigError, match="unknown key"):
        A.build_augment({"name": "simclr", "colour": 1}, MEAN3, STD3)
    with pytest.raises(ConfigError, match="unknown augment"):
        A.build_augment({"name": "autoaugment"}, MEAN3, STD3)
    with pytest.raises(ConfigError, match="scale"):
        A.build_augment({"name": "crop", "scale": [0.5, 0.2]}, MEAN3, STD3)
    with pytest.raises(ValueError, match="uint8"):
        A.build_augment({"name": "crop"}, MEAN3, STD3)(torch.zeros(2, 3, 8, 8), _gen())


def test_simaugment_is_supcons_recipe():
    aug = A.build_augment({"name": "simaugment"}, MEAN3, STD3)
    c = aug.cfg
    assert (c.scale, c.jitter, c.jitter_p, c.gray_p, c.blur_p, c.flip) == ([0.2, 1.0], [0.4, 0.4, 0.4, 0.1], 0.8, 0.2,
                                                                          0.0, 0.5)


def test_randaugment_deterministic_and_leaves_the_global_rng_alone():
    x = _images()
    aug = A.build_augment({"name": "randaugment", "num_ops": 2, "magnitude": 9}, MEAN3, STD3)
    torch.manual_seed(0)
    before = torch.rand(1)
    torch.manual_seed(0)
    a = aug(x, _gen(5))
    assert torch.equal(torch.rand(1), before)                 # the global RNG is forked
    assert torch.equal(a, aug(x, _gen(5))) and not torch.equal(a, aug(x, _gen(6)))
    assert a.shape == x.shape and a.dtype == torch.float32
    # no operation, full crop, no flip: only the normalisation is left
    ident = A.build_augment({"name": "randaugment", "num_ops": 0, "scale": [1.0, 1.0], "ratio": [1.0, 1.0],
                             "flip": 0.0}, MEAN3, STD3)
    assert torch.allclose(ident(x, _gen()), A.to_float(x, MEAN3, STD3), atol=1e-5)
    with pytest.raises(ConfigError, match="magnitude"):
        A.build_augment({"name": "randaugment", "magnitude": 31}, MEAN3, STD3)


def _torchvision_per_image(x, num_ops, magnitude, seed):
    """What RandAugment computed before the batched replay: torchvision one image at a time,
    the global RNG forked and seeded with ``seed``."""
    from torchvision.transforms import v2

    ra = v2.RandAugment(num_ops=num_ops, magnitude=magnitude)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return torch.stack([ra(img) for img in x])


@pytest.mark.parametrize("trial", range(6))
def test_batched_randaugment_equals_torchvision_per_image_bit_for_bit(trial):
    """Random images (RGB and grayscale, odd sizes, low-contrast ones for equalize and
    autocontrast's edge cases) and seeds, WConPU's (2, 9) and PiCO's (3, 15) settings and
    the extremes of the magnitude: every pixel equal to torchvision's one-image-at-a-time
    output."""
    g = torch.Generator().manual_seed(100 + trial)
    n = int(torch.randint(1, 160, (1,), generator=g))
    c = 1 if trial % 3 == 0 else 3
    h, w = (int(v) for v in torch.randint(6, 40, (2,), generator=g))
    x = torch.randint(0, 256, (n, c, h, w), generator=g, dtype=torch.uint8)
    if trial % 2:
        x = (x // 64 + 100).to(torch.uint8)
    for num_ops, magnitude in ((2, 9), (3, 15), (1, 30), (4, 0), (0, 9)):
        seed = int(torch.randint(0, 2**62, (1,), generator=g))
        want = _torchvision_per_image(x, num_ops, magnitude, seed)
        assert torch.equal(A.rand_augment_batch(x, num_ops, magnitude, seed), want), (num_ops, magnitude)


def test_batched_randaugment_draws_are_torchvisions_and_every_operation_is_checked():
    """Every one of torchvision's 14 operations, with both signs where it has one, comes up
    in the draws the equality test covers, and the replayed draws leave the global RNG alone."""
    torch.manual_seed(3)
    before = torch.rand(1)
    torch.manual_seed(3)
    draws = A.rand_augment_draws(400, 3, 15, 32, 32, seed=11)
    assert torch.equal(torch.rand(1), before)
    seen = {op for ops in draws for op in ops}
    names = {name for name, _ in seen}
    assert len(names) == 14 and {"Identity", "Equalize", "Sharpness", "Rotate", "Posterize"} <= names
    assert ("Rotate", 15.0) in seen and ("Rotate", -15.0) in seen
    x = _images(n=400, seed=4)
    assert torch.equal(A.rand_augment_batch(x, 3, 15, 11), _torchvision_per_image(x, 3, 15, 11))


def test_randaugment_view_is_the_per_image_pipelines_view():
    """The whole key view (RandAugment, then crop, flip and normalisation) is what the
    one-image-at-a-time pipeline gave for the same generator state."""
    x = _images(n=64, seed=9)
    aug = A.build_augment({"name": "randaugment", "num_ops": 2, "magnitude": 9}, MEAN3, STD3)
    gen = _gen(21)
    params = aug.draw(64, 32, 32, 3, gen)
    seed = int(torch.randint(0, 2**62, (1,), generator=gen))
    want = aug.normalize(aug.crop(_torchvision_per_image(x, 2, 9, seed).float().div_(255.0), params["box"],
                                  params["flip"]))
    assert torch.equal(aug(x, _gen(21)), want)
