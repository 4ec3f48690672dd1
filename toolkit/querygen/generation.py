"""Zero-shot query generation (Kachuee et al. 2025, §3.1) and temperature calibration (§4.3, App. A.1).

The prompts are Fig. 2 (API descriptions) and Fig. 5 (intents), the sampling the paper's top_p=0.9
and top_k=10 (App. A.1), the parser the §3.1 heuristics (:func:`toolkit.llm.parsers.parse_api_descriptions`);
all three live in :mod:`toolkit.llm.tasks` (``QUERYGEN``, ``QUERYGEN_INTENTS``), so a cache written by
``python -m toolkit querygen zeroshot`` is what the notebook replays.

The temperature is calibrated per method on the dev requests by Recall@5 (§4.3). The paper's grid
("from [lost] to [lost] in steps of [lost]") and its chosen values were lost: ``TEMPERATURES`` is ours.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from toolkit.llm.base import as_messages
from toolkit.llm.client import LLMClient, client_for_profile
from toolkit.llm.tasks import QUERYGEN, QUERYGEN_INTENTS, Task
from toolkit.metrics import evaluate

DEFAULT_MODEL = "qwen-1.5b"
TEMPERATURES = (0.0, 0.3, 0.6, 0.9)
CALIBRATION_METRIC = "recall@5"
TASKS = {"description": QUERYGEN, "intent": QUERYGEN_INTENTS}


@dataclass(frozen=True)
class Decoding:
    """Decoding settings on top of the task's sampling (the fair test's line stop). ``max_lines``: end each answer once
    it holds that many non-empty lines (0 = off; the Fig. 2 / Fig. 5 prompts ask for "at most 5 descriptions
    (lines)", :data:`PROMPT_LINES`); ``repeat_penalty``: llama.cpp's repetition penalty (1.0 = off). The
    defaults are what every committed answer was generated with, and they leave the cache keys as they were
    (:data:`toolkit.llm.base.LATER_SAMPLING_DEFAULTS`)."""
    max_lines: int = 0
    repeat_penalty: float = 1.0

    def __post_init__(self) -> None:
        if self.max_lines < 0:
            raise ValueError(f"Decoding.max_lines must be >= 0 (0 = off), got {self.max_lines}")
        if not self.repeat_penalty > 0:
            raise ValueError(f"Decoding.repeat_penalty must be > 0 (1.0 = off), got {self.repeat_penalty}")

    def apply(self, sampling):
        return sampling.with_(max_lines=int(self.max_lines), repeat_penalty=float(self.repeat_penalty))


PROMPT_LINES = 5          # Fig. 2 and Fig. 5: "Return at most 5 descriptions (lines)"; parse_api_descriptions keeps 5
STANDARD_DECODING = Decoding()


def task_for(kind: str) -> Task:
    if kind not in TASKS:
        raise ValueError(f"query kind must be one of {sorted(TASKS)}, got {kind!r}")
    return TASKS[kind]


def client(profile: str = "standard", model: str = DEFAULT_MODEL, kind: str = "description", **kw: Any) -> LLMClient:
    """The client for zero-shot generation: replay on smoke/standard unless ``TOOLKIT_LLM_BACKEND`` is set."""
    t = task_for(kind)
    return client_for_profile(profile, model, namespace=t.namespace, sampling=t.sampling, **kw)


def sampling_at(task: Task, temperature: float, decoding: Decoding | None = None):
    """The task's sampling at ``temperature``, with ``decoding``'s line stop and penalty (None: the standard's)."""
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    return (decoding or STANDARD_DECODING).apply(task.sampling.with_(temperature=float(temperature)))


def generate_queries(requests: Mapping[str, str], llm: LLMClient, temperature: float, kind: str = "description",
                     partial: bool = False, desc: str | None = None, namespace: str | None = None,
                     decoding: Decoding | None = None, max_tokens: int | None = None) -> dict[str, list[str]]:
    """``{qid: [generated query, ...]}`` (parsed, at most 5) at ``temperature``. Missing answers raise
    ``ReplayMiss`` in replay mode; with ``partial`` they are left out instead (a run still growing).
    ``namespace``: the cache namespace (default: the zero-shot task's; SFT and alignment have their own);
    ``decoding``: the line stop and repetition penalty (:class:`Decoding`; None: off, the committed answers');
    ``max_tokens``: the answer's token cap (None: the task's)."""
    task = task_for(kind)
    ns = namespace or task.namespace
    s = sampling_at(task, temperature, decoding)
    if max_tokens is not None:
        s = s.with_(max_tokens=int(max_tokens))
    qids = list(requests)
    prompts = task.prompts_for(requests[q] for q in qids)
    if partial:
        cache = llm.cache(ns)
        cache.refresh()
        out = {}
        for q, p in zip(qids, prompts):
            a = cache.get("chat", as_messages(p), s.key(), 0)
            if a is not None:
                out[q] = task.parse(a.text)
        return out
    answers = llm.generate(prompts, n=1, sampling=s, namespace=ns,
                           desc=desc or f"{task.name} T={temperature} [{llm.model_id}]")
    return {q: task.parse(a[0]) for q, a in zip(qids, answers)}


def calibrate(index, dev, llm: LLMClient, temperatures: Sequence[float] = TEMPERATURES, kind: str = "description",
              metric: str = CALIBRATION_METRIC, k: int = 11, partial: bool = False, namespace: str | None = None,
              decoding: Decoding | None = None) -> dict:
    """Recall@5 (or ``metric``) on ``dev`` per temperature, and the best one (ties: the lower temperature).

    Returns ``{"scores": {T: value}, "best": T, "n": {T: requests scored}}``; with ``partial``, a
    temperature whose answers are not all cached is scored on what is there and flagged in ``n``."""
    from toolkit.querygen.retrieval import query_sets
    scores, n = {}, {}
    texts = dev.query_texts()
    for t in temperatures:
        gen = generate_queries(texts, llm, t, kind=kind, partial=partial, namespace=namespace, decoding=decoding)
        sub = {q: texts[q] for q in gen}
        n[t] = len(sub)
        if not sub:
            continue
        run = index.run(query_sets(gen, sub), k=k)
        scores[t] = evaluate(run, {q: dev.qrels[q] for q in sub}, metric)[metric]
    best = max(scores, key=lambda t: (scores[t], -t)) if scores else None
    return {"scores": scores, "best": best, "n": n}
