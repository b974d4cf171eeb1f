"""Backbones and heads (pubench/models): parameter counts against the papers' printouts and
output shapes at each dataset's input size, both on the ``meta`` device (nothing is
allocated), seeded init and BatchNorm modes at each backbone's declared ``test_config``
(tests/project/test_contracts.py runs every backbone forward and backward)."""

from __future__ import annotations

import pytest
import torch
import torchvision
from torch import nn

from pubench.models import (
    BACKBONES,
    build_backbone,
    count_parameters,
    linear_head,
    projection_head,
)

# every registered image backbone, with the small configuration it declares
IMAGE_BACKBONES = [n for n in BACKBONES.names() if isinstance(BACKBONES.get(n).test_config["input"], list)]
GENERIC = {n: (BACKBONES.get(n).test_config["kwargs"], (BACKBONES.get(n).test_config["input"][0],
                                                         BACKBONES.get(n).test_config["input"][1]))
           for n in IMAGE_BACKBONES}

MNIST, CIFAR, STL = (1, 28), (3, 32), (3, 96)

# (name, kwargs, (C, side), out_dim) -- every backbone at the input sizes of the datasets it is
# used on, at full size on the meta device (shapes only, no compute).
SHAPE_CASES = [
    ("mlp_001", {}, MNIST, 50),
    ("allconv_001", {}, CIFAR, 1000),
    ("allconv_001", {"input_size": 96}, STL, 1000),
    ("cnn13", {}, CIFAR, 1000),  # CIFAR-10 and SVHN (3x32x32)
    ("resnet18_cifar", {}, CIFAR, 512),
    ("resnet18_cifar", {}, MNIST, 512),
    ("resnet18_cifar", {"width": 0.25}, STL, 128),
    ("resnet18_cifar", {}, STL, 512),
    ("resnet18", {}, STL, 512),
    ("resnet34", {"cifar_stem": True}, CIFAR, 512),
    ("resnet34", {}, STL, 512),
    ("resnet50", {"cifar_stem": True}, CIFAR, 2048),
    ("resnet50", {"cifar_stem": True, "width": 0.125}, STL, 256),
    ("resnet50", {}, STL, 2048),
    ("lenet5", {}, MNIST, 84),
    ("cnn7_003", {}, CIFAR, 1000),
    ("cnn7_003", {"variant": "stl"}, STL, 84),
]

@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """One intra-op thread: these tiny batches gain nothing from two, and a 2-thread OpenMP
    region stalls badly when other jobs share the 2 cores (barrier waits)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _x(shape, n=2, seed=0):
    c, s = shape
    return torch.randn(n, c, s, s, generator=torch.Generator().manual_seed(seed))


def meta(name: str, in_channels: int, **kwargs) -> nn.Module:
    """The backbone built on the meta device: shapes and parameter counts, no memory."""
    with torch.device("meta"):
        return BACKBONES.get(name)(in_channels, **kwargs)


def test_the_papers_backbones_are_registered():
    assert {"mlp_001", "allconv_001", "resnet18_cifar", "resnet18", "resnet34", "resnet50", "lenet5", "cnn7_003",
            "cnn13"} <= set(IMAGE_BACKBONES)


# ---- printed parameter counts (001, App. A.1.3-A.1.5): backbone + projector + online_head --

def test_mlp_001_printed_count():
    # A.1.3 "Num of Params = 29231151": backbone 29,200,150 + projector 30,950 + head 51
    enc = meta("mlp_001", 1)
    proj, head = projection_head(50, 300, 50), linear_head(50, 1)
    assert count_parameters(enc) == 784 * 5000 + 5000 + 2 * 5000 + 5000 * 5000 + 5000 + 2 * 5000 + 5000 * 50 + 50 + 2 * 50
    assert count_parameters(enc) == 29_200_150
    assert count_parameters(proj) == 30_950 and count_parameters(head) == 51
    assert count_parameters(enc, proj, head) == 29_231_151


def test_allconv_001_printed_count():
    # A.1.4 "Num of Params = 5019255": backbone 3,014,254 + projector 2,004,000 + head 1,001
    enc = meta("allconv_001", 3)
    proj, head = projection_head(1000, 1000, 1000), linear_head(1000, 1)
    assert enc.flat_dim == 640
    assert count_parameters(enc) == 3_014_254
    assert count_parameters(proj) == 2_004_000
    assert count_parameters(enc, proj, head) == 5_019_255


def test_resnet18_cifar_printed_count():
    # A.1.5 "Num of Params = 11333825": backbone 11,168,832 + projector (first Linear without
    # bias, as printed) 164,480 + head 513
    enc = meta("resnet18_cifar", 3)
    proj, head = projection_head(512, 256, 128, hidden_bias=False), linear_head(512, 1)
    assert count_parameters(enc) == 11_168_832
    assert count_parameters(proj) == 164_480
    assert count_parameters(enc, proj, head) == 11_333_825


# ---- counts not printed by the papers: pinned to the hand computations in the docstrings --

def test_unprinted_counts_pinned():
    def get(name):
        return lambda *a, **kw: meta(name, *a, **kw)

    # torchvision totals minus fc (checked against torchvision below); CIFAR stem saves 7*7*3*64 - 3*3*3*64
    stem_saving = 7 * 7 * 3 * 64 - 3 * 3 * 3 * 64
    assert count_parameters(get("resnet18")(3)) == 11_689_512 - 513_000 == 11_176_512
    assert count_parameters(get("resnet34")(3)) == 21_797_672 - 513_000 == 21_284_672
    assert count_parameters(get("resnet34")(3, cifar_stem=True)) == 21_284_672 - stem_saving
    assert count_parameters(get("resnet50")(3)) == 25_557_032 - 2_049_000 == 23_508_032
    assert count_parameters(get("resnet50")(3, cifar_stem=True)) == 23_508_032 - stem_saving == 23_500_352
    # DCL/HCL projection head for ResNet-50: 2048*512 + 2*512 + 512*128+128
    assert count_parameters(projection_head(2048, 512, 128, hidden_bias=False)) == 1_115_264
    # cnn13 = nnPU's CIFAR CNN = allconv_001's backbone; + the 1000-1 output layer
    assert count_parameters(get("cnn13")(3)) == 3_014_254
    assert count_parameters(get("cnn13")(3), linear_head(1000, 1)) == 3_015_255
    # lenet5: conv 1*6*25+6, 6*16*25+16, 16*120*25+120; fc 120*84+84; BN 2*84
    assert count_parameters(get("lenet5")(1)) == 156 + 2_416 + 48_120 + 10_164 + 168 == 61_024
    # cnn7_003 cifar: 3*96*9+96, 96*96*9+96, 96*192+192, 192*10+10, 1960*1000+1000, 1000*1000+1000
    assert count_parameters(get("cnn7_003")(3)) == 2_688 + 83_040 + 18_624 + 1_930 + 1_961_000 + 1_001_000
    assert count_parameters(get("cnn7_003")(3)) == 3_068_282
    # cnn7_003 stl: 3*6*9+6, 6*6*9+6, 6*16*25+16, 16*32*25+32, 2048*120+120, 120*84+84
    assert count_parameters(get("cnn7_003")(3, variant="stl")) == 168 + 330 + 2_416 + 12_832 + 245_880 + 10_164
    assert count_parameters(get("cnn7_003")(3, variant="stl")) == 271_790


@pytest.mark.parametrize("name,tv_fn,cifar", [
    ("resnet18", torchvision.models.resnet18, False),
    ("resnet18_cifar", torchvision.models.resnet18, True),
    ("resnet34", torchvision.models.resnet34, False),
    ("resnet50", torchvision.models.resnet50, True),
])
def test_resnets_match_torchvision(name, tv_fn, cifar):
    """Same modules as torchvision (DCL's recipe for the CIFAR stem): torchvision's weights load
    into ours (everything but fc) and give the same features."""
    torch.manual_seed(0)
    ref = tv_fn()
    if cifar:
        ref.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        ref.maxpool = nn.Identity()
    ref.fc = nn.Identity()
    ours = BACKBONES.get(name)(3, cifar_stem=cifar)
    ours.load_state_dict(ref.state_dict(), strict=True)  # raises on any missing / unexpected key
    assert count_parameters(ours) == count_parameters(ref)
    ref.eval(), ours.eval()
    x = _x(CIFAR, n=2)
    with torch.no_grad():
        torch.testing.assert_close(ours(x), ref(x), rtol=0, atol=0)


# ---- shapes ----------------------------------------------------------------------------

@pytest.mark.parametrize("name,kwargs,shape,out_dim", SHAPE_CASES,
                         ids=[f"{c[0]}-{c[2][0]}x{c[2][1]}-{','.join(c[1])}" for c in SHAPE_CASES])
def test_output_shape(name, kwargs, shape, out_dim):
    m = meta(name, shape[0], **kwargs).eval()
    assert m.out_dim == out_dim
    with torch.no_grad():
        y = m(_x(shape, n=2).to("meta"))
    assert y.shape == (2, out_dim) and y.dtype == torch.float32


def test_resnet50_imagenet_stem_224():
    # Alzheimer (004): 3x224x224 with the ImageNet stem
    m = meta("resnet50", 3).eval()
    with torch.no_grad():
        assert m(torch.zeros(1, 3, 224, 224, device="meta")).shape == (1, 2048)


def test_fixed_size_backbones_reject_other_sizes():
    with pytest.raises(ValueError, match="input_size=96"):
        meta("cnn7_003", 3)(torch.zeros(2, 3, 96, 96, device="meta"))
    with pytest.raises(ValueError, match="expects"):
        meta("mlp_001", 1)(torch.zeros(2, 3, 28, 28, device="meta"))
    with pytest.raises(ValueError, match="variant"):
        BACKBONES.get("cnn7_003")(3, variant="svhn")
    with pytest.raises(ValueError, match="too small"):
        BACKBONES.get("lenet5")(1, input_size=20)


def test_width_kwargs():
    def get(name):
        return lambda *a, **kw: meta(name, *a, **kw)

    assert get("resnet18_cifar")(3, width=0.5).out_dim == 256
    assert get("resnet50")(3, width=0.5, cifar_stem=True).out_dim == 1024
    mlp = get("mlp_001")(1, hidden=500)
    assert count_parameters(mlp) == 784 * 500 + 500 + 1000 + 500 * 500 + 500 + 1000 + 500 * 50 + 50 + 100
    ac = get("allconv_001")(3, width=0.5, fc_width=256)
    assert ac.out_dim == 256 and ac.backbone_cnn[0].out_channels == 48 and ac.backbone_cnn[-3].out_channels == 10
    assert get("cnn7_003")(3, width=0.5).features[0].out_channels == 48


# ---- init determinism ---------------------------------------------------------------------

def _same(a: nn.Module, b: nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


@pytest.mark.parametrize("name", IMAGE_BACKBONES)
def test_init_deterministic(name):
    kwargs, shape = GENERIC[name]
    torch.manual_seed(123)
    a = BACKBONES.get(name)(shape[0], **kwargs)
    torch.manual_seed(123)
    b = BACKBONES.get(name)(shape[0], **kwargs)
    assert _same(a, b)
    # build_backbone(seed=...) depends on the seed only and leaves the global RNG alone
    state = torch.get_rng_state()
    c = build_backbone(name, shape[0], seed=7, **kwargs)
    assert torch.equal(torch.get_rng_state(), state)
    torch.manual_seed(999)
    d = build_backbone(name, shape[0], seed=7, **kwargs)
    e = build_backbone(name, shape[0], seed=8, **kwargs)
    assert _same(c, d) and not _same(c, e)


@pytest.mark.parametrize("name", IMAGE_BACKBONES)
def test_batchnorm_train_vs_eval(name):
    kwargs, shape = GENERIC[name]
    m = build_backbone(name, shape[0], seed=0, **kwargs)
    bns = [b for b in m.modules() if isinstance(b, nn.modules.batchnorm._BatchNorm)]
    if name == "cnn7_003":  # vPU's networks have no BatchNorm (documented)
        assert not bns
        return
    assert bns
    x = _x(shape, n=4)
    m.train()
    before = [b.running_mean.clone() for b in bns]
    with torch.no_grad():
        y_batch = m(x)
        y_part = m(x[:2])  # train mode: batch statistics, so a sample's output depends on the batch
    assert any(not torch.equal(b0, b.running_mean) for b0, b in zip(before, bns))
    assert not torch.allclose(y_batch[:2], y_part)
    m.eval()  # eval mode: running statistics, per-sample and no updates
    frozen = [b.running_mean.clone() for b in bns]
    with torch.no_grad():
        y_batch = m(x)
        y_part = m(x[:2])
    torch.testing.assert_close(y_batch[:2], y_part, rtol=1e-5, atol=1e-5)
    assert all(torch.equal(b0, b.running_mean) for b0, b in zip(frozen, bns))


# ---- heads --------------------------------------------------------------------------------

def test_projection_head_forms():
    h = projection_head(512, 256, 128, hidden_bias=False)
    assert [type(m) for m in h] == [nn.Linear, nn.BatchNorm1d, nn.ReLU, nn.Linear]
    assert h[0].bias is None and h[3].bias is not None and h.out_dim == 128
    simclr = projection_head(512, None, 128, batchnorm=False)  # SimCLR v1: d-d-128, no BN
    assert [type(m) for m in simclr] == [nn.Linear, nn.ReLU, nn.Linear] and simclr[0].out_features == 512
    assert projection_head(64, "features", 16)[0].out_features == 64
    three = projection_head(64, 32, 16, layers=3)
    assert sum(isinstance(m, nn.Linear) for m in three) == 3
    one = projection_head(64, 32, 16, layers=1)
    assert len(one) == 1 and one[0].in_features == 64 and one[0].out_features == 16
    assert projection_head(50, 300, 50)(torch.randn(4, 50)).shape == (4, 50)
    lin = linear_head(84, 2)
    assert lin.out_dim == 2 and count_parameters(lin) == 170
    with pytest.raises(TypeError):
        projection_head(64, "wide", 16)


#: modules whose backward has no deterministic CUDA kernel: under the CUDA numerics profile
#: (``torch.use_deterministic_algorithms(True)``, :func:`pubench.numerics.apply`) they raise at
#: the first backward (torch's ``use_deterministic_algorithms`` docstring lists them)
NO_DETERMINISTIC_CUDA_BACKWARD = (nn.AdaptiveAvgPool2d, nn.AdaptiveAvgPool3d, nn.AdaptiveMaxPool2d, nn.AvgPool3d,
                                  nn.FractionalMaxPool2d, nn.FractionalMaxPool3d, nn.ReflectionPad1d,
                                  nn.ReflectionPad2d, nn.ReflectionPad3d, nn.EmbeddingBag, nn.CTCLoss)


@pytest.mark.parametrize("name", IMAGE_BACKBONES)
def test_no_backbone_has_a_module_without_a_deterministic_cuda_backward(name):
    """A CPU-side guard of the GPU path: such a module would fail every ``--device cuda``
    job of the backbone (ResNets pool with :class:`GlobalAvgPool` for this reason)."""
    kwargs, shape = GENERIC[name]
    net = BACKBONES.get(name)(shape[0], **kwargs)
    bad = [f"{n}: {type(m).__name__}" for n, m in net.named_modules() if isinstance(m, NO_DETERMINISTIC_CUDA_BACKWARD)]
    assert not bad, bad
