"""The GPU path of the training loop (pubench.train.accel): the optional precision /
compile keys, bf16 autocast, channels_last, data placement and what a record says about
the device, memory and throughput. CUDA-only behaviour is tested where CUDA exists."""

from __future__ import annotations

import copy
import dataclasses

import pytest
import torch
from torch import nn

from pubench.frameworks.pretrain import PretrainConfig, check_pretrain_config, pretrain
from pubench import numerics
from pubench.models._common import GlobalAvgPool
from pubench.numerics import cpu_model
from pubench.tasks import TASKS
from pubench.train import accel
from pubench.train.context import PLAIN, JobContext
from pubench.train.loop import Step, Trainer, TrainConfig, batches, check_loop_config
from pubench.train.optim import optimizer_config
from pubench.utils.config import ConfigError
from tests.project.test_contracts import SEEDS, generated_data  # noqa: F401 - a fixture

pytestmark = pytest.mark.usefixtures("one_thread")

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def small_pretrain_config(**extra) -> PretrainConfig:
    return PretrainConfig(framework={"name": "simclr"}, loss={"name": "info_nce", "temperature": 0.5}, epochs=2,
                          batch_size=8, optimizer=optimizer_config({"name": "adam", "lr": 0.01}),
                          augment={"name": "crop", "scale": [0.5, 1.0]}, **extra)


def conv_encoder(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    net = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), GlobalAvgPool(),
                        nn.Flatten())
    net.out_dim = 4
    return net


def run_pretrain(cfg: PretrainConfig, device="cpu"):
    encoder, projector = conv_encoder(0).to(device), nn.Sequential(nn.Linear(4, 4)).to(device)
    x = torch.randint(0, 256, (24, 3, 8, 8), generator=torch.Generator().manual_seed(1), dtype=torch.uint8)
    ctx = accel.start_job(JobContext(numerics=numerics.resolve(device=device)))
    hist = pretrain(encoder, projector, x, None, cfg, normalization=([0.5] * 3, [0.25] * 3), prior=None, seed=5, ctx=ctx)
    return encoder, hist, ctx.accel


# ------------------------------------------------------------------ the spec keys
@pytest.mark.parametrize("precision", [None, "fp32", "bf16"])
def test_the_precision_keys_accept_fp32_and_bf16(precision):
    assert accel.check_precision(precision, "x") == (precision or "fp32")
    check_pretrain_config(small_pretrain_config(precision=precision))
    check_loop_config(TrainConfig(1, 4, optimizer_config({"name": "adam", "lr": 0.1}), precision=precision), "params.train")


@pytest.mark.parametrize("bad", ["fp16", "bfloat16", 16])
def test_an_unknown_precision_fails_with_its_place(bad):
    with pytest.raises(ConfigError, match="pretrain.precision"):
        check_pretrain_config(small_pretrain_config(precision=bad))
    with pytest.raises(ConfigError, match="params.train.precision"):
        check_loop_config(TrainConfig(1, 4, optimizer_config({"name": "adam", "lr": 0.1}), precision=bad), "params.train")


def test_compile_must_be_a_boolean():
    assert accel.check_compile(None, "x") is False
    with pytest.raises(ConfigError, match="pretrain.compile"):
        check_pretrain_config(small_pretrain_config(compile="yes"))


def test_absent_keys_leave_the_config_as_before():
    """The new keys default to None, so a spec without them resolves as before."""
    assert small_pretrain_config().precision is None and small_pretrain_config().compile is None
    cfg = TrainConfig(1, 4, optimizer_config({"name": "adam", "lr": 0.1}))
    assert cfg.precision is None and cfg.compile is None


# ------------------------------------------------------------------ precision
def test_fp32_scope_trains_bit_for_bit_as_no_scope():
    enc_a, hist_a, _ = run_pretrain(small_pretrain_config())
    enc_b, hist_b, _ = run_pretrain(small_pretrain_config(precision="fp32", compile=False))
    assert hist_a["loss"] == hist_b["loss"]
    for (ka, va), (kb, vb) in zip(enc_a.state_dict().items(), enc_b.state_dict().items()):
        assert ka == kb and torch.equal(va, vb)


def test_bf16_runs_the_forward_under_autocast_on_the_cpu_and_keeps_fp32_parameters():
    model = nn.Linear(6, 1)
    seen = []

    def step(idx, epoch):
        out = model(torch.randn(len(idx), 6, generator=torch.Generator().manual_seed(int(idx[0]))))
        seen.append(out.dtype)
        return Step(out.float().square().mean(), weight=len(idx))

    job = accel.start_job(PLAIN)
    for ctx, dtype in ((accel.stage(job, "bf16", None, "train"), torch.bfloat16), (job, torch.float32)):  # fp32: none
        seen.clear()
        trainer = Trainer([model], torch.optim.SGD(model.parameters(), lr=0.1), desc="bf16 test", ctx=ctx)
        trainer.run(1, lambda e: batches(8, 4, torch.Generator().manual_seed(0)), step)
        assert seen == [dtype, dtype]
        assert model.weight.dtype == torch.float32


def test_bf16_pretraining_differs_from_fp32_and_records_its_precision():
    _, hist32, s32 = run_pretrain(small_pretrain_config())
    _, hist16, s16 = run_pretrain(small_pretrain_config(precision="bf16"))
    assert hist32["loss"] != hist16["loss"]
    assert all(torch.isfinite(torch.tensor(hist16["loss"])))
    (entry32,), (entry16,) = s32.throughput.values(), s16.throughput.values()
    assert entry32["precision"] == "fp32" and entry16["precision"] == "bf16"


# ------------------------------------------------------------------ throughput, memory, device
def test_the_trainer_records_its_throughput_in_the_job():
    _, hist, settings = run_pretrain(small_pretrain_config())
    (name, entry), = settings.throughput.items()
    assert name == "pretrain info_nce"
    # 24 images, batch 8, drop_last: 3 steps of 8 images per epoch, 2 epochs
    assert entry["examples"] == 2 * 24 and hist["steps"] == 6
    assert entry["seconds"] > 0 and 48 / entry["examples_per_s"] == pytest.approx(entry["seconds"], abs=1e-3)
    assert entry["compile"] is False


def test_repeated_trainers_get_numbered_entries():
    job = accel.start_job(PLAIN)
    settings = job.accel
    accel.record_throughput(settings, "probe", 10, 1.0)
    accel.record_throughput(settings, "probe", 20, 2.0)
    accel.record_throughput(accel.stage(job, "bf16", None, "train").accel, "probe", 5, 0.5)
    assert list(settings.throughput) == ["probe", "probe (2)", "probe (3)"]
    assert settings.throughput["probe (3)"]["precision"] == "bf16"
    assert settings.throughput["probe (2)"]["examples_per_s"] == 10.0


def test_job_info_names_the_cpu_its_peak_memory_and_the_determinism_flags():
    settings = accel.start_job(PLAIN).accel
    accel.record_throughput(settings, "train", 100, 2.0)
    accel.record_throughput(PLAIN.accel, "train", 100, 2.0)  # outside a job: nothing is recorded
    assert PLAIN.accel.throughput is None
    info = accel.job_info(settings, "cpu")
    assert info["device_name"] == cpu_model()
    assert info["peak_memory"]["bytes"] > 1 << 20 and "ru_maxrss" in info["peak_memory"]["kind"]
    assert info["throughput"]["train"]["examples_per_s"] == 50.0
    assert info["channels_last"] is False
    assert info["determinism"] == {"cudnn_deterministic": torch.backends.cudnn.deterministic,
                                   "cudnn_benchmark": torch.backends.cudnn.benchmark,
                                   "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
                                   "deterministic_warn_only": torch.is_deterministic_algorithms_warn_only_enabled(),
                                   "fill_uninitialized_memory": torch.utils.deterministic.fill_uninitialized_memory}


@pytest.mark.parametrize("name", ["contrastive_probe", "pu_benchmark"])
def test_a_task_records_the_accelerator_info(name, generated_data):  # noqa: F811 - the fixture
    task = TASKS.get(name)
    out = task.run(copy.deepcopy(task.test_config), dict(SEEDS), ctx=PLAIN)
    info = out.info["accelerator"]
    assert info["device_name"] == cpu_model() and info["peak_memory"]["bytes"] > 0
    stages = list(info["throughput"])
    assert stages and all(v["examples_per_s"] > 0 and v["precision"] == "fp32" for v in info["throughput"].values())
    if name == "contrastive_probe":
        assert stages[0].startswith("pretrain ") and len(stages) == 2  # pre-training, then the linear probe


# ------------------------------------------------------------------ memory format, placement, compile
def test_channels_last_and_data_placement_are_no_ops_on_the_cpu():
    net = conv_encoder()
    before = {k: v.clone() for k, v in net.state_dict().items()}
    accel.prepare_modules([net], torch.device("cpu"), compile=False)
    assert net[0].weight.is_contiguous()
    assert all(torch.equal(before[k], v) for k, v in net.state_dict().items())
    x = torch.zeros(2, 3, 4, 4)
    assert accel.input_format(x) is x
    data = torch.zeros(5, 3, 4, 4, dtype=torch.uint8)
    assert accel.data_on_device(data, "cpu") is data


def test_compile_compiles_every_trained_module_in_place(monkeypatch):
    compiled = []
    monkeypatch.setattr(nn.Module, "compile", lambda self, *a, **k: compiled.append(self))
    nets = [conv_encoder(), nn.Linear(4, 2)]
    accel.prepare_modules(nets, torch.device("cpu"), compile=True)
    # each module and the parts a step may call directly (compile_targets; tests/train/test_fast_profile.py)
    assert compiled == [m for net in nets for m in net.modules()]
    model = nn.Linear(2, 1)
    trainer = Trainer([model], torch.optim.SGD(model.parameters(), lr=0.1),
                      ctx=accel.stage(accel.start_job(PLAIN), None, True, "train"))
    compiled.clear()
    trainer.run(1, lambda e: [torch.arange(2)], lambda idx, e: Step(model(torch.ones(len(idx), 2)).sum(), weight=len(idx)))
    assert compiled == [model]


@needs_cuda
def test_on_cuda_conv_nets_go_channels_last_and_data_moves_once():
    net = conv_encoder().cuda()
    accel.prepare_modules([net], torch.device("cuda"), compile=False)
    assert net[0].weight.is_contiguous(memory_format=torch.channels_last)
    x = torch.zeros(4, 3, 8, 8, device="cuda")
    assert accel.input_format(x).is_contiguous(memory_format=torch.channels_last)
    data = torch.zeros(5, 3, 4, 4, dtype=torch.uint8)
    assert accel.data_on_device(data, "cuda").device.type == "cuda"


@needs_cuda
def test_on_cuda_bf16_pretraining_runs_and_records_gpu_figures():
    _, hist, settings = run_pretrain(small_pretrain_config(precision="bf16"), device="cuda")
    assert all(torch.isfinite(torch.tensor(hist["loss"])))
    info = accel.job_info(settings, "cuda")
    assert info["device_name"] == torch.cuda.get_device_name()
    assert info["peak_memory"]["kind"] == "torch.cuda.max_memory_allocated" and info["peak_memory"]["bytes"] > 0
    assert info["channels_last"] is True


# ------------------------------------------------------------------ pubench.tools.gpu_step
def load_gpu_step():
    from pubench.tools import gpu_step

    return gpu_step


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message of a machine without CUDA")
def test_gpu_step_says_one_line_and_exits_0_without_cuda(capsys):
    assert load_gpu_step().main([]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "no CUDA device" in out[0]


def test_gpu_step_small_on_the_cpu_reports_images_per_second_and_the_ratio(capsys):
    assert load_gpu_step().main(["--device", "cpu", "--small", "--rounds", "1", "--frameworks", "simclr", "moco"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if line.startswith(("simclr", "moco"))]
    assert [r[0] for r in rows] == ["simclr", "moco"]
    for _, model_s, step_s, ratio, images_per_s in rows:
        assert float(step_s) > 0 and float(ratio) == pytest.approx(float(step_s) / float(model_s), rel=0.01)  # printed rounded
        assert float(images_per_s) == pytest.approx(16 / float(step_s), rel=0.01)


@needs_cuda
def test_on_cuda_a_trainer_formats_its_modules_and_the_modules_in_its_state():
    trained, key = conv_encoder(0).cuda(), conv_encoder(1).cuda()
    trainer = Trainer([trained], torch.optim.SGD(trained.parameters(), lr=0.1), state={"key_encoder": key},
                      ctx=accel.start_job(PLAIN))
    x = torch.zeros(4, 3, 8, 8, device="cuda")
    trainer.run(1, lambda e: [torch.arange(4)], lambda idx, e: Step(trained(x).sum() + key(x).sum().detach(),
                                                                     weight=len(idx)))
    for net in (trained, key):
        assert net[0].weight.is_contiguous(memory_format=torch.channels_last)


# ------------------------------------------------------------------ determinism on CUDA
def test_global_avg_pool_is_adaptive_avg_pool_on_the_cpu_bit_for_bit():
    x = torch.randn(3, 5, 7, 6, generator=torch.Generator().manual_seed(0), requires_grad=True)
    y = torch.randn(3, 5, 1, 1, generator=torch.Generator().manual_seed(1))
    ours = GlobalAvgPool()(x)
    (g_ours,) = torch.autograd.grad((ours * y).sum(), x)
    ref = nn.AdaptiveAvgPool2d(1)(x)
    (g_ref,) = torch.autograd.grad((ref * y).sum(), x)
    assert torch.equal(ours, ref) and torch.equal(g_ours, g_ref)


@pytest.fixture
def cuda_profile(monkeypatch):
    """The CUDA numerics profile a ``--device cuda`` job runs under (deterministic algorithms,
    cuBLAS's fixed workspace), undone afterwards."""
    from pubench import numerics

    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", numerics.CUDA_ENV["CUBLAS_WORKSPACE_CONFIG"])
    numerics.apply(numerics.resolve(device="cuda"))
    yield
    torch.use_deterministic_algorithms(False)


def resnet_pretrain_on_cuda(cfg: PretrainConfig):
    from pubench.models import build_backbone

    torch.manual_seed(0)
    enc = build_backbone("resnet18_cifar", 3, seed=1, width=0.125).cuda()
    proj = nn.Sequential(nn.Linear(enc.out_dim, 8)).cuda()
    x = torch.randint(0, 256, (48, 3, 16, 16), generator=torch.Generator().manual_seed(1), dtype=torch.uint8)
    ctx = accel.start_job(JobContext(numerics=numerics.resolve(device="cuda")))
    hist = pretrain(enc, proj, x, None, cfg, normalization=([0.5] * 3, [0.25] * 3), prior=None, seed=5, ctx=ctx)
    return hist, [t.detach().cpu().clone() for t in enc.state_dict().values()]


@needs_cuda
def test_on_cuda_a_resnet_trains_under_deterministic_algorithms_twice_identically(cuda_profile):
    """CUDA jobs run with ``torch.use_deterministic_algorithms(True)`` (no warn-only): every
    op of a ResNet's training step has a deterministic kernel (adaptive_avg_pool2d's
    backward has none: the backbones pool with a mean on CUDA), and two runs agree."""
    cfg = small_pretrain_config()
    (h1, w1), (h2, w2) = resnet_pretrain_on_cuda(cfg), resnet_pretrain_on_cuda(cfg)
    assert h1 == h2 and all(torch.equal(a, b) for a, b in zip(w1, w2, strict=True))


@needs_cuda
def test_on_cuda_a_stopped_and_resumed_pretraining_gives_the_uninterrupted_numbers(tmp_path, monkeypatch,
                                                                                    cuda_profile):
    """The CUDA random states are in the checkpoint: a run stopped at its first epoch
    boundary and resumed on the GPU equals the uninterrupted run bit for bit."""
    from tests.train.test_checkpoint import _same_after_resume

    cfg = dataclasses.replace(small_pretrain_config(), epochs=3)
    (h1, w1), (h2, w2) = _same_after_resume(lambda: resnet_pretrain_on_cuda(cfg), tmp_path, monkeypatch)
    assert h1 == h2 and all(torch.equal(a, b) for a, b in zip(w1, w2, strict=True))
