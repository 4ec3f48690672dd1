"""The ToolRerank reranker trained "to strength", the paper's way (issue 82 item 1): a named configuration beside the
screen-budget ones, whose models and score caches do not exist yet (nothing the notebooks replay reads it).

- **Groups.** Every training query of the split with every gold API: one group per (query, gold API), the gold API
  followed by the query's hard negatives -- ``neg_top`` non-gold APIs from the DPR's ranks 1-10 and ``neg_mid`` from
  ranks 11-30 (:func:`sample_groups`); ``random_neg`` random library APIs per group is a named variant.
- **Loss.** Per group a listwise softmax cross-entropy over gold + negatives (:func:`listwise_loss`):
  ``L = -log( exp(s_gold) / sum_j exp(s_j) )``, j over the group; pointwise binary cross-entropy on every
  (query, API, label) pair is the named variant ``loss="bce"`` (:func:`pointwise_loss`).
- **Learning rates.** The fresh head and pooler train at ``head_lr`` (default 50x the encoder's ``lr``), in their own
  optimizer parameter group (:func:`param_groups`).
- **Early stopping.** Dev Recall@5 of Rerank-10 every ``eval_every`` steps, the curve recorded; training stops when
  it has not risen for ``patience`` evaluations and the best evaluation's weights are kept (:class:`EarlyStopping`).
- **Speed.** A compact API rendering (:func:`compact_text`: name and description first, then the parameters' names;
  the return schema left out) and length-bucketed batches (:func:`bucket_batches`: groups of similar token length share
  a batch, so little padding is computed).
- **Seeds** 0, 1, 2; every run checkpoints through :mod:`toolkit.checkpoints`, so it continues across sessions.

The plan (pairs, steps per epoch, measured pairs/s, hours per seed): ``python scripts/train_toolrerank.py --profile
standard --strong --plan``; the rate is measured by ``--strong --bench SECONDS`` (before/after bucketing + compact
rendering in one run) into :data:`BENCH_FILE`.
"""
from __future__ import annotations

import json
import random
import re
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from toolkit.paths import REPO

BENCH_FILE = REPO / "results" / "bench" / "toolrerank_strong.json"


@dataclass(frozen=True)
class StrongConfig:
    base: str = "minilm"
    neg_top: int = 4                 # hard negatives per group from the DPR's ranks 1-10 (the ones Rerank-10 sees)
    neg_mid: int = 2                 # ... and from ranks 11-30
    random_neg: int = 0              # random library APIs per group (the variant "strong + random library negatives")
    loss: str = "listwise"           # listwise softmax CE per group, or "bce" (pointwise, the variant)
    lr: float = 2e-5                 # encoder
    head_lr: float = 1e-3            # the fresh head and pooler (all-MiniLM-L6-v2 never trained its pooler)
    warmup_ratio: float = 0.05
    batch_groups: int = 8            # groups per step (8 x 7 = 56 pairs with the defaults)
    max_len: int = 128
    compact: bool = True             # compact_text rendering (False: ToolLens's document text)
    bucketed: bool = True            # length-bucketed batches (False: batches in shuffled order)
    max_epochs: int = 4
    eval_every: int = 300            # steps between dev evaluations
    patience: int = 3                # evaluations without a new best before stopping
    dev_queries: int = 200
    seeds: tuple[int, ...] = (0, 1, 2)
    checkpoint_every: int = 300

    def __post_init__(self) -> None:
        if self.loss not in ("listwise", "bce"):
            raise ValueError(f"StrongConfig.loss must be 'listwise' or 'bce', got {self.loss!r}")
        for k in ("neg_top", "neg_mid", "random_neg"):
            if getattr(self, k) < 0:
                raise ValueError(f"StrongConfig.{k} must be >= 0, got {getattr(self, k)}")
        if self.neg_top + self.neg_mid + self.random_neg < 1:
            raise ValueError("StrongConfig needs at least one negative per group (neg_top, neg_mid or random_neg)")
        for k in ("batch_groups", "max_len", "max_epochs", "eval_every", "patience", "checkpoint_every"):
            if getattr(self, k) < 1:
                raise ValueError(f"StrongConfig.{k} must be >= 1, got {getattr(self, k)}")

    @property
    def group_size(self) -> int:
        return 1 + self.neg_top + self.neg_mid + self.random_neg


#: the named configurations: the main one and its variants (fields changed)
STRONG_VARIANTS = {
    "strong": {},
    "strong + random library negatives": {"random_neg": 2},
    "strong pointwise BCE": {"loss": "bce"},
}


def strong_config(name: str = "strong", **overrides) -> StrongConfig:
    if name not in STRONG_VARIANTS:
        raise ValueError(f"unknown strong reranker configuration {name!r}; one of {sorted(STRONG_VARIANTS)}")
    return replace(StrongConfig(), **STRONG_VARIANTS[name], **overrides)


# --- rendering --------------------------------------------------------------------------------------------------

_TOOLLENS = re.compile(r"^category_name:(?P<cat>.*?), tool_name:(?P<tool>.*?), api_name:(?P<api>.*?), "
                       r"api_description:(?P<desc>.*?), required_params: (?P<req>.*?), optional_params: (?P<opt>.*?), "
                       r"return_schema: (?P<ret>.*)$", re.S)


def _param_names(raw: str) -> str:
    try:
        params = json.loads(raw)
    except json.JSONDecodeError:
        return raw.strip()
    if not isinstance(params, list):
        return ""
    return ", ".join(str(p.get("name", "")) if isinstance(p, dict) else str(p) for p in params)


def compact_text(text: str) -> str:
    """A ToolLens document text as ``"<api> (<tool>): <description> | required: a, b | optional: c | <category>"``:
    name and description first (what a truncated input keeps), the parameters' names after, the return schema
    left out. A text not in ToolLens's layout raises, naming the start of it."""
    m = _TOOLLENS.match(text)
    if not m:
        raise ValueError(f"compact_text: not a ToolLens document text (category_name:..., tool_name:..., api_name:..., "
                         f"api_description:..., required_params: ..., optional_params: ..., return_schema: ...): "
                         f"{text[:80]!r}")
    out = f"{m['api'].strip()} ({m['tool'].strip()}): {m['desc'].strip()}"
    for label, key in (("required", "req"), ("optional", "opt")):
        names = _param_names(m[key])
        if names:
            out += f" | {label}: {names}"
    return out + f" | {m['cat'].strip()}"


# --- groups -----------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Group:
    qid: str
    gold: str
    negatives: tuple[str, ...]
    ranks: tuple[int, ...] = field(default=())     # each negative's DPR rank (1-based; 0 = random library API)


def sample_groups(qrels: dict[str, dict[str, int]], ranked: dict[str, list[str]], neg_top: int, neg_mid: int,
                  seed: int, random_pool: list[str] = (), random_neg: int = 0) -> list[Group]:
    """One group per (query, gold API), queries in ``qrels`` order, gold APIs in their qrels order. The query's
    negatives (shared by its groups) are ``neg_top`` non-gold APIs drawn from its DPR ranks 1-10 and ``neg_mid`` from
    ranks 11-30 (fewer when those ranks hold fewer), plus ``random_neg`` per group from ``random_pool`` (non-gold).
    A query without a DPR ranking raises, naming it."""
    rng = random.Random(seed)
    out = []
    for q, rel in qrels.items():
        gold = [d for d, r in rel.items() if r > 0]
        if q not in ranked:
            raise ValueError(f"sample_groups: query {q!r} has no DPR ranking; rank every training query to depth >= 30")
        lst = ranked[q]
        top = [(i + 1, d) for i, d in enumerate(lst[:10]) if d not in rel]
        mid = [(i + 1, d) for i, d in enumerate(lst[10:30], start=10) if d not in rel]
        picked = rng.sample(top, min(neg_top, len(top))) + rng.sample(mid, min(neg_mid, len(mid)))
        for g in gold:
            negs = list(picked)
            if random_neg:
                pool = [d for d in random_pool if d not in rel]
                negs += [(0, d) for d in rng.sample(pool, min(random_neg, len(pool)))]
            out.append(Group(q, g, tuple(d for _, d in negs), tuple(r for r, _ in negs)))
    return out


# --- batching ---------------------------------------------------------------------------------------------------

def bucket_batches(lengths: list[int], batch_size: int, seed: int, bucketed: bool = True,
                   pool_batches: int = 50) -> list[list[int]]:
    """Batches of indices into ``lengths`` (one epoch; the order a function of ``seed`` only). Bucketed: the
    indices are shuffled, cut into pools of ``pool_batches * batch_size``, each pool sorted by length and cut into
    batches, and the batches shuffled -- a batch holds items of similar length (little padding) and the epoch still
    visits them in random order. Unbucketed: shuffled indices cut into batches."""
    rng = random.Random(seed)
    idx = list(range(len(lengths)))
    rng.shuffle(idx)
    if not bucketed:
        return [idx[i:i + batch_size] for i in range(0, len(idx), batch_size)]
    batches = []
    span = pool_batches * batch_size
    for s in range(0, len(idx), span):
        pool = sorted(idx[s:s + span], key=lambda i: lengths[i])
        batches += [pool[i:i + batch_size] for i in range(0, len(pool), batch_size)]
    rng.shuffle(batches)
    return batches


def padded_tokens(batches: list[list[int]], lengths: list[int]) -> int:
    """Tokens a padded batch computes: sum over batches of size x longest item (what bucketing lowers)."""
    return sum(len(b) * max(lengths[i] for i in b) for b in batches if b)


# --- losses -----------------------------------------------------------------------------------------------------

def listwise_loss(logits, sizes: list[int]):
    """Mean over groups of ``-log softmax(s)[0]``: ``logits`` holds each group's scores in turn (gold first, then its
    negatives), ``sizes`` each group's length; groups may differ in length (padded with -inf)."""
    import torch
    n, width = len(sizes), max(sizes)
    mat = torch.full((n, width), float("-inf"), dtype=logits.dtype)
    pos = 0
    for i, s in enumerate(sizes):
        mat[i, :s] = logits[pos:pos + s]
        pos += s
    if pos != logits.numel():
        raise ValueError(f"listwise_loss: sizes add up to {pos}, logits hold {logits.numel()}")
    return torch.nn.functional.cross_entropy(mat, torch.zeros(n, dtype=torch.long))


def pointwise_loss(logits, sizes: list[int]):
    """Binary cross-entropy with logits, label 1 for each group's first item (the gold API), 0 for the others."""
    import torch
    labels = torch.cat([torch.tensor([1.0] + [0.0] * (s - 1)) for s in sizes]).to(logits.dtype)
    return torch.nn.functional.binary_cross_entropy_with_logits(logits, labels)


def param_groups(module, lr: float, head_lr: float, head_names: tuple[str, ...] = ("classifier", "pooler"),
                 weight_decay: float = 0.01) -> list[dict]:
    """AdamW parameter groups: parameters whose name holds one of ``head_names`` at ``head_lr``, the others at ``lr``;
    no weight decay on biases and LayerNorm weights. Raises when no parameter is a head's (a renamed head would
    silently train at the encoder's rate)."""
    groups = {(h, d): [] for h in (True, False) for d in (True, False)}
    for name, p in module.named_parameters():
        if p.requires_grad:
            head = any(h in name for h in head_names)
            decay = not (name.endswith("bias") or "LayerNorm" in name or "layer_norm" in name)
            groups[(head, decay)].append(p)
    if not groups[(True, True)] and not groups[(True, False)]:
        raise ValueError(f"param_groups: no parameter name holds any of {head_names}; name the head's modules")
    return [{"params": ps, "lr": head_lr if h else lr, "weight_decay": weight_decay if d else 0.0}
            for (h, d), ps in groups.items() if ps]


# --- early stopping ---------------------------------------------------------------------------------------------

@dataclass
class EarlyStopping:
    """Dev score after every evaluation; ``stop`` once ``patience`` evaluations in a row brought no new best
    (a tie is not a rise). ``curve`` is the record; its state is JSON (a resumed run goes on counting)."""
    patience: int
    curve: list = field(default_factory=list)
    best: float = float("-inf")
    best_step: int = -1
    since_best: int = 0

    def update(self, step: int, score: float, loss: float | None = None) -> bool:
        """Record ``score`` at ``step``; True when this is a new best (save the weights)."""
        self.curve.append({"step": step, "dev_recall@5": score, **({} if loss is None else {"loss": loss})})
        if score > self.best:
            self.best, self.best_step, self.since_best = score, step, 0
            return True
        self.since_best += 1
        return False

    @property
    def stop(self) -> bool:
        return self.since_best >= self.patience

    def state(self) -> dict:
        return asdict(self)


# --- the plan ---------------------------------------------------------------------------------------------------

def plan(qrels: dict[str, dict[str, int]], cfg: StrongConfig, pairs_per_second: float | None,
         expected_epochs: float = 2.0) -> dict:
    """Pairs and steps of one epoch (every training query x every gold API, ``cfg.group_size`` pairs per group;
    the upper bound: a query with fewer non-gold APIs in its top 30 has fewer), and hours per seed and for all seeds at
    the measured rate, for ``expected_epochs`` epochs before early stopping (the dev evaluations included at
    ``eval_every``, each ``dev_queries`` x 10 pairs scored at ~3x the training rate)."""
    groups = sum(1 for rel in qrels.values() for r in rel.values() if r > 0)
    pairs = groups * cfg.group_size
    steps = -(-groups // cfg.batch_groups)
    out = {"training_queries": len(qrels), "groups (query, gold API)": groups, "pairs per group": cfg.group_size,
           "pairs per epoch": pairs, "steps per epoch": steps, "expected epochs": expected_epochs,
           "seeds": len(cfg.seeds), "pairs/s (measured)": pairs_per_second}
    if pairs_per_second:
        evals = expected_epochs * steps / cfg.eval_every
        train_h = expected_epochs * pairs / pairs_per_second / 3600
        eval_h = evals * cfg.dev_queries * 10 / (3 * pairs_per_second) / 3600
        out.update({"hours per seed": round(train_h + eval_h, 2), "hours, all seeds": round(len(cfg.seeds) *
                                                                                            (train_h + eval_h), 2)})
    return out


def measured_rate(path: Path = BENCH_FILE) -> float | None:
    """The pairs/s of the bucketed + compact setting in the committed benchmark, or None when it was not measured."""
    if not Path(path).is_file():
        return None
    doc = json.loads(Path(path).read_text())
    try:
        return float(doc["after"]["pairs_per_second"])
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"{path}: no after.pairs_per_second; re-run scripts/train_toolrerank.py --strong --bench 150")


# --- the trainer ------------------------------------------------------------------------------------------------

def train_groups(name: str, module, score, groups: list[Group], text_of, lengths: list[int], cfg: StrongConfig,
                 seed: int, *, base: str, base_sha256: str, command: str, dev_eval=None, max_steps: int | None = None,
                 root: Path | None = None, log=print) -> dict:
    """Train ``module`` on ``groups`` (``score(list of (query, doc) text pairs) -> logits`` through it;
    ``text_of(qid_or_doc_id, is_query)`` gives texts; ``lengths[i]`` group i's token length for bucketing) with the
    configuration's loss, learning rates and batches, checkpointing into the store (:mod:`toolkit.checkpoints`)
    as ``name`` every ``checkpoint_every`` steps: a run killed or ended continues from there with the same data
    order and RNG state. ``dev_eval()`` (dev Recall@5) every ``eval_every`` steps feeds :class:`EarlyStopping`; the
    best evaluation's weights are saved as ``<name>-best``. ``max_steps`` stops this call (not the run) after that
    many steps in total. Returns the training record (curve, steps, pairs, pairs/s, stopped_early)."""
    import time

    import torch

    from toolkit import checkpoints as C
    data_sha = C.data_sha256([[g.qid, g.gold, list(g.negatives)] for g in groups])
    opt = torch.optim.AdamW(param_groups(module, cfg.lr, cfg.head_lr), foreach=False)
    epoch_batches = [bucket_batches(lengths, cfg.batch_groups, seed * 1000 + e, cfg.bucketed)
                     for e in range(cfg.max_epochs)]
    total = sum(len(b) for b in epoch_batches)
    warm = max(1, int(cfg.warmup_ratio * len(epoch_batches[0])))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min((s + 1) / warm, max(0.0, (total - s) / max(1, total - warm))))
    stopper, step, losses, pairs, seconds = EarlyStopping(cfg.patience), 0, [], 0, 0.0
    if C.exists(name, root):
        ck = C.load(name, root)
        if ck.manifest["training_data_sha256"] != data_sha or ck.manifest["config"] != asdict(cfg):
            raise ValueError(f"checkpoint {name}: trained on other data or another configuration than this run's; "
                             f"retire it (toolkit.checkpoints.retire({name!r})) or use another name")
        module.load_state_dict(ck.tensors, strict=False)
        if ck.optimizer is not None:
            opt.load_state_dict(ck.optimizer["opt"])
            sched.load_state_dict(ck.optimizer["sched"])
        else:                            # the optimizer restarts (the manifest says so); the schedule goes on
            for _ in range(ck.state["step"]):
                sched.step()
        C.set_rng_state(ck.state["rng"])
        step, pairs, seconds = ck.state["step"], ck.state["pairs"], ck.state["seconds"]
        losses = ck.manifest["curves"].get("loss", [])
        stopper = EarlyStopping(**ck.state["early_stopping"])
        if log:
            log(f"{name}: resumed at step {step}/{total} ({ck.manifest['optimizer']})")
    else:
        torch.manual_seed(seed)

    def save(at: str, done: int) -> None:
        C.save(at, module.state_dict(), kind="full", base=base, base_sha256=base_sha256, data_sha256=data_sha,
               config=asdict(cfg), seed=seed, steps_done=done, command=command,
               curves={"loss": losses, "dev": stopper.curve},
               optimizer={"opt": opt.state_dict(), "sched": sched.state_dict()},
               state={"step": done, "pairs": pairs, "seconds": seconds, "early_stopping": stopper.state()},
               root=root)

    flat = [b for bs in epoch_batches for b in bs]
    lossf = listwise_loss if cfg.loss == "listwise" else pointwise_loss
    module.train()
    t0, start = time.perf_counter(), step
    while step < total and not stopper.stop and (max_steps is None or step < max_steps):
        batch = [groups[i] for i in flat[step]]
        qd, sizes = [], []
        for g in batch:
            docs = (g.gold, *g.negatives)
            qd += [(text_of(g.qid, True), text_of(d, False)) for d in docs]
            sizes.append(len(docs))
        loss = lossf(score(qd), sizes)
        loss.backward()
        torch.nn.utils.clip_grad_norm_([p for p in module.parameters() if p.requires_grad], 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        step += 1
        pairs += len(qd)
        losses.append(round(float(loss), 5))
        if dev_eval is not None and step % cfg.eval_every == 0:
            module.eval()
            with torch.no_grad():
                score_now = float(dev_eval())
            module.train()
            if stopper.update(step, score_now, sum(losses[-cfg.eval_every:]) / len(losses[-cfg.eval_every:])):
                save(f"{name}-best", step)
            if log:
                log(f"{name}: step {step} dev Recall@5 {score_now:.4f} (best {stopper.best:.4f} at {stopper.best_step})")
        if step % cfg.checkpoint_every == 0 or step == total or stopper.stop or step == max_steps:
            seconds_now = seconds + time.perf_counter() - t0
            seconds, t0 = seconds_now, time.perf_counter()
            save(name, step)
    seconds += time.perf_counter() - t0
    module.eval()
    return {"name": name, "seed": seed, "steps": step, "steps_this_call": step - start, "total_steps": total,
            "pairs": pairs, "seconds": round(seconds, 1), "pairs_per_second": round(pairs / max(seconds, 1e-9), 2),
            "stopped_early": stopper.stop, "best_step": stopper.best_step, "best_dev_recall@5": stopper.best,
            "curve": stopper.curve}
