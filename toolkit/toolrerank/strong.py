"""The ToolRerank reranker trained "to strength", the paper's way: a named configuration beside the
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
                 root: Path | None = None, log=print, max_seconds: float | None = None,
                 store: bool = True) -> dict:
    """Train ``module`` on ``groups`` (``score(list of (query, doc) text pairs) -> logits`` through it;
    ``text_of(qid_or_doc_id, is_query)`` gives texts; ``lengths[i]`` group i's token length for bucketing) with the
    configuration's loss, learning rates and batches, checkpointing into the store (:mod:`toolkit.checkpoints`)
    as ``name`` every ``checkpoint_every`` steps: a run killed or ended continues from there with the same data
    order and RNG state. ``dev_eval()`` (dev Recall@5) every ``eval_every`` steps feeds :class:`EarlyStopping`; the
    best evaluation's weights are saved as ``<name>-best``. ``max_steps`` stops this call (not the run) after that
    many steps in total, ``max_seconds`` after that much time; ``store=False`` writes no checkpoint (a benchmark:
    a MiniLM's float32 weights and Adam state take a while to write). Returns the training record (curve, steps, pairs, pairs/s, stopped_early)."""
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
        if ck.manifest["training_data_sha256"] != data_sha or ck.manifest["config"] != json.loads(json.dumps(asdict(cfg))):
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
    while step < total and not stopper.stop and (max_steps is None or step < max_steps) \
            and (max_seconds is None or time.perf_counter() - t0 < max_seconds):
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
        losses.append(round(float(loss.detach()), 5))
        if dev_eval is not None and step % cfg.eval_every == 0:
            module.eval()
            with torch.no_grad():
                score_now = float(dev_eval())
            module.train()
            if stopper.update(step, score_now, sum(losses[-cfg.eval_every:]) / len(losses[-cfg.eval_every:])):
                save(f"{name}-best", step)
            if log:
                log(f"{name}: step {step} dev Recall@5 {score_now:.4f} (best {stopper.best:.4f} at {stopper.best_step})")
        if store and (step % cfg.checkpoint_every == 0 or step == total or stopper.stop or step == max_steps \
                or (max_seconds is not None and time.perf_counter() - t0 >= max_seconds)):
            seconds += time.perf_counter() - t0          # training time, the checkpoint's writing not counted
            save(name, step)
            t0 = time.perf_counter()
    seconds += time.perf_counter() - t0
    module.eval()
    return {"name": name, "seed": seed, "steps": step, "steps_this_call": step - start, "total_steps": total,
            "pairs": pairs, "seconds": round(seconds, 1), "pairs_per_second": round(pairs / max(seconds, 1e-9), 2),
            "stopped_early": stopper.stop, "best_step": stopper.best_step, "best_dev_recall@5": stopper.best,
            "curve": stopper.curve}


# --- the real run -----------------------------------------------------------------------------------------------

@dataclass
class Prepared:
    groups: list
    text: dict            # doc id -> rendered text (ToolLens APIs and, with random_neg, library APIs)
    queries: dict         # qid -> text
    lengths: list         # per group: characters of the query + its longest rendered API (a proxy for tokens)
    dev_eval_for: object  # predict -> dev Recall@5 of Rerank-10 over the DPR's top 10
    qrels: dict


def checkpoint_name(exp_cfg, name: str, seed: int) -> str:
    from .experiment import model_root, toollens_split
    root = model_root(toollens_split(exp_cfg.setup), exp_cfg.setup)
    return f"toolrerank-{exp_cfg.profile}-{root.name}-{name.replace(' ', '-').replace('+', 'plus')}-s{seed}"


def prepare(exp_cfg, scfg: StrongConfig, seed: int, log=print) -> Prepared:
    """The groups of the main split's every training query (DPR ranks from its committed vectors or live weights),
    rendered texts, bucketing lengths and the dev evaluation (``scfg.dev_queries`` dev queries, Rerank-10 Recall@5)."""
    from . import dpr_vectors
    from .experiment import (negative_pool, random_negative_pool, rerank_dev_eval, toollens_split, train_all)
    setup = exp_cfg.setup
    split = toollens_split(setup)
    models = train_all(split, setup, log=log, stages=("dual_encoder",))
    train = split.train
    retr = dpr_vectors.retriever(models.dual_encoder)
    ids, texts = negative_pool(train, setup.ce_neg_pool)
    retr.index(ids, texts)
    run = retr.search(train.query_texts(), k=30)
    ranked = {q: sorted(r, key=lambda d: -r[d]) for q, r in run.items()}
    render = compact_text if scfg.compact else (lambda t: t)
    text = {d: render(doc.text) for d, doc in train.corpus.items()}
    library = []
    if scfg.random_neg:
        lib = random_negative_pool(train)
        library = [f"library:{i}" for i in range(len(lib))]
        text.update({k: render(t) for k, t in zip(library, lib)})
    qrels = {q: train.qrels[q] for q in sorted(train.qrels)}
    groups = sample_groups(qrels, ranked, scfg.neg_top, scfg.neg_mid, seed, library, scfg.random_neg)
    queries = {q: train.queries[q].text for q in qrels}
    lengths = [len(queries[g.qid]) + max(len(text[d]) for d in (g.gold, *g.negatives)) for g in groups]
    dev = split.dev.sample(scfg.dev_queries, seed=setup.seed + 7)
    dretr = dpr_vectors.retriever(models.dual_encoder)
    dretr.index(*dev.doc_texts())
    top10 = {q: sorted(r, key=lambda d: -r[d]) for q, r in dretr.search(dev.query_texts(), k=10).items()}
    by_raw = {dev.corpus[d].text: render(dev.corpus[d].text) for d in dev.corpus}
    evaluate = rerank_dev_eval(dev, top10)
    return Prepared(groups, text, queries, lengths,
                    lambda predict: (lambda: evaluate(lambda pairs: predict([(q, by_raw[d]) for q, d in pairs]))),
                    qrels)


def cross_encoder(base: str, max_len: int, seed: int):
    """(HF module, score(pairs) -> logits with gradients, base sha256): the base encoder with a fresh one-logit head."""
    import torch

    from toolkit.retrieval.models import resolve_model, weights_sha256
    from .reranker import load_base_cross_encoder
    ce = load_base_cross_encoder(base, max_len, seed=seed)
    module, tok = ce.model, ce.tokenizer

    def score(pairs):
        feats = tok([q for q, _ in pairs], [d for _, d in pairs], padding=True, truncation="longest_first",
                    max_length=max_len, return_tensors="pt")
        return module(**feats).logits.view(-1)

    def predict(pairs):
        with torch.no_grad():
            return [float(x) for i in range(0, len(pairs), 64) for x in score(pairs[i:i + 64])]
    return module, score, predict, weights_sha256(resolve_model(base)[0])


def train_seed(exp_cfg, name: str, seed: int, max_steps: int | None = None, log=print, **overrides) -> dict:
    """Train (or continue) configuration ``name`` with ``seed`` on the main split, checkpointing in the store."""
    scfg = strong_config(name, **overrides)
    prep = prepare(exp_cfg, scfg, seed, log)
    module, score, predict, base_sha = cross_encoder(scfg.base, scfg.max_len, seed)
    ck = checkpoint_name(exp_cfg, name, seed)
    command = (f"python scripts/train_toolrerank.py --profile {exp_cfg.profile} --strong --strong-config '{name}' "
               f"--seed {seed}")
    text = lambda x, is_query: prep.queries[x] if is_query else prep.text[x]   # noqa: E731
    return train_groups(ck, module, score, prep.groups, text, prep.lengths, scfg, seed, base=scfg.base,
                        base_sha256=base_sha, command=command, dev_eval=prep.dev_eval_for(predict),
                        max_steps=max_steps, log=log)


def bench(exp_cfg, seconds: float, log=print) -> dict:
    """pairs/s of the strong configuration's training before (ToolLens rendering, shuffled batches) and after
    (compact rendering, length-bucketed batches), in one process, ``seconds`` each, checkpoints in a temporary
    folder; the load average before and after each; written to :data:`BENCH_FILE`."""
    import os
    import tempfile
    out = {"seconds_each": seconds, "cpu_count": os.cpu_count()}
    with tempfile.TemporaryDirectory() as tmp:
        for label, over in (("before", {"compact": False, "bucketed": False}), ("after", {})):
            scfg = strong_config("strong", checkpoint_every=10 ** 9, **over)
            prep = prepare(exp_cfg, scfg, 0, log)
            module, score, _, base_sha = cross_encoder(scfg.base, scfg.max_len, 0)
            text = lambda x, q, p=prep: p.queries[x] if q else p.text[x]   # noqa: E731
            load0 = os.getloadavg()
            rec = train_groups(f"bench-{label}", module, score, prep.groups, text, prep.lengths, scfg, 0,
                               base=scfg.base, base_sha256=base_sha, command="bench", root=Path(tmp), log=log,
                               max_seconds=seconds, store=False)
            out[label] = {"pairs": rec["pairs"], "steps": rec["steps"], "seconds": rec["seconds"],
                          "pairs_per_second": rec["pairs_per_second"], "load_average_start": load0,
                          "load_average_end": os.getloadavg(), **over,
                          "padded_chars_per_epoch": padded_tokens(bucket_batches(prep.lengths, scfg.batch_groups, 0,
                                                                                 scfg.bucketed), prep.lengths)}
    out["ratio"] = round(out["after"]["pairs_per_second"] / max(out["before"]["pairs_per_second"], 1e-9), 2)
    BENCH_FILE.parent.mkdir(parents=True, exist_ok=True)
    BENCH_FILE.write_text(json.dumps(out, indent=1) + "\n")
    return out


def plan_for(exp_cfg, name: str = "strong") -> dict:
    """:func:`plan` of the main split's training queries with the committed benchmark's rate."""
    from .experiment import toollens_split
    split = toollens_split(exp_cfg.setup)
    return plan(split.train.qrels, strong_config(name), measured_rate())
