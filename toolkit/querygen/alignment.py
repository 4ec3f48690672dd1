"""Alignment by rejection sampling (Kachuee et al. 2025, §3.3, Algorithm 1, App. A.3, B.2, B.3).

For T iterations: the latest model samples N drafts (query sets) per training request; each draft
is rewarded by *simulated retrieval* over the training APIs (MMRR by default; MAP and the mean of
Recall@5 and Recall@11 are the alternatives of App. B.3); drafts are filtered — keep the
``keep_per_sample`` highest-reward drafts of each request, then drop any kept draft whose reward is
below ``min_reward`` or outside the top ``top_percent`` percent of the population — and the model
is fine-tuned one epoch on (request -> kept draft), as in SFT (§3.2). App. B.2's rows (Table 3)
are :class:`FilterConfig` instances, App. B.3's (Table 4) values of ``reward``.

    rewards = draft_rewards(drafts, index, train.qrels, train.query_texts(), restrict=split.in_domain_docs)
    kept = filter_drafts(rewards, FilterConfig())            # [(qid, draft index), ...]

The defaults are the paper's best setting as far as the text keeps it (App. A.3 lost the symbols;
Table 3's baseline row reads 100 / 0.05 / 1): MMRR reward, every percentile kept, minimum reward
0.05, the single best draft per request.

The fair test (:func:`toolkit.querygen.config.fair_config`) adds three options, each off by default so
the committed runs keep their names: ``AlignConfig.fresh_requests`` (every iteration drafts for requests of its own,
:func:`iteration_requests`), ``AlignConfig.decoding`` (the line stop / repetition penalty of the drafts and of the
test answers) and ``FilterConfig.min_gain``, a minimum reward *relative to the request alone*: a draft is kept
only if its reward exceeds, by more than ``min_gain``, the reward of retrieving with the request's utterance
alone (no generated query; :func:`utterance_rewards`). MMRR@11 takes the values 0 or >= 1/11 per gold API, so
the absolute ``min_reward`` = 0.05 removes almost nothing; ``min_gain=0`` removes every draft that does not
improve on the utterance, which is what the generated queries are for. :func:`kept_counts` counts the drafts
each filter setting keeps.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Mapping, Sequence

import numpy as np

from toolkit.metrics import evaluate
from toolkit.querygen.generation import Decoding
from toolkit.querygen.retrieval import LIST_SIZE, query_sets

REWARDS = {
    "mmrr": lambda k: [f"mmrr@{k}"],
    "map": lambda k: [f"map@{k}"],
    "recall": lambda k: ["recall@5", "recall@11"],     # App. B.3: Avg(Recall@5, Recall@11)
}


@dataclass(frozen=True)
class FilterConfig:
    """Rejection-sampling filter (§3.3): top-``keep_per_sample`` per request, then ``min_reward``
    and the ``top_percent`` percentile of the population; with ``min_gain`` (None: off), also every
    draft whose reward is not above the request-alone reward plus ``min_gain`` (module docstring)."""
    top_percent: float = 100.0
    min_reward: float = 0.05
    keep_per_sample: int = 1
    min_gain: float | None = None

    def __post_init__(self) -> None:
        if not 0 < self.top_percent <= 100:
            raise ValueError(f"FilterConfig.top_percent must be in (0, 100], got {self.top_percent}")
        if self.keep_per_sample < 1:
            raise ValueError(f"FilterConfig.keep_per_sample must be >= 1, got {self.keep_per_sample}")
        if self.min_gain is not None and not -1 <= self.min_gain < 1:
            raise ValueError(f"FilterConfig.min_gain must be in [-1, 1) or None (off), got {self.min_gain}")


# Table 3 (App. B.2): the baseline and one change at a time, as changes of AlignConfig. The paper's
# columns (headers lost) read as drafts per request, reward threshold, drafts kept per request; its
# "reduced drafts" row samples 75 % of the baseline's drafts (75 of 100): here 4 of 5, the first 4 of
# the same cached samples
TABLE3_SETTINGS = {
    "Baseline": {},
    "Reduced drafts": {"n_drafts": 4},
    "Increased threshold": {"filter": FilterConfig(min_reward=0.3)},
    "Decreased threshold": {"filter": FilterConfig(min_reward=0.0)},
    "Increased kept drafts": {"filter": FilterConfig(keep_per_sample=2)},
}
# Table 4 (App. B.3): the reward; Table 5 (App. C): intents instead of tool descriptions
TABLE4_SETTINGS = {"Alignment (MMRR reward)": {}, "Alignment (MAP reward)": {"reward": "map"},
                   "Alignment (Avg(Recall@5,Recall@11) reward)": {"reward": "recall"}}
TABLE5_SETTINGS = {"Alignment (description generation)": {}, "Alignment (intent generation)": {"kind": "intent"}}
ABLATION_TABLES = {"3": TABLE3_SETTINGS, "4": TABLE4_SETTINGS, "5": TABLE5_SETTINGS}   # each table's first row: baseline


def reward_metric_names(reward: str, k: int = LIST_SIZE) -> list[str]:
    if reward not in REWARDS:
        raise ValueError(f"reward must be one of {sorted(REWARDS)}, got {reward!r}")
    return REWARDS[reward](k)


def draft_rewards(drafts: Mapping[str, Sequence[Sequence[str]]], index, qrels: Mapping[str, Mapping[str, int]],
                  utterances: Mapping[str, str], reward: str = "mmrr", k: int = LIST_SIZE,
                  restrict: set[str] | None = None, append_utterance: bool = True) -> dict[str, list[float]]:
    """Reward of every draft: ``{qid: [reward of draft j]}``. A draft is one parsed answer (a list of
    queries); it is retrieved exactly as at test time (interleaving, the utterance appended), over
    ``restrict`` (the training APIs) when given."""
    names = reward_metric_names(reward, k)
    flat = {(qid, j): list(d) for qid, ds in drafts.items() for j, d in enumerate(ds)}
    keys = {f"{qid}\t{j}": key for key, (qid, j) in zip(flat, flat)}
    sets = query_sets({kk: flat[key] for kk, key in keys.items()},
                      {kk: utterances[key[0]] for kk, key in keys.items()}, append_utterance)
    run = index.run(sets, k=k, restrict=restrict)
    per = evaluate(run, {kk: qrels[key[0]] for kk, key in keys.items()}, names, per_query=True)
    out: dict[str, list[float]] = {qid: [0.0] * len(ds) for qid, ds in drafts.items()}
    for kk, (qid, j) in keys.items():
        out[qid][j] = float(np.mean([per[n][kk] for n in names]))
    return out


def utterance_rewards(index, qrels: Mapping[str, Mapping[str, int]], utterances: Mapping[str, str],
                      reward: str = "mmrr", k: int = LIST_SIZE, restrict: set[str] | None = None) -> dict[str, float]:
    """``{qid: reward of retrieving with the utterance alone}``: the request-alone reference of
    ``FilterConfig.min_gain``, scored as :func:`draft_rewards` scores a draft (an empty draft falls back
    to the utterance, :func:`toolkit.querygen.retrieval.query_sets`)."""
    empty = {q: [[]] for q in utterances}
    return {q: rs[0] for q, rs in draft_rewards(empty, index, qrels, utterances, reward, k, restrict).items()}


def filter_drafts(rewards: Mapping[str, Sequence[float]], cfg: FilterConfig = FilterConfig(),
                  baseline: Mapping[str, float] | None = None) -> list[tuple[str, int]]:
    """(qid, draft index) pairs kept for fine-tuning: per request the ``keep_per_sample`` best
    drafts (ties: lower index), then those below ``min_reward`` or below the population's
    ``100 - top_percent`` percentile are removed, and with ``cfg.min_gain`` those whose reward is not
    above ``baseline[qid] + min_gain`` (``baseline``: :func:`utterance_rewards`, required then)."""
    if cfg.min_gain is not None and baseline is None:
        raise ValueError("FilterConfig.min_gain is set: filter_drafts needs the request-alone rewards (baseline=)")
    kept = []
    for qid, rs in rewards.items():
        order = sorted(range(len(rs)), key=lambda j: (-rs[j], j))[:cfg.keep_per_sample]
        kept += [(qid, j) for j in order]
    if not kept:
        return []
    values = np.array([rewards[q][j] for q, j in kept])
    cut = np.percentile(values, 100.0 - cfg.top_percent) if cfg.top_percent < 100 else -np.inf
    return [(q, j) for (q, j), v in zip(kept, values) if v >= cfg.min_reward and v >= cut
            and (cfg.min_gain is None or v - baseline[q] > cfg.min_gain + 1e-12)]


def kept_counts(rewards: Mapping[str, Sequence[float]], settings: Mapping[str, FilterConfig],
                baseline: Mapping[str, float] | None = None) -> dict[str, int]:
    """``{setting: drafts kept}`` for each filter setting on the same rewards (the fair test: a filter must remove
    something, and a reader sees how much)."""
    return {name: len(filter_drafts(rewards, f, baseline)) for name, f in settings.items()}


def reward_summary(rewards: Mapping[str, Sequence[float]]) -> dict:
    """Distribution of all draft rewards and of each request's best draft (Figure 4's bars)."""
    allr = np.array([r for rs in rewards.values() for r in rs], dtype=float)
    best = np.array([max(rs) for rs in rewards.values() if len(rs)], dtype=float)
    if not len(allr):
        return {"drafts": 0}
    q = [0.1, 0.25, 0.5, 0.75, 0.9]
    return {"drafts": int(allr.size), "requests": int(best.size), "mean": float(allr.mean()),
            "best_mean": float(best.mean()), **{f"p{int(p * 100)}": float(np.quantile(allr, p)) for p in q},
            "histogram": np.histogram(allr, bins=10, range=(0, 1))[0].tolist()}


# --------------------------------------------------------------------------------------------
# Algorithm 1: the loop
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class AlignConfig:
    iterations: int = 3             # T (Figure 4 shows the curve over iterations)
    n_drafts: int = 5               # N drafts per request (Table 3's baseline: 100; CPU budget: 5)
    temperature: float = 1.0        # "a typical temperature" (App. A.3; value lost)
    reward: str = "mmrr"
    filter: FilterConfig = FilterConfig()
    train_size: int | None = 300    # training requests per iteration (seeded, nested); None = all. CPU budget:
                                    # 300 x 5 drafts ~ 30 min, one epoch on the kept drafts ~ 15 min
    seed: int = 0
    kind: str = "description"       # what the generator writes: tool descriptions (Fig. 2) or intents (Fig. 5)
    fresh_requests: bool = False    # True: iteration t drafts for train_size requests of its own (iteration_requests)
    decoding: Decoding = Decoding() # line stop / repetition penalty of the drafts and of the test answers

    def __post_init__(self) -> None:
        if self.iterations < 1 or self.n_drafts < 1:
            raise ValueError("AlignConfig: iterations and n_drafts must be >= 1")
        if self.temperature < 0:
            raise ValueError(f"AlignConfig.temperature must be >= 0, got {self.temperature}")
        reward_metric_names(self.reward)
        if self.kind not in ("description", "intent"):
            raise ValueError(f"AlignConfig.kind must be description or intent, got {self.kind!r}")
        if self.fresh_requests and self.train_size is None:
            raise ValueError("AlignConfig.fresh_requests needs a train_size (requests per iteration), got None")

    def tag(self) -> str:
        """Short, unique name of this configuration: every iteration's model id includes it, because
        the response cache keys on the model id. Fields added after the first runs are left out while
        they hold their default, so those runs keep their names."""
        import hashlib
        import json
        from dataclasses import asdict
        d = {k: v for k, v in asdict(self).items() if not (k in _LATER_DEFAULTS and v == _LATER_DEFAULTS[k])}
        d["filter"] = {k: v for k, v in d["filter"].items()
                       if not (k in _LATER_FILTER_DEFAULTS and v == _LATER_FILTER_DEFAULTS[k])}
        return hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()[:8]


_LATER_DEFAULTS = {"kind": "description", "fresh_requests": False, "decoding": asdict(Decoding())}
_LATER_FILTER_DEFAULTS = {"min_gain": None}


def iteration_requests(qids: Sequence[str], cfg: AlignConfig, iteration: int) -> list[str]:
    """The training requests iteration ``iteration`` (1-based) drafts for. Without ``cfg.fresh_requests``:
    all of ``qids`` (the caller passes the seeded ``train_size`` sample, the same every iteration). With it:
    ``cfg.train_size`` requests of their own per iteration -- consecutive slices of one shuffle of ``qids``
    (sorted first; ``random.Random(cfg.seed)``), so iterations 1, 2, ... never share a request until the pool is
    used up; then the next pass is a new shuffle (seed ``cfg.seed + pass``)."""
    import random
    if not cfg.fresh_requests:
        return list(qids)
    pool = sorted(qids)
    if not pool:
        return []
    n = min(cfg.train_size, len(pool))
    per_pass = len(pool) // n                     # whole slices per shuffle
    k, r = divmod(iteration - 1, per_pass)
    order = list(pool)
    random.Random(cfg.seed + k).shuffle(order)
    return order[r * n:(r + 1) * n]


def drafts_for(llm, requests: Mapping[str, str], n: int, temperature: float, kind: str = "description",
               partial: bool = False, decoding: Decoding | None = None) -> dict[str, list[list[str]]]:
    """``{qid: [parsed draft j]}``: n samples per request from ``llm`` at ``temperature`` (cached)."""
    from toolkit.llm.base import as_messages
    from toolkit.querygen.generation import sampling_at, task_for
    task = task_for(kind)
    s = sampling_at(task, temperature, decoding)
    qids = list(requests)
    prompts = task.prompts_for(requests[q] for q in qids)
    if partial:
        cache = llm.cache()                        # the client's own namespace (alignment drafts)
        cache.refresh()
        out = {}
        for q, p in zip(qids, prompts):
            got = [cache.get("chat", as_messages(p), s.key(), j) for j in range(n)]
            if all(g is not None for g in got):
                out[q] = [task.parse(g.text) for g in got]
        return out
    answers = llm.generate(prompts, n=n, sampling=s, desc=f"drafts T={temperature}")
    return {q: [task.parse(a) for a in per] for q, per in zip(qids, answers)}


def align(base_dir, train_ds, index, cfg: AlignConfig, work_dir, make_client, train_fn,
          restrict: set[str] | None = None, log=print, on_iteration=None, stop_after: int | None = None
          ) -> list[dict]:
    """Algorithm 1. ``make_client(model_dir, model_id)`` gives an LLM client for a model directory;
    ``train_fn(model_dir, examples, out_dir)`` fine-tunes one epoch and saves to ``out_dir``.
    Iteration t samples from the model of iteration t-1 (the base model for t = 1) and writes
    ``work_dir/it<t>``; a finished iteration's directory is reused, so the loop resumes.
    ``on_iteration(history, model_dir, model_id)`` runs after each iteration (the command saves the
    history and generates that iteration's test answers there, so a stopped run keeps its progress).
    ``stop_after`` ends the loop after that iteration (the ablations of Tables 3-5 run one); it is not
    part of the configuration's tag, so those models are named as in a full run.
    Returns one record per iteration: model id, reward distribution, drafts kept, stage timings
    (``draft_seconds`` counts only drafts generated in this call, not those replayed from the cache)."""
    import time
    from pathlib import Path

    from toolkit.querygen.generation import task_for
    from toolkit.querygen.sft import Example
    kind = cfg.kind
    task = task_for(kind)
    all_texts = train_ds.query_texts()
    model_dir, model_id = Path(base_dir), f"querygen-align-{cfg.tag()}-it0"
    history = []
    for t in range(1, min(cfg.iterations, stop_after or cfg.iterations) + 1):
        texts = {q: all_texts[q] for q in iteration_requests(list(all_texts), cfg, t)}
        t0 = time.time()
        with make_client(model_dir, model_id) as llm:
            drafts = drafts_for(llm, texts, cfg.n_drafts, cfg.temperature, kind, decoding=cfg.decoding)
            generated = int(llm.stats.get("generated", 0))
        draft_seconds = time.time() - t0
        rewards = draft_rewards(drafts, index, train_ds.qrels, texts, cfg.reward, restrict=restrict)
        baseline = (utterance_rewards(index, train_ds.qrels, texts, cfg.reward, restrict=restrict)
                    if cfg.filter.min_gain is not None else None)
        kept = filter_drafts(rewards, cfg.filter, baseline)
        examples = [Example(q, task.build(texts[q]), "\n".join(drafts[q][j])) for q, j in kept if drafts[q][j]]
        out = Path(work_dir) / f"it{t}"
        train_log = train_fn(model_dir, examples, out) or {}
        extra = {} if baseline is None else {"utterance_mean": float(np.mean(list(baseline.values()))),
                                             "kept_before_gain": len(filter_drafts(rewards, replace(cfg.filter, min_gain=None)))}
        if cfg.fresh_requests:
            extra["first_request"] = next(iter(texts), None)
        rec = {"iteration": t, "sampled_from": model_id, "kept": len(examples), **reward_summary(rewards), **extra,
               "drafts_generated": generated, "draft_seconds": round(draft_seconds, 1),
               "drafts_per_s": round(generated / draft_seconds, 3) if generated else None,
               **{f"train_{k}": train_log[k] for k in ("seconds", "tokens", "tokens_per_s", "final_loss", "steps")
                  if k in train_log}}
        history.append(rec)
        if log:
            log(f"[align] iteration {t}: mean reward {rec['mean']:.3f}, best-draft mean {rec['best_mean']:.3f}, "
                f"{len(examples)} drafts kept")
        model_dir, model_id = out, f"querygen-align-{cfg.tag()}-it{t}"
        if on_iteration:
            on_iteration(history, model_dir, model_id)
    return history
