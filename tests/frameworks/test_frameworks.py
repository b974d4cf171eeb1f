"""MoCo and CMC (pubench.frameworks.moco, pubench.frameworks.cmc): queue and memory-bank updates
against hand-checked cases and loop-by-loop references, the exact momentum update, the
logits they hand to the losses, and a few training steps of every framework with every
negative correction that has a logits form."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from pubench.frameworks import FRAMEWORKS
from pubench.frameworks.cmc import CMC, LabViewsEncoder, bank_update, rgb_to_lab
from pubench.frameworks.moco import MoCo, enqueue, momentum_update, split_forward
from pubench.frameworks.pretrain import PretrainConfig, build_framework, build_models, pretrain
from pubench.losses.base import with_logits_form
from pubench.models.heads import projection_head
from pubench.train.context import PLAIN
from pubench.train.optim import optimizer_config
from pubench.utils.config import ConfigError
from tests.reference import naive_frameworks as naive

pytestmark = pytest.mark.usefixtures("one_thread")

MEAN, STD = [0.5, 0.45, 0.4], [0.25, 0.25, 0.25]
MOCO = {"name": "moco", "queue": 24, "momentum": 0.9, "bn_splits": 2}
CMC_BLOCK = {"name": "cmc", "negatives": 12, "bank_momentum": 0.5}


class TinyConv(nn.Module):
    def __init__(self, c: int = 3, out_dim: int = 8):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(c, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                                 nn.AdaptiveAvgPool2d(2), nn.Flatten(), nn.Linear(16, out_dim))
        self.out_dim = out_dim

    def forward(self, x):
        return self.net(x)


def models(block, seed=0):
    torch.manual_seed(seed)
    return build_models(block, lambda ch, s: TinyConv(ch), lambda d, s: projection_head(d, 8, 4), 3, (1, 2),
                        MEAN, STD)


def toy_images(n=40, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.nn.functional.interpolate(torch.rand(n, 3, 3, 3, generator=g), size=8, mode="bilinear")
    return (x * 255).to(torch.uint8)


# ------------------------------------------------------------------ queue, momentum, bank
def test_enqueue_hand_checked():
    queue = torch.arange(10, dtype=torch.float32).view(5, 2)
    keys = -torch.arange(1, 7, dtype=torch.float32).view(3, 2)
    ptr = enqueue(queue, 3, keys)
    assert ptr == 1
    # slots 3, 4, 0 take the keys in order; 1 and 2 keep the old entries
    assert queue.tolist() == [[-5, -6], [2, 3], [4, 5], [-1, -2], [-3, -4]]
    ptr = enqueue(queue, ptr, keys[:2])
    assert ptr == 3 and queue[1:3].tolist() == [[-1, -2], [-3, -4]]


def test_enqueue_matches_loop_and_refuses_batch_over_queue():
    g = torch.Generator().manual_seed(1)
    queue, ptr = torch.randn(7, 3, generator=g), 0
    ref = queue.tolist()
    for b in (3, 3, 3, 7, 2):
        keys = torch.randn(b, 3, generator=g)
        ref, ref_ptr = naive.enqueue(ref, ptr, keys.tolist())
        ptr = enqueue(queue, ptr, keys)
        assert ptr == ref_ptr
        torch.testing.assert_close(queue, torch.tensor(ref), rtol=0, atol=0)
    with pytest.raises(ValueError, match="does not fit"):
        enqueue(queue, 0, torch.zeros(8, 3))


def test_momentum_update_exact():
    key, query = nn.Linear(3, 2), nn.Linear(3, 2)
    with torch.no_grad():  # dyadic values: m k + (1 - m) q is exact in float32
        key.weight.copy_(torch.tensor([[1.0, 2.0, -4.0], [0.5, 8.0, 0.0]]))
        key.bias.copy_(torch.tensor([2.0, -2.0]))
        query.weight.copy_(torch.tensor([[3.0, 0.0, 4.0], [-0.5, 0.0, 1.0]]))
        query.bias.copy_(torch.tensor([0.0, 6.0]))
    momentum_update(key, query, 0.75)
    assert key.weight.tolist() == [[1.5, 1.5, -2.0], [0.25, 6.0, 0.25]]
    assert key.bias.tolist() == [1.5, 0.0]
    assert query.weight.tolist() == [[3.0, 0.0, 4.0], [-0.5, 0.0, 1.0]]  # the query is untouched
    momentum_update(key, query, 1.0)
    assert key.bias.tolist() == [1.5, 0.0]
    momentum_update(key, query, 0.0)
    assert torch.equal(key.weight, query.weight)


def test_bank_update_hand_checked_and_loop():
    bank = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    bank_update(bank, torch.tensor([1]), torch.tensor([[1.0, 0.0]]), 0.5)
    s = 1 / math.sqrt(2)
    torch.testing.assert_close(bank, torch.tensor([[1.0, 0.0], [s, s], [0.6, 0.8]]))
    g = torch.Generator().manual_seed(2)
    bank = torch.nn.functional.normalize(torch.randn(6, 3, generator=g), dim=1)
    idx, z = torch.tensor([4, 0, 2]), torch.randn(3, 3, generator=g)
    ref = naive.bank_update(bank.tolist(), idx.tolist(), z.tolist(), 0.3)
    bank_update(bank, idx, z, 0.3)
    torch.testing.assert_close(bank, torch.tensor(ref))


# ------------------------------------------------------------------ MoCo
def test_moco_step_logits_then_momentum_and_queue():
    enc, proj = models(MOCO)
    fw = build_framework(MOCO, enc, proj)
    fw.prepare(40, torch.Generator().manual_seed(0))
    assert fw.queue.shape == (24, 4)
    torch.testing.assert_close(fw.queue.norm(dim=1), torch.ones(24))
    queue0 = fw.queue.clone()
    v1, v2 = torch.randn(6, 3, 8, 8), torch.randn(6, 3, 8, 8)
    fw.generator.manual_seed(5)
    pos, neg, mask = fw.logits([v1, v2], torch.arange(6), 0.2)
    assert mask is None and pos.shape == (6,) and neg.shape == (6, 24)
    fw.generator.manual_seed(5)
    q, k = fw.projections(v1, v2)
    assert not k.requires_grad and q.requires_grad
    ref_pos, ref_neg = naive.moco_logits(q.tolist(), k.tolist(), queue0.tolist(), 0.2)
    torch.testing.assert_close(pos, torch.tensor(ref_pos))
    torch.testing.assert_close(neg, torch.tensor(ref_neg))
    # one optimizer step on the query encoder, then the framework's updates
    opt = torch.optim.SGD([p for m in fw.modules() for p in m.parameters()], lr=0.5)
    key_before = [p.clone() for p in fw.key_encoder.parameters()]
    keys = k.clone()
    pos.mean().backward()
    opt.step()
    fw.after_step()
    query_after = [p for m in (enc, proj) for p in m.parameters()]
    for kb, ka, qa in zip(key_before, fw.key_encoder.parameters(), query_after, strict=True):
        torch.testing.assert_close(ka, 0.9 * kb + 0.1 * qa.detach(), rtol=0, atol=1e-7)
    assert fw.ptr == 6
    torch.testing.assert_close(fw.queue[:6], torch.nn.functional.normalize(keys, dim=1))
    torch.testing.assert_close(fw.queue[6:], queue0[6:], rtol=0, atol=0)


def test_moco_queue_holds_the_last_keys():
    enc, proj = models(MOCO)
    fw = build_framework(MOCO, enc, proj)
    fw.prepare(40, torch.Generator().manual_seed(0))
    v = torch.randn(6, 3, 8, 8)
    fw.logits([v, v], torch.arange(6), 0.5)
    keys = fw._keys.clone()
    fw.after_step()
    torch.testing.assert_close(fw.queue[:6], keys, rtol=0, atol=0)


def test_split_forward_restores_order():
    net = TinyConv()
    x = torch.randn(8, 3, 8, 8)
    g = torch.Generator().manual_seed(0)
    net.eval()  # without batch statistics the chunks cannot change the result
    torch.testing.assert_close(split_forward(net, x, 4, g), net(x))
    net.train()  # with them, chunked statistics differ from whole-batch ones
    assert not torch.allclose(split_forward(net, x, 4, g), net(x))
    assert split_forward(net, x[:3], 4, g).shape == (3, 8)  # at most len // 2 chunks


# ------------------------------------------------------------------ CMC
def test_rgb_to_lab_known_values_and_loop():
    px = torch.tensor([[1.0, 1.0, 1.0], [0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.2, 0.7, 0.3]])
    lab = rgb_to_lab(px.view(5, 3, 1, 1)).view(5, 3)
    torch.testing.assert_close(lab[0], torch.tensor([100.0, 0.0, 0.0]), atol=1e-2, rtol=0)
    torch.testing.assert_close(lab[1], torch.zeros(3), atol=1e-4, rtol=0)
    torch.testing.assert_close(lab[2], torch.tensor([53.24, 80.09, 67.20]), atol=1e-2, rtol=0)  # CIE sRGB red
    for row, p in zip(lab, px.tolist()):
        torch.testing.assert_close(row, torch.tensor(naive.rgb_to_lab(*p)), atol=1e-3, rtol=0)


def test_cmc_models_and_features():
    enc, proj = models(CMC_BLOCK)
    assert isinstance(enc, LabViewsEncoder) and enc.l_net.net[0].in_channels == 1
    assert enc.ab_net.net[0].in_channels == 2 and enc.out_dim == 16
    x = torch.randn(5, 3, 8, 8)
    h_l, h_ab = enc.views(x)
    torch.testing.assert_close(enc(x), torch.cat([h_l, h_ab], 1))
    with pytest.raises(ConfigError, match="channels"):
        build_models(CMC_BLOCK, lambda ch, s: TinyConv(ch), lambda d, s: projection_head(d, 8, 4), 1, (1, 2),
                     [0.5], [0.2])


def test_cmc_logits_and_bank_update():
    enc, proj = models(CMC_BLOCK)
    fw = build_framework(CMC_BLOCK, enc, proj)
    fw.prepare(10, torch.Generator().manual_seed(0))
    bank_l0, bank_ab0 = fw.bank_l.clone(), fw.bank_ab.clone()
    v, idx = torch.randn(4, 3, 8, 8), torch.tensor([7, 1, 3, 0])
    state = fw.generator.get_state()
    pos, neg, mask = fw.logits([v], idx, 0.07)
    fw.generator.set_state(state)
    drawn = torch.randint(10, (12,), generator=fw.generator)
    z_l, z_ab = fw.projections(v, v)
    ref = naive.cmc_logits(z_l.tolist(), z_ab.tolist(), bank_l0.tolist(), bank_ab0.tolist(), drawn.tolist(),
                           idx.tolist(), 0.07)
    torch.testing.assert_close(pos, torch.tensor(ref[0]), atol=1e-4, rtol=1e-5)
    torch.testing.assert_close(neg, torch.tensor(ref[1]), atol=1e-4, rtol=1e-5)
    assert mask.tolist() == ref[2]
    fw.after_step()
    zn_l = torch.nn.functional.normalize(z_l, dim=1).detach()
    zn_ab = torch.nn.functional.normalize(z_ab, dim=1).detach()
    torch.testing.assert_close(fw.bank_l, torch.tensor(naive.bank_update(bank_l0.tolist(), idx.tolist(),
                                                                          zn_l.tolist(), 0.5)))
    torch.testing.assert_close(fw.bank_ab, torch.tensor(naive.bank_update(bank_ab0.tolist(), idx.tolist(),
                                                                           zn_ab.tolist(), 0.5)))
    untouched = torch.tensor([i not in idx.tolist() for i in range(10)])
    assert torch.equal(fw.bank_l[untouched], bank_l0[untouched])


# ------------------------------------------------------------------ every framework x every correction
LOSS_CONFIGS = {
    "info_nce": {"temperature": 0.2},
    "debiased": {"temperature": 0.2, "tau_plus": 0.1},
    "hard": {"temperature": 0.2, "tau_plus": 0.1, "beta": 1.0},
    "ring": {"temperature": 0.2, "lower": 0.1, "upper": 0.9},
    "ring_official": {"temperature": 0.2, "lower": 0.9, "upper": 0.99},
    "pu_corrected": {"temperature": 0.2, "alpha": 0.12, "c": 0.1},
    "bayesian": {"temperature": 0.2, "tau_plus": 0.1,
                 "alpha_schedule": [{"until_epoch": 1, "value": 0.5}, {"until_epoch": 2, "value": 0.7}],
                 "beta_schedule": {"kind": "linear", "start": 2.0, "per_epoch": -0.5}},
    "bayesian_official": {"temperature": 0.2, "tau_plus": 0.1, "alpha": 0.5, "beta": 0.5},
}
BLOCKS = {"simclr": {"name": "simclr"}, "moco": MOCO, "cmc": CMC_BLOCK}


def test_every_logits_loss_is_covered():
    assert set(with_logits_form()) == set(LOSS_CONFIGS)
    assert set(FRAMEWORKS.names()) == set(BLOCKS)


@pytest.mark.parametrize("loss", sorted(LOSS_CONFIGS))
@pytest.mark.parametrize("framework", sorted(BLOCKS))
def test_trains_with_every_correction(framework, loss):
    block = BLOCKS[framework]
    x = toy_images()
    cfg = PretrainConfig(framework=block, loss={"name": loss, **LOSS_CONFIGS[loss]}, epochs=2, batch_size=12,
                         optimizer=optimizer_config({"name": "adam", "lr": 1e-2}), augment={"name": "simclr", "scale": [0.6, 1.0]})
    enc, proj = models(block)
    before = [p.clone() for p in enc.parameters()]
    hist = pretrain(enc, proj, x, None, cfg, normalization=(MEAN, STD), prior=None, seed=3, ctx=PLAIN)
    assert hist["steps"] == 6 and all(math.isfinite(v) for v in hist["loss"])
    assert any(not torch.equal(a, b) for a, b in zip(before, enc.parameters()))
    enc2, proj2 = models(block)
    hist2 = pretrain(enc2, proj2, x, None, cfg, normalization=(MEAN, STD), prior=None, seed=3, ctx=PLAIN)
    assert hist2["loss"] == hist["loss"]


@pytest.mark.parametrize("framework", ["moco", "cmc"])
def test_loss_without_logits_form_or_with_labels_is_refused(framework):
    x = toy_images()
    for loss, match in (({"name": "punce", "temperature": 0.5, "prior": 0.4}, "logits form"),
                        ({"name": "supcon_pu", "temperature": 0.5}, "logits form")):
        cfg = PretrainConfig(framework=BLOCKS[framework], loss=loss, epochs=1, batch_size=12,
                             optimizer=optimizer_config({"name": "adam", "lr": 1e-2}))
        with pytest.raises(ConfigError, match=match):
            pretrain(*models(BLOCKS[framework]), x, None, cfg, normalization=(MEAN, STD), prior=0.4, seed=0, ctx=PLAIN)


def test_config_errors():
    with pytest.raises(ConfigError, match="queue"):
        MoCo.config({**MOCO, "queue": 0}, "f")
    with pytest.raises(ConfigError, match="momentum"):
        MoCo.config({**MOCO, "momentum": 1.5}, "f")
    with pytest.raises(ConfigError, match="bank_momentum"):
        CMC.config({**CMC_BLOCK, "bank_momentum": -0.1}, "f")
    with pytest.raises(ConfigError, match="queue"):
        MoCo.config({"name": "moco", "momentum": 0.99, "bn_splits": 1}, "f")  # no silent default N
    cfg = PretrainConfig(framework=MOCO, loss={"name": "info_nce", "temperature": 0.2}, epochs=1, batch_size=32,
                         optimizer=optimizer_config({"name": "adam", "lr": 1e-2}))
    with pytest.raises(ConfigError, match="cannot hold a batch of 32"):
        pretrain(*models(MOCO), toy_images(), None, cfg, normalization=(MEAN, STD), prior=None, seed=0, ctx=PLAIN)


@pytest.mark.parametrize("block", [MOCO | {"queue": 32}, CMC_BLOCK | {"negatives": 32}], ids=["moco", "cmc"])
def test_pretraining_makes_the_views_of_an_image_agree(block):
    """The toy-set check of a framework: after 8 epochs the two views of each image are
    found among the others far better than at initialization (held-out views, InfoNCE
    over the batch, eval mode; for CMC the L and ab views of one image)."""
    from pubench.losses.infonce import info_nce
    from pubench.train.augment import build_augment

    g = torch.Generator().manual_seed(0)
    x = (torch.nn.functional.interpolate(torch.rand(64, 3, 3, 3, generator=g), size=12, mode="bilinear") * 255
         ).to(torch.uint8)
    aug = build_augment({"name": "simclr", "scale": [0.6, 1.0]}, MEAN, STD)

    def held_out(enc, proj):
        fw = build_framework(block, enc, proj)
        for m in fw.modules():
            m.eval()
        gen = torch.Generator().manual_seed(123)
        v1, v2 = aug(x, gen), aug(x, gen)
        with torch.no_grad():
            z1, z2 = fw.projections(v1, v1) if block["name"] == "cmc" else (proj(enc(v1)), proj(enc(v2)))
            return float(info_nce(z1, z2, 0.2))

    cfg = PretrainConfig(framework=block, loss={"name": "info_nce", "temperature": 0.2}, epochs=8, batch_size=16,
                         optimizer=optimizer_config({"name": "adam", "lr": 1e-2}), augment={"name": "simclr", "scale": [0.6, 1.0]})
    enc, proj = models(block, 0)
    before = held_out(enc, proj)
    pretrain(enc, proj, x, None, cfg, normalization=(MEAN, STD), prior=None, seed=0, ctx=PLAIN)
    assert held_out(enc, proj) < before - 0.15
