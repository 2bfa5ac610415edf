"""Performance options of generated projects (issue 4): AMP, torch.compile, gradient
checkpointing and the profiler window, proven by running the project itself."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from helpers import run_in_project

PACKAGE = "demo_proj"  # the package of the session's `default_project`


@pytest.fixture(autouse=True)
def one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """Projects run in subprocesses, two test workers on two cores: one thread each."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


def smoke(project: Path, *overrides: str) -> dict:
    # 16x16 images: the options are under test here, not the model; 4x less compute
    args = [a for o in ("data.image_size=16", *overrides) for a in ("--set", o)]
    result = run_in_project(project, "-m", PACKAGE, "smoke", "--steps", "3", "--json", *args)
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["ok"], report
    return report


@pytest.mark.parametrize("amp", [False, True], ids=["fp32", "amp"])
@pytest.mark.parametrize("checkpointing", [False, True], ids=["plain", "gc"])
def test_smoke_passes_eager(default_project: Path, amp: bool, checkpointing: bool) -> None:
    smoke(
        default_project,
        f"train.amp={str(amp).lower()}",
        f"model.grad_checkpointing={str(checkpointing).lower()}",
    )


@pytest.mark.slow
def test_smoke_passes_compiled_with_amp_and_checkpointing(default_project: Path) -> None:
    # One compiled run covers compile with both other options (each compile costs ~25 s+).
    # Smoke's checkpoint stage reloads the compiled run's last.pt into a plain model
    # (train.compile=false) and resumes: the compiled -> plain direction, for real.
    smoke(default_project, "train.compile=true", "train.amp=true", "model.grad_checkpointing=true")


INTERCHANGE = """
import torch
from {pkg} import checkpoint as ckpt
from {pkg}.config import Config
from {pkg}.data import build_data
from {pkg}.checkpoint import TrainState
from {pkg}.models import build_model

config = Config()
spec = build_data(config.data, 0).spec


def payload(model):
    optimizer = torch.optim.AdamW(model.parameters())
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    scaler = torch.amp.GradScaler("cpu", enabled=False)
    state = ckpt.training_state(
        scheduler, scaler, TrainState(), config.to_dict(), {{}}, spec, {{}}, 1
    )
    return ckpt.training_payload(model, optimizer, state)


def fresh(seed):
    torch.manual_seed(seed)
    return build_model(config.model, spec)


def same(a, b):
    return all(torch.equal(x, y) for x, y in zip(a.values(), b.values(), strict=True))


compiled = torch.compile(fresh(1))  # lazily compiled: wrapping costs no compile time
assert any(k.startswith("_orig_mod.") for k in compiled.state_dict())
saved = payload(compiled)
assert not [k for k in saved["model_state_dict"] if k.startswith("_orig_mod.")]
torch.save(saved, "from_compiled.pt")
plain = fresh(2)
ckpt.load_model_state(plain, ckpt.load_checkpoint("from_compiled.pt"), "x", config.to_dict())
assert same(plain.state_dict(), compiled._orig_mod.state_dict())

torch.save(payload(fresh(3)), "from_plain.pt")
target = torch.compile(fresh(4))
ckpt.load_model_state(target, ckpt.load_checkpoint("from_plain.pt"), "x", config.to_dict())
assert same(target._orig_mod.state_dict(), fresh(3).state_dict())
print("interchange ok")
"""


def test_checkpoints_move_between_compiled_and_plain_models(
    default_project: Path, tmp_path: Path
) -> None:
    script = tmp_path / "interchange.py"
    script.write_text(textwrap.dedent(INTERCHANGE.format(pkg=PACKAGE)), encoding="utf-8")
    result = run_in_project(default_project, str(script))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "interchange ok" in result.stdout


def test_profile_writes_a_trace_and_prints_the_top_operators(
    full_project: Path, tmp_path: Path
) -> None:
    out_dir = tmp_path / "run"
    overrides = [
        "train.profile=true",
        "train.epochs=1",
        "train.max_steps=6",  # the window: 1 wait, 1 warm-up, 3 active steps
        "data.num_samples=256",
        f"train.out_dir={out_dir}",
    ]
    args = [a for o in overrides for a in ("--set", o)]
    result = run_in_project(full_project, "-m", PACKAGE, "train", *args)
    assert result.returncode == 0, result.stdout + result.stderr
    trace = out_dir / "profile" / "trace.json"
    events = json.loads(trace.read_text(encoding="utf-8"))["traceEvents"]
    assert any("conv" in str(e.get("name", "")) for e in events)  # the model's operators
    assert "Self CPU" in result.stdout  # the key_averages() table
    assert f"profiler trace: {trace}" in result.stdout


HOST_SYNC = """
import sys
import torch
from {pkg} import config, engine, runtime, train

cfg = config.load_config(None, [
    "train.out_dir={out_dir}", "train.device=cpu", "data.num_samples=256", "data.image_size=16",
    "train.log_every=1000", "train.max_steps=6", "train.epochs=1",
])
run = train.build_run(cfg, runtime.DistInfo(), torch.device("cpu"))
project_code = str(engine.__file__).rsplit("/", 1)[0]
data_code = project_code + "/data/"  # the sampler turns its own CPU index tensor into ints
reads = []


def spy(name):
    original = getattr(torch.Tensor, name)

    def wrapper(self, *args, **kwargs):
        caller = sys._getframe(1).f_code.co_filename
        if caller.startswith(project_code) and not caller.startswith(data_code):
            reads.append((name, run.state.step))  # the project's own code read a tensor back
        return original(self, *args, **kwargs)

    setattr(torch.Tensor, name, wrapper)


for name in ("item", "tolist", "cpu", "numpy", "__bool__", "__float__", "__int__"):
    spy(name)
train.train(run, train.start_monitor(run))
print("reads before the last step:", [r for r in reads if r[1] < 6])
print("losses read at the last step:", ("tolist", 6) in reads)
"""


def test_training_steps_never_read_tensors_back(default_project: Path, tmp_path: Path) -> None:
    """The whole loop of train.py, 6 steps with no log interval inside: the host reads a
    tensor only at the end (the loss log at max_steps, evaluation, the checkpoint)."""
    script = tmp_path / "host_sync.py"
    source = HOST_SYNC.format(pkg=PACKAGE, out_dir=tmp_path / "run")
    script.write_text(textwrap.dedent(source), encoding="utf-8")
    result = run_in_project(default_project, str(script))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "reads before the last step: []" in result.stdout
    assert "losses read at the last step: True" in result.stdout


FUSED_STEP = """
import torch
from {pkg} import config, engine, runtime, train

cfg = config.load_config(None, [
    "train.out_dir={out_dir}", "train.device=cpu", "data.num_samples=64", "data.image_size=16",
])
run = train.build_run(cfg, runtime.DistInfo(), torch.device("cpu"))
batch = next(iter(run.train_loader))
before = [p.detach().clone() for p in run.model.parameters()]
with torch.profiler.profile() as prof:
    engine.forward_backward(run.train_model, batch, run.task, run.precision)
    engine.optimizer_step(run.optimizer, run.precision.scaler, cfg.train.grad_clip)
calls = {{e.key: e.count for e in prof.key_averages()}}
print("fused calls:", calls.get("aten::_fused_adamw_", 0))
print("per-tensor addcdiv calls:", calls.get("aten::addcdiv_", 0))
print("all moved:", all(not torch.equal(b, p) for b, p in zip(before, run.model.parameters())))
"""


def test_optimizer_updates_every_tensor_in_one_fused_kernel(
    default_project: Path, tmp_path: Path
) -> None:
    """AdamW(fused=True) on CPU: one kernel per step instead of a Python loop over tensors
    (3-5x faster optimizer steps: docs/benchmarks.md, "The pieces of a step")."""
    script = tmp_path / "fused.py"
    script.write_text(FUSED_STEP.format(pkg=PACKAGE, out_dir=tmp_path / "run"), encoding="utf-8")
    result = run_in_project(default_project, str(script))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "fused calls: 1\n" in result.stdout
    assert "per-tensor addcdiv calls: 0\n" in result.stdout
    assert "all moved: True" in result.stdout


PRECISION_RULE = """
import torch
from {pkg import_} import checkpoint as ckpt, config, runtime, train

rule = runtime.autocast_dtype
print("rule:", [rule(*case) for case in [
    ("cpu", False, "auto"), ("cuda", True, "auto"), ("cuda", False, "auto"),
    ("cuda", True, "float16"), ("mps", False, "auto"),
]])
for overrides in ([], ["train.matmul_precision=medium"], ["train.deterministic=true"]):
    cfg = config.load_config(None, overrides)
    runtime.precision(torch.device("cpu"), cfg.train)
    print("matmul:", cfg.train.matmul_precision, torch.get_float32_matmul_precision())

# a checkpoint saved without a GradScaler (bfloat16, amp off) resumes into a float16 run's
cfg = config.load_config(None, [
    "train.out_dir={out_dir}", "data.num_samples=64", "data.image_size=16", "train.max_steps=1",
])
train.fit(cfg)
cfg.train.out_dir = "{out_dir}/objects"  # a fresh run's objects to restore into
run = train.build_run(cfg, runtime.DistInfo(), torch.device("cpu"))
checkpoint = ckpt.load_checkpoint("{out_dir}/last.pt")
scaler = torch.amp.GradScaler("cpu", enabled=True)  # as float16 on CUDA makes it
objects = (run.model, run.optimizer, run.scheduler, scaler)
ckpt.restore_training(checkpoint, "last.pt", *objects, cfg.to_dict())
print("fresh scale:", scaler.get_scale())
"""


def test_amp_dtype_follows_bfloat16_support_and_matmul_precision_is_set(
    default_project: Path, tmp_path: Path
) -> None:
    """The rule by the capability it depends on (no fake device); on CPU auto matmuls are
    full float32, an explicit choice is set for the process."""
    script = tmp_path / "precision_rule.py"
    source = PRECISION_RULE.replace("{pkg import_}", PACKAGE).replace("{out_dir}", str(tmp_path))
    script.write_text(source, encoding="utf-8")
    result = run_in_project(default_project, str(script))
    assert result.returncode == 0, result.stdout + result.stderr
    expected = "['bfloat16', 'bfloat16', 'float16', 'float16', 'bfloat16']"
    assert f"rule: {expected}" in result.stdout
    matmul = [line for line in result.stdout.splitlines() if line.startswith("matmul:")]
    assert matmul == ["matmul: highest highest", "matmul: medium medium", "matmul: highest highest"]
    assert "fresh scale: 65536.0" in result.stdout  # not "training state does not fit"


@pytest.mark.slow
def test_the_chosen_precision_is_printed_recorded_and_a_change_applies_on_resume(
    default_project: Path, tmp_path: Path
) -> None:
    out_dir = tmp_path / "run"
    common = ["train.amp=true", "data.num_samples=64", "data.image_size=16", "train.epochs=1"]

    def train(*overrides: str) -> str:
        args = [a for o in (*common, f"train.out_dir={out_dir}", *overrides) for a in ("--set", o)]
        result = run_in_project(default_project, "-m", PACKAGE, "train", *args)
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout

    first = train("train.max_steps=2")
    assert first.splitlines()[0] == "amp=True amp_dtype=bfloat16 matmul_precision=highest"
    recorded = (out_dir / "config.toml").read_text(encoding="utf-8")
    assert 'amp_dtype = "bfloat16"' in recorded and 'matmul_precision = "highest"' in recorded
    same = train("train.max_steps=3", "train.resume=auto")  # auto resolves as before
    assert "amp_dtype" not in same.split("changed settings", 1)[1]
    changed = train("train.max_steps=4", "train.resume=auto", "train.amp_dtype=float16")
    assert "train.amp_dtype: 'bfloat16' -> 'float16'" in changed
    assert 'amp_dtype = "float16"' in (out_dir / "config.toml").read_text(encoding="utf-8")
