"""The suite's one training loop (toolkit.training.train_loop): schedules, clipping, micro-batches."""
import pytest

torch = pytest.importorskip("torch")

from toolkit.training import train_loop  # noqa: E402


def _data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(16, 3, generator=g)
    return x, x @ torch.tensor([1.0, -2.0, 0.5]) + 0.3


def _model():
    torch.manual_seed(0)
    return torch.nn.Linear(3, 1)


def test_micro_batches_accumulate_to_the_full_batch_gradient(tmp_path):
    x, y = _data()
    batches = [list(range(0, 8)), list(range(8, 16))]
    full, split = _model(), _model()

    def loss_for(m):
        return lambda idx: ((m(x[idx]).squeeze(1) - y[idx]) ** 2).mean()

    train_loop(full, loss_for(full), batches, tmp_path / "a", lr=0.05, weight_decay=0.0, log=None, schedule="constant")
    train_loop(split, loss_for(split), batches, tmp_path / "b", lr=0.05, weight_decay=0.0, log=None, schedule="constant",
               micro_batches=lambda b: [(b[:3], 3 / len(b)), (b[3:], (len(b) - 3) / len(b))])
    for p, q in zip(full.parameters(), split.parameters()):
        assert torch.allclose(p, q, atol=1e-6)


def test_constant_schedule_and_value_clipping_are_applied(tmp_path):
    x, y = _data()
    seen = []
    m = _model()
    before = m.weight.detach().clone()
    train_loop(m, lambda idx: 1000 * ((m(x[idx]).squeeze(1) - y[idx]) ** 2).mean(), [list(range(16))],
               tmp_path / "c", lr=0.1, weight_decay=0.0, max_grad_norm=0.01, clip="value", schedule="constant",
               log=None, on_step=seen.append)
    # Adam's first step moves each weight by ~lr whatever the (clipped) gradient size: the constant
    # schedule kept the full rate (linear warm-up over 1 step would also give lr, so check the log too)
    assert torch.allclose((m.weight - before).abs(), torch.full_like(before, 0.1), atol=1e-3)
    assert len(seen) == 1 and seen[0]["loss"] > 0
    # over 4 steps the linear schedule decays the rate, the constant one does not: it moves further
    moved = {}
    for sched in ("constant", "linear"):
        mm = _model()
        start = mm.weight.detach().clone()
        train_loop(mm, lambda idx, mm=mm: ((mm(x[idx]).squeeze(1) - y[idx] + 100) ** 2).mean(), [list(range(16))] * 4,
                   tmp_path / sched, lr=0.1, weight_decay=0.0, log=None, schedule=sched)
        moved[sched] = float((mm.weight.detach() - start).abs().sum())
    assert moved["constant"] > 1.2 * moved["linear"]
    with pytest.raises(ValueError, match="schedule"):
        train_loop(m, None, [[0]], tmp_path / "d", schedule="cosine", log=None)
    with pytest.raises(ValueError, match="clip"):
        train_loop(m, None, [[0]], tmp_path / "e", clip="both", log=None)


def test_epochs_are_evaluated_and_the_best_one_is_kept(tmp_path):
    x, y = _data()
    m = _model()
    scores = iter([0.5, 0.9, 0.7])                 # dev score after epochs 1, 2, 3: epoch 2 is best
    weights = {}

    def save(path):
        path.mkdir(parents=True, exist_ok=True)
        torch.save(m.state_dict(), path / "w.pt")
        weights[path.name + str(len(weights))] = m.weight.detach().clone()

    def on_epoch(epoch):
        weights[f"epoch{epoch}"] = m.weight.detach().clone()
        return next(scores)
    stats = train_loop(m, lambda idx: ((m(x[idx]).squeeze(1) - y[idx]) ** 2).mean(), [list(range(16))] * 6,
                       tmp_path / "run", lr=0.05, log=None, schedule="constant", save=save,
                       epoch_ends=[2, 4, 6], on_epoch=on_epoch, keep_best=True)
    assert [c["epoch"] for c in stats["epoch_curve"]] == [1, 2, 3] and stats["best_epoch"] == 2
    kept = torch.load(tmp_path / "run" / "final" / "w.pt")["weight"]
    assert torch.equal(kept, weights["epoch2"]) and not torch.equal(kept, weights["epoch3"])
    assert not (tmp_path / "run" / "best").exists()


def test_a_resumed_run_keeps_the_dropout_masks_of_an_uninterrupted_one(tmp_path):
    x, y = _data()
    batches = [list(range(i, i + 4)) for i in range(0, 16, 4)]

    def make():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Dropout(0.5), torch.nn.Linear(3, 1))

    def loss_for(m):
        return lambda idx: ((m(x[idx]).squeeze(1) - y[idx]) ** 2).mean()

    full = make()
    train_loop(full, loss_for(full), batches, tmp_path / "full", lr=0.1, checkpoint_every=2, log=None, seed=3)
    part = make()
    calls = []

    def killed_at_step_3(idx, f=loss_for(part)):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("killed")
        return f(idx)

    with pytest.raises(RuntimeError):
        train_loop(part, killed_at_step_3, batches, tmp_path / "part", lr=0.1, checkpoint_every=2, log=None, seed=3)
    torch.manual_seed(123)     # whatever the generator did in between, the resume restores it
    resumed = make()
    stats = train_loop(resumed, loss_for(resumed), batches, tmp_path / "part", lr=0.1, checkpoint_every=2, log=None,
                       seed=3)
    assert stats["resumed_from_step"] == 2
    for p, q in zip(full.parameters(), resumed.parameters()):
        assert torch.equal(p, q)


def test_recorded_model_paths_name_no_machine(tmp_path, monkeypatch):
    """Training stats are committed with kept models: a start model inside the clone is recorded relative to it,
    one in the home cache as ~/..., and a model name unchanged."""
    from toolkit.paths import REPO, portable
    assert portable(REPO / "data" / "models" / "feedback" / "w" / "final") == "data/models/feedback/w/final"
    monkeypatch.setenv("HOME", str(tmp_path))
    assert portable(tmp_path / ".cache" / "m" / "final") == "~/.cache/m/final"
    assert portable("sentence-transformers/all-MiniLM-L6-v2") == "sentence-transformers/all-MiniLM-L6-v2"
    assert portable("/elsewhere/m") == "/elsewhere/m"
