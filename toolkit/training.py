"""The one training loop of the suite (ToolRerank's dual encoder, cross-encoder and classifier, the
query-generation SFT and alignment steps), and where trained models are cached.

sentence-transformers' ``SentenceTransformerTrainer`` / ``CrossEncoderTrainer`` need the
``datasets`` package, which is not in the project's environment; the loop below calls the same
sentence-transformers loss modules (``MultipleNegativesRankingLoss``, ``BinaryCrossEntropyLoss``)
on batches we build ourselves, with AdamW, linear warm-up then linear decay (the schedule of
both trainers and of ToolBench's ``model.fit``), and adds what a shared 2-core machine needs:

- a checkpoint (weights, optimizer, scheduler, step, torch's RNG state) every ``checkpoint_every`` steps, so a
  killed run resumes where it stopped with the weights an uninterrupted run reaches (batches are a pure function
  of the seed, so the order is the same; the RNG state keeps the dropout masks);
- the final model saved to ``<dir>/final`` with ``train_stats.json`` (steps, pairs, seconds,
  pairs/s); a finished directory is never trained again;
- throughput logged every ``log_every`` steps;
- ``schedule``: linear warm-up then linear decay (default) or a constant rate (querygen App. A.2);
  ``clip``: by global norm (default) or by value; ``micro_batches`` splits a batch into weighted
  parts whose gradients accumulate (a batch of 32 that does not fit in memory at once).

Model directories: ``cache_dir()/models/toolrerank/<profile>-<hash>/<stage>/``, the hash taken over
every parameter that changes the trained weights (:func:`model_dir`).
"""
from __future__ import annotations

import hashlib
import json
import math
import random
import time
from pathlib import Path
from typing import Callable, Sequence

from toolkit.paths import cache_dir


def params_hash(params: dict) -> str:
    return hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()[:12]


def model_dir(profile: str, stage: str, params: dict, root: Path | None = None) -> Path:
    """``<root or cache_dir()/models/toolrerank>/<profile>-<hash(params)>/<stage>``; writes params.json."""
    d = Path(root or cache_dir() / "models" / "toolrerank") / f"{profile}-{params_hash(params)}" / stage
    d.mkdir(parents=True, exist_ok=True)
    p = d / "params.json"
    if not p.exists():
        p.write_text(json.dumps(params, indent=1, sort_keys=True, default=str) + "\n")
    return d


def is_trained(directory: Path) -> bool:
    return (Path(directory) / "final" / "train_stats.json").is_file()


def read_stats(directory: Path) -> dict:
    return json.loads((Path(directory) / "final" / "train_stats.json").read_text())


def trained(directory: Path) -> tuple[Path, dict] | None:
    """(``directory/final``, its train stats) if a training run finished there, else None."""
    return (Path(directory) / "final", read_stats(directory)) if is_trained(directory) else None


def write_stats(directory: Path, stats: dict) -> None:
    (Path(directory) / "final" / "train_stats.json").write_text(json.dumps(stats, indent=1) + "\n")


def set_threads(n: int | None) -> None:
    if n:
        import torch
        torch.set_num_threads(n)


def batches_no_duplicates(items: Sequence[tuple], batch_size: int, seed: int,
                          keys: Callable[[tuple], Sequence[str]] = lambda it: it, min_size: int = 1
                          ) -> list[list[tuple]]:
    """Shuffle ``items`` and cut them into batches where no key (e.g. query text, document text)
    occurs twice — in-batch negatives must not contain a second positive. Greedy, like
    sentence-transformers' ``NoDuplicatesBatchSampler``; batches under ``min_size`` are dropped.

    When one document is the positive of many items (ToolLens: one API is gold for 3,595 of 44,865 training
    pairs), each batch can hold only one of them, so the greedy pass ends in a long tail of tiny batches made
    of the popular documents' leftover pairs -- 1,080 batches of at most 4 pairs after 1,296 full ones, all at
    the end of the epoch, where they push every query toward those few documents with one or two negatives.
    ``min_size`` (e.g. half the batch) drops that tail: the popular documents still appear once per batch."""
    order = list(items)
    random.Random(seed).shuffle(order)
    key_sets = [frozenset(keys(it)) for it in order]
    # One pass per batch over the pending indices, stopped as soon as the batch is full: the items after that
    # point keep their order untouched (a list slice), so a pass costs the batch plus the conflicts skipped
    # before it, not the whole epoch (ToolLens' 44,865 pairs at batch 8: 219 s with full passes, 0.9 s).
    out, pending = [], list(range(len(order)))
    while pending:
        batch, used, skipped, stop = [], set(), [], len(pending)
        for pos, i in enumerate(pending):
            if len(batch) == batch_size:
                stop = pos
                break
            if key_sets[i].isdisjoint(used):
                batch.append(order[i])
                used |= key_sets[i]
            else:
                skipped.append(i)
        if len(batch) >= min_size:
            out.append(batch)
        pending = skipped + pending[stop:]
    return out


def epoch_batches(make_epoch: Callable[[int], list[list]], epochs: int, max_steps: int | None = None
                  ) -> tuple[list[list], list[int]]:
    """Concatenate ``make_epoch(e)`` for e < epochs (cut at ``max_steps``) -> (batches, the step count at
    the end of each complete epoch), the ``epoch_ends`` :func:`train_loop` evaluates at."""
    batches, ends = [], []
    for e in range(epochs):
        batches += make_epoch(e)
        ends.append(len(batches))
    if max_steps:
        batches = batches[:max_steps]
    return batches, [x for x in ends if x <= len(batches)]


def train_loop(module, loss_fn: Callable[[list], "object"], batches: list[list], out_dir: Path, *,
               lr: float = 2e-5, warmup_steps: int | None = None, warmup_ratio: float = 0.1,
               weight_decay: float = 0.01, max_grad_norm: float = 1.0, checkpoint_every: int = 200,
               log_every: int = 20, save: Callable[[Path], None] | None = None,
               log: Callable[[str], None] | None = print, seed: int = 0, schedule: str = "linear",
               clip: str = "norm", micro_batches: Callable[[list], list[tuple[list, float]]] | None = None,
               on_step: Callable[[dict], None] | None = None, epoch_ends: list[int] | None = None,
               on_epoch: Callable[[int], float] | None = None, keep_best: bool = False) -> dict:
    """Run ``loss_fn(batch)`` + AdamW over ``batches``; checkpoint/resume in ``out_dir``.

    ``save(path)`` writes the final model (e.g. ``model.save``). ``micro_batches(batch)`` returns
    ``[(part, weight), ...]``: the step's loss is ``sum(weight * loss_fn(part))``, each part
    back-propagated on its own. ``on_step(record)`` sees every step's loss.

    ``epoch_ends`` (the step count at the end of each epoch) with ``on_epoch(epoch) -> dev score``: the
    model is evaluated after every epoch (the learning curve, kept in ``epoch_curve.json`` so a resumed
    run keeps it); with ``keep_best`` the epoch with the best dev score is saved as ``final`` (epochs
    chosen on dev) and the stats name it. Returns the stats.
    """
    import torch
    if schedule not in ("linear", "constant"):
        raise ValueError(f"schedule must be 'linear' or 'constant', got {schedule!r}")
    if clip not in ("norm", "value"):
        raise ValueError(f"clip must be 'norm' or 'value', got {clip!r}")

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if is_trained(out_dir):
        return read_stats(out_dir)
    torch.manual_seed(seed)
    params = [p for p in module.parameters() if p.requires_grad]
    decay = [p for n, p in module.named_parameters() if p.requires_grad and not any(
        s in n for s in ("bias", "LayerNorm.weight", "layer_norm.weight", "layernorm.weight", ".norm.weight"))]
    no_decay = [p for p in params if all(p is not q for q in decay)]
    # foreach=False: the per-tensor update gives the same weights (checked bit for bit) without the foreach path's
    # temporaries over all parameters at once. It is not what bounds memory: an alignment iteration of the 0.5B
    # generator still peaks at 19.8 GB RSS (VmHWM) with it, so nothing else heavy may run beside one (a run beside
    # two smoke notebooks was OOM-killed at 23.8 GB)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=lr, foreach=False)
    total = len(batches)
    warm = warmup_steps if warmup_steps is not None else math.ceil(warmup_ratio * total)
    warm = min(warm, max(total - 1, 0))

    def lr_lambda(step: int) -> float:
        if schedule == "constant":
            return 1.0
        if step < warm:
            return (step + 1) / max(1, warm)
        return max(0.0, (total - step) / max(1, total - warm))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda)
    ckpt = out_dir / "checkpoint.pt"
    start, done_pairs, spent = 0, 0, 0.0
    if ckpt.is_file():
        state = torch.load(ckpt, weights_only=False)
        module.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        sched.load_state_dict(state["sched"])
        start, done_pairs, spent = state["step"], state["pairs"], state["seconds"]
        if "torch_rng" in state:
            # dropout masks continue as in an uninterrupted run; a checkpoint without the key (written before it was
            # saved) resumes from the reseeded generator, as those runs did
            torch.set_rng_state(state["torch_rng"])
        if log:
            log(f"resumed {out_dir.name} at step {start}/{total}")
    module.train()
    # mixed precision on a GPU (toolkit.devices: bf16, or fp16 with loss scaling); on the CPU both are no-ops, fp32
    from toolkit import devices
    dev = next(module.parameters()).device.type
    scaler = torch.amp.GradScaler("cuda", enabled=devices.mixed_precision(dev) == torch.float16)
    t0, pairs0 = time.perf_counter(), done_pairs
    losses: list[float] = []
    curve_file = out_dir / "epoch_curve.json"
    curve: list[dict] = json.loads(curve_file.read_text()) if curve_file.is_file() else []
    ends = {e: i + 1 for i, e in enumerate(epoch_ends or [])}
    for step in range(start, total):
        batch = batches[step]
        step_loss = 0.0
        for part, weight in (micro_batches(batch) if micro_batches else [(batch, 1.0)]):
            with devices.autocast(dev):
                loss = loss_fn(part) * weight
            scaler.scale(loss).backward()
            step_loss += float(loss.detach())
        scaler.unscale_(opt)
        if clip == "norm":
            torch.nn.utils.clip_grad_norm_(params, max_grad_norm)
        else:
            torch.nn.utils.clip_grad_value_(params, max_grad_norm)
        scaler.step(opt)
        scaler.update()
        sched.step()
        opt.zero_grad(set_to_none=True)
        losses.append(step_loss)
        if on_step:
            on_step({"step": step, "loss": step_loss, "seconds": round(spent + time.perf_counter() - t0, 1)})
        done_pairs += len(batch)
        now = spent + time.perf_counter() - t0
        if log and ((step + 1) % log_every == 0 or step + 1 == total):
            rate = (done_pairs - pairs0) / max(1e-9, time.perf_counter() - t0)
            log(f"{out_dir.name}: step {step + 1}/{total} loss {sum(losses[-log_every:]) / len(losses[-log_every:]):.4f} "
                f"{rate:.1f} pairs/s  {now / 60:.1f} min")
        if on_epoch and step + 1 in ends and all(c["epoch"] != ends[step + 1] for c in curve):
            epoch = ends[step + 1]
            module.eval()
            score = float(on_epoch(epoch))
            module.train()
            best_so_far = max((c["dev"] for c in curve), default=float("-inf"))
            curve.append({"epoch": epoch, "step": step + 1, "dev": score, "loss": round(step_loss, 4),
                          "seconds": round(now, 1)})
            curve_file.write_text(json.dumps(curve, indent=1))
            if log:
                log(f"{out_dir.name}: epoch {epoch} dev {score:.4f}")
            if keep_best and save and score > best_so_far:
                save(out_dir / "best")
        if checkpoint_every and (step + 1) % checkpoint_every == 0 and step + 1 < total:
            tmp = ckpt.with_suffix(".tmp")
            torch.save({"model": module.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(),
                        "step": step + 1, "pairs": done_pairs, "seconds": now, "torch_rng": torch.get_rng_state()}, tmp)
            tmp.replace(ckpt)
    module.eval()
    seconds = spent + time.perf_counter() - t0
    stats = {"steps": total, "pairs": done_pairs, "seconds": round(seconds, 1),
             "pairs_per_second": round(done_pairs / max(seconds, 1e-9), 2), "lr": lr, "warmup_steps": warm,
             "final_loss": round(sum(losses[-log_every:]) / max(1, len(losses[-log_every:])), 4) if losses else None,
             "resumed_from_step": start}
    final = out_dir / "final"
    if curve:
        best = max(curve, key=lambda c: (c["dev"], -c["epoch"]))
        stats.update(epoch_curve=curve, best_epoch=best["epoch"], best_dev=best["dev"])
    if keep_best and curve and (out_dir / "best").is_dir() and best["epoch"] != curve[-1]["epoch"]:
        import shutil
        shutil.rmtree(final, ignore_errors=True)
        (out_dir / "best").rename(final)            # the epoch chosen on dev, not the last one
    else:
        final.mkdir(exist_ok=True)
        if save:
            save(final)
        import shutil
        shutil.rmtree(out_dir / "best", ignore_errors=True)
    (final / "train_stats.json").write_text(json.dumps(stats, indent=1) + "\n")
    ckpt.unlink(missing_ok=True)
    return stats
