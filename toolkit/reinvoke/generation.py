"""The LLM side of Re-Invoke: synthetic queries (§3.1, Fig. 4), intents (§3.2, Fig. 5) and HyDE
documents (§4.2(c), Fig. 6), read from (or written to) the response cache through
:mod:`toolkit.llm`.

The prompts, sampling parameters, parsers and cache namespaces are the ready-made tasks of
:mod:`toolkit.llm.tasks` (``SYNTHETIC_QUERIES``: temperature 0.7, 10 samples, §4.3; ``INTENTS`` and
``HYDE``: greedy, the paper states no decoding parameters), so what ``python -m toolkit llm generate``
wrote is exactly what is replayed here.

    from toolkit.reinvoke import generation as gen
    llm = gen.client("synthetic-queries", profile="standard")     # replay the committed cache
    expansions = gen.synthetic_queries(ds.corpus, llm, m=10)      # {doc_id: [query, ...]}
    intents = gen.intents(ds.query_texts(), gen.client("intents"))

``partial=True`` returns only what is cached (for a generation still running) instead of
raising ``ReplayMiss``.
"""
from __future__ import annotations

from typing import Any, Mapping

from toolkit.llm import parsers
from toolkit.llm.base import as_messages
from toolkit.llm.client import LLMClient, client_for_profile
from toolkit.llm.tasks import HYDE, INTENTS, SYNTHETIC_QUERIES, Task, get_task

DEFAULT_MODEL = "qwen-1.5b"


def client(task: str | Task, profile: str = "standard", model: str = DEFAULT_MODEL, **kw: Any) -> LLMClient:
    """The client for a Re-Invoke task: the task's namespace and sampling, the profile's backend
    (smoke/standard: replay unless ``TOOLKIT_LLM_BACKEND`` is set)."""
    t = get_task(task) if isinstance(task, str) else task
    return client_for_profile(profile, model, namespace=t.namespace, sampling=t.sampling, **kw)


def _answers(task: Task, texts: list[str], llm: LLMClient, n: int, partial: bool) -> list[list[str | None]]:
    prompts = task.prompts_for(texts)
    if not partial:
        return llm.generate(prompts, n=n, sampling=task.sampling, namespace=task.namespace,
                            progress=False)  # type: ignore[return-value]
    cache = llm.cache(task.namespace)
    cache.refresh()
    key = task.sampling.key()
    out = []
    for p in prompts:
        norm = as_messages(p)
        out.append([(a.text if (a := cache.get("chat", norm, key, i)) is not None else None) for i in range(n)])
    return out


def synthetic_query_samples(corpus: Mapping[str, Any], llm: LLMClient, m: int = 10, partial: bool = False,
                            task: Task = SYNTHETIC_QUERIES) -> dict[str, list[str | None]]:
    """``{doc_id: [parsed query of sample i for i in 0..m-1]}``: ``""`` where the answer parses to
    nothing, ``None`` where the answer is not cached (only with ``partial``). Keeping the sample
    index lets "the first m samples" stay the same set as a partial cache grows."""
    ids = list(corpus)
    texts = [c if isinstance(c, str) else c.text for c in corpus.values()]
    raw = _answers(task, texts, llm, m, partial)
    return {d: [None if a is None else (task.parse(a) or "") for a in per] for d, per in zip(ids, raw)}


def synthetic_queries(corpus: Mapping[str, Any], llm: LLMClient, m: int = 10, partial: bool = False,
                      task: Task = SYNTHETIC_QUERIES) -> dict[str, list[str]]:
    """``{doc_id: [synthetic query for samples 0..m-1]}`` (parsed; empty parses and, with
    ``partial``, uncached samples dropped). ``corpus`` maps doc id -> Document (its ``text`` is the
    tool document) or text."""
    samples = synthetic_query_samples(corpus, llm, m, partial, task)
    return {d: [q for q in per if q] for d, per in samples.items()}


def intents(queries: Mapping[str, str], llm: LLMClient, partial: bool = False,
            task: Task = INTENTS) -> dict[str, list[str]]:
    """``{qid: [intent, ...]}``; a query whose answer parses to nothing keeps itself as its one
    intent (``parsers.intents_or_query``). With ``partial``, uncached queries are left out."""
    qids = list(queries)
    raw = _answers(task, [queries[q] for q in qids], llm, 1, partial)
    return {q: parsers.intents_or_query(per[0], queries[q]) for q, per in zip(qids, raw) if per[0] is not None}


def hyde_documents(queries: Mapping[str, str], llm: LLMClient, partial: bool = False,
                   task: Task = HYDE) -> dict[str, str]:
    """``{qid: hypothetical tool document}`` (Fig. 6); an unparsable answer falls back to the query."""
    qids = list(queries)
    raw = _answers(task, [queries[q] for q in qids], llm, 1, partial)
    return {q: (task.parse(per[0]) or queries[q]) for q, per in zip(qids, raw) if per[0] is not None}


def coverage(expansions: Mapping[str, list[str]], m: int) -> dict:
    """How many documents have all m / some / no synthetic queries (for notes and notebooks)."""
    n = [len(v) for v in expansions.values()]
    return {"documents": len(n), "complete": sum(x >= m for x in n), "partial": sum(0 < x < m for x in n),
            "none": sum(x == 0 for x in n), "queries": sum(n)}


# ---------------------------------------------------------------------------------------------
# Live generation over a seeded query sample (the toolkit.llm CLI covers whole datasets only)
# ---------------------------------------------------------------------------------------------

def sample_items(dataset: str, over: str, sample: int | None = None, seed: int = 0) -> list[tuple[str, str]]:
    """(id, text) of a dataset's queries or documents; queries optionally as the fixed seeded
    sample ``load_dataset(dataset).sample(sample, seed)`` (e.g. 1,000 ToolE single-tool queries)."""
    from toolkit.data import load_dataset
    ds = load_dataset(dataset)
    if over == "documents":
        return [(d.doc_id, d.text) for d in ds.corpus.values()]
    ds = ds.sample(sample, seed=seed)
    return [(q.qid, q.text) for q in ds.queries.values()]


def generate(task: str | Task, items: list[tuple[str, str]], llm: LLMClient, n: int | None = None) -> list[list[str]]:
    """Fill the cache for ``items`` (resumable: cached answers are skipped); returns the raw answers."""
    t = get_task(task) if isinstance(task, str) else task
    return llm.generate(t.prompts_for(text for _, text in items), n=n or t.n, sampling=t.sampling,
                        namespace=t.namespace, desc=f"{t.name} [{llm.model_id}]")
