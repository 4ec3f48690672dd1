"""The checkpoint store (toolkit.checkpoints, issue 81 item 1) at toy scale: a tiny torch module."""
import json
import random
import subprocess

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from toolkit import checkpoints as C  # noqa: E402

DATA = torch.arange(40, dtype=torch.float32).reshape(20, 2) / 10


class Toy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(2, 8)
        self.drop = torch.nn.Dropout(0.3)        # draws from torch's generator
        self.out = torch.nn.Linear(8, 1)

    def forward(self, x):
        return self.out(self.drop(torch.relu(self.lin(x))))


def _train(root, steps: int, stop_after: int | None = None, resume: bool = False):
    """A resumable toy trainer: data order from (seed, epoch), dropout (torch RNG), python and numpy noise in the
    targets, AdamW + a linear schedule; it saves to the store after ``stop_after`` steps and returns (module, step)."""
    torch.manual_seed(0)
    model = Toy()
    opt = torch.optim.AdamW(model.parameters(), lr=0.05)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1 - s / (steps + 1))
    step, losses = 0, []
    if resume:
        ck = C.load("toy", root=root)
        model.load_state_dict(ck.tensors)
        opt.load_state_dict(ck.optimizer["opt"])
        sched.load_state_dict(ck.optimizer["sched"])
        C.set_rng_state(ck.state["rng"])
        step, losses = ck.state["step"], ck.manifest["curves"]["loss"]
    else:
        random.seed(1), np.random.seed(2)
    while step < steps:
        epoch, within = divmod(step, 5)
        order = torch.randperm(20, generator=torch.Generator().manual_seed(100 + epoch)).tolist()
        idx = order[4 * within: 4 * within + 4]
        target = torch.tensor([[random.random() + float(np.random.rand())] for _ in idx])
        loss = torch.nn.functional.mse_loss(model(DATA[idx]), target)
        loss.backward()
        opt.step()
        sched.step()
        opt.zero_grad()
        step += 1
        losses.append(float(loss.detach()))
        if step == stop_after:
            C.save("toy", model.state_dict(), kind="full", base="toy", base_sha256="0" * 64, data_sha256="1" * 64,
                   config={"lr": 0.05}, seed=0, steps_done=step, command="pytest", curves={"loss": losses},
                   optimizer={"opt": opt.state_dict(), "sched": sched.state_dict()}, state={"step": step},
                   root=root)
            return model, step
    return model, step


def test_a_resumed_run_continues_bit_for_bit_like_an_uninterrupted_one(tmp_path):
    whole, _ = _train(tmp_path, 12)
    _train(tmp_path, 12, stop_after=7)
    torch.manual_seed(999), random.seed(999), np.random.seed(999)     # the killed process's generators are gone
    resumed, step = _train(tmp_path, 12, resume=True)
    assert step == 12
    for k, v in whole.state_dict().items():
        assert torch.equal(v, resumed.state_dict()[k]), k
    m = json.loads((tmp_path / "toy" / C.MANIFEST).read_text())
    assert m["steps_done"] == 7 and m["exact_resume"] and m["optimizer"] == "stored"
    assert set(m["files"]) == {"weights-00001-of-00001.safetensors", C.OPTIMIZER, C.STATE}
    assert all(f["bytes"] <= C.MAX_FILE_BYTES and len(f["sha256"]) == 64 for f in m["files"].values())


def test_without_rng_state_the_continuation_differs(tmp_path):
    """The test above can fail: a resume that does not restore the generators draws other dropout masks."""
    whole, _ = _train(tmp_path, 12)
    _train(tmp_path, 12, stop_after=7)
    state = json.loads((tmp_path / "toy" / C.STATE).read_text())
    state["rng"]["torch"] = torch.manual_seed(5).get_state().tolist()
    (tmp_path / "toy" / C.STATE).write_text(json.dumps(state))
    manifest = json.loads((tmp_path / "toy" / C.MANIFEST).read_text())
    p = tmp_path / "toy" / C.STATE
    manifest["files"][C.STATE] = {"bytes": p.stat().st_size, "sha256": C._sha256(p)}
    (tmp_path / "toy" / C.MANIFEST).write_text(json.dumps(manifest))
    resumed, _ = _train(tmp_path, 12, resume=True)
    assert not all(torch.equal(v, resumed.state_dict()[k]) for k, v in whole.state_dict().items())


def _saved(root, **kw):
    torch.manual_seed(0)
    args = dict(kind="full", base="toy", base_sha256="0" * 64, data_sha256="1" * 64, config={}, seed=0, steps_done=1,
                command="pytest", root=root)
    return C.save("toy", Toy().state_dict(), **{**args, **kw})


def test_a_damaged_or_edited_file_fails_verification_naming_it(tmp_path):
    _saved(tmp_path, optimizer={"x": torch.zeros(3)})
    d = tmp_path / "toy"
    assert C.verify(d) == [] and C.verify_store(tmp_path) == {str(d / C.MANIFEST): "ok"}
    shard = d / "weights-00001-of-00001.safetensors"
    raw = bytearray(shard.read_bytes())
    raw[-1] ^= 1                                           # same size, one bit flipped
    shard.write_bytes(bytes(raw))
    (problem,) = C.verify(d)
    assert str(shard) in problem and "sha256" in problem
    with pytest.raises(C.CheckpointError, match="weights-00001-of-00001.safetensors"):
        C.load("toy", root=tmp_path, record=False)
    (d / C.STATE).write_text("{}")                         # edited: other bytes
    assert any(str(d / C.STATE) in p and "bytes" in p for p in C.verify(d))
    (d / C.OPTIMIZER).unlink()
    assert any(str(d / C.OPTIMIZER) in p and "missing" in p for p in C.verify(d))
    (d / "stray.bin").write_bytes(b"x")
    assert any("stray.bin" in p and "not listed" in p for p in C.verify(d))


def test_the_store_refuses_files_over_50_mb_and_models_over_minilm_class(tmp_path):
    big = {"w": torch.zeros(C.MAX_FILE_BYTES // 4 + 1)}                     # one float32 tensor just over 50 MB
    with pytest.raises(C.CheckpointError, match="over the 50.0 MB per-file limit"):
        C.save("big", big, kind="full", base="b", base_sha256="", data_sha256="", config={}, seed=0, steps_done=0,
               command="")
    assert not (C.STORE / "big").exists() and not (tmp_path / "big").exists()
    huge = {"w": torch.zeros(C.MAX_FULL_PARAMS + 1, dtype=torch.uint8)}
    with pytest.raises(C.CheckpointError, match="MiniLM-class"):
        C.save("huge", huge, kind="full", base="b", base_sha256="", data_sha256="", config={}, seed=0, steps_done=0,
               command="", root=tmp_path)
    with pytest.raises(C.CheckpointError, match="base model is never stored"):
        _saved(tmp_path, kind="lora")
    with pytest.raises(C.CheckpointError, match="may not exceed"):
        _saved(tmp_path, max_file_bytes=C.MAX_FILE_BYTES + 1)
    _saved(tmp_path)
    with open(tmp_path / "toy" / "weights-00001-of-00001.safetensors", "r+b") as f:
        f.truncate(C.MAX_FILE_BYTES + 1)                   # a file that grew over the limit after saving
    assert any("over the 50.0 MB per-file limit" in p for p in C.verify(tmp_path / "toy"))


def test_optimizer_state_over_the_limit_is_not_stored_and_the_manifest_says_it_restarts(tmp_path):
    m = _saved(tmp_path, optimizer={"m": torch.zeros(400)}, max_file_bytes=1000, dtype="float16")
    assert m["optimizer"].startswith("not stored") and "restarts" in m["optimizer"] and not m["exact_resume"]
    assert not (tmp_path / "toy" / C.OPTIMIZER).exists() and m["dtype"] == "float16"
    ck = C.load("toy", root=tmp_path, record=False)
    assert ck.optimizer is None and all(t.dtype == torch.float32 for t in ck.tensors.values())
    torch.manual_seed(0)
    ref = Toy().state_dict()
    assert all(torch.equal(ck.tensors[k], v.half().float()) for k, v in ref.items())   # the rounded weights


def test_a_lora_adapter_round_trips_through_the_store(tmp_path):
    peft = pytest.importorskip("peft")
    torch.manual_seed(0)
    model = peft.get_peft_model(Toy(), peft.LoraConfig(r=2, target_modules=["lin", "out"], init_lora_weights=False))
    adapter = peft.get_peft_model_state_dict(model)
    m = C.save("toy-lora", adapter, kind="lora", base="toy", base_sha256=C.tensors_sha256(Toy().state_dict()),
               data_sha256="", config={"r": 2}, seed=0, steps_done=0, command="", root=tmp_path)
    assert m["parameters"] == sum(t.numel() for t in adapter.values()) < 60
    torch.manual_seed(0)
    fresh = peft.get_peft_model(Toy(), peft.LoraConfig(r=2, target_modules=["lin", "out"]))
    peft.set_peft_model_state_dict(fresh, C.load("toy-lora", root=tmp_path, record=False).tensors)
    model.eval(), fresh.eval()
    assert torch.equal(model(DATA), fresh(DATA))


def test_loading_records_the_checkpoint_as_an_input(tmp_path, monkeypatch):
    from toolkit import paths, provenance
    monkeypatch.setattr(paths, "REPO", tmp_path)
    provenance.reset() if hasattr(provenance, "reset") else None
    _saved(tmp_path / "data" / "checkpoints")
    C.load("toy", root=tmp_path / "data" / "checkpoints")
    kinds = {k: v["kind"] for k, v in provenance._inputs.items() if k.startswith("data/checkpoints/toy/")}
    assert set(kinds.values()) == {"checkpoint"} and "data/checkpoints/toy/MANIFEST.json" in kinds


def test_a_retired_checkpoint_is_restored_from_the_history(tmp_path, monkeypatch):
    from toolkit import paths
    repo, store = tmp_path / "repo", tmp_path / "repo" / "data" / "checkpoints"

    def git(*a):
        subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *a], check=True,
                       capture_output=True)
    m = _saved(store)
    git("init", "-q"), git("add", "-A"), git("commit", "-q", "-m", "checkpoint")
    C.retire("toy", root=store)
    git("add", "-A"), git("commit", "-q", "-m", "retired")
    monkeypatch.setattr(paths, "REPO", repo)
    assert not C.exists("toy", root=store)
    assert C.restore_from_history("toy", root=store) == store / "toy"
    assert C.verify(store / "toy") == [] and json.loads((store / "toy" / C.MANIFEST).read_text()) == m
    assert C.restore_from_history("never-kept", root=store) is None


def test_verify_committed_checks_every_checkpoint_manifest(tmp_path):
    from toolkit.committed import verify_committed
    _saved(tmp_path / "checkpoints")
    status = {k: v for k, v in verify_committed(tmp_path).items() if "checkpoints" in k}
    assert list(status.values()) == ["ok"] and list(status)[0].endswith("toy/MANIFEST.json")
    (tmp_path / "checkpoints" / "toy" / C.STATE).write_text("{}")
    status = {k: v for k, v in verify_committed(tmp_path).items() if "checkpoints" in k}
    assert "state.json" in list(status.values())[0]
