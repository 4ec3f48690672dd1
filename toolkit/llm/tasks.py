"""Ready-made generation tasks: which prompt, over which items, in which cache namespace, with
which sampling parameters and which parser. The notebooks and the CLI share them, so a cache
generated from the command line is exactly what a notebook replays.

Sampling: the paper's values where it states them, else greedy (temperature 0). Every choice is
written next to the task and can be overridden (it then becomes part of the cache key).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

from toolkit.llm import parsers, prompts
from toolkit.llm.base import Sampling


@dataclass(frozen=True)
class Task:
    name: str
    namespace: str                      # cache namespace: data/llm_cache/<namespace>/<model>.jsonl
    over: str                           # "queries" or "documents"
    build: Callable[[str], str]         # item text -> prompt text (one user message)
    parse: Callable[[str], Any]
    sampling: Sampling
    n: int = 1
    source: str = ""
    sampling_note: str = ""

    def prompts_for(self, texts: Iterable[str]) -> list[str]:
        return [self.build(t) for t in texts]


TASKS: dict[str, Task] = {}


def _add(t: Task) -> Task:
    TASKS[t.name] = t
    return t


INTENTS = _add(Task(
    name="intents", namespace="reinvoke_intents", over="queries",
    build=prompts.intent_prompt, parse=parsers.parse_intents,
    sampling=Sampling(temperature=0.0, top_p=1.0, max_tokens=128, stop=("\nQuery:",), seed=0),
    source=prompts.REINVOKE_INTENT.source,
    sampling_note="greedy: Re-Invoke states no decoding parameters for the intent extractor; "
                  "max_tokens=128; stop at '\\nQuery:' in case the model continues the few-shot pattern",
))

SYNTHETIC_QUERIES = _add(Task(
    name="synthetic-queries", namespace="reinvoke_synthetic_queries", over="documents",
    build=prompts.synthetic_query_prompt, parse=parsers.parse_synthetic_query,
    sampling=Sampling(temperature=0.7, top_p=1.0, max_tokens=160, seed=0), n=10,
    source=prompts.REINVOKE_SYNTHETIC_QUERY.source,
    sampling_note="temperature 0.7 and 10 samples per tool document (Re-Invoke §4.3); other parameters "
                  "'default' in the paper, here top_p=1, top_k off, seeds 0..9",
))

HYDE = _add(Task(
    name="hyde", namespace="reinvoke_hyde", over="queries",
    build=prompts.hyde_prompt, parse=parsers.parse_hyde_document,
    sampling=Sampling(temperature=0.0, top_p=1.0, max_tokens=384, seed=0),
    source=prompts.REINVOKE_HYDE.source,
    sampling_note="greedy: the paper states no decoding parameters for HyDE",
))

QUERYGEN = _add(Task(
    name="querygen", namespace="querygen_zeroshot", over="queries",
    build=lambda q: prompts.querygen_prompt(q, "description"), parse=parsers.parse_api_descriptions,
    sampling=Sampling(temperature=0.5, top_p=0.9, top_k=10, max_tokens=160, seed=0),
    source=prompts.QUERYGEN_DESCRIPTION.source,
    sampling_note="top_p=0.9 and top_k=10 as stated (querygen App. A.1); the calibrated temperature is "
                  "lost in the text, 0.5 chosen here (override with --temperature)",
))

QUERYGEN_INTENTS = _add(Task(
    name="querygen-intents", namespace="querygen_intents", over="queries",
    build=lambda q: prompts.querygen_prompt(q, "intent"), parse=parsers.parse_api_descriptions,
    sampling=QUERYGEN.sampling, source=prompts.QUERYGEN_INTENT.source, sampling_note=QUERYGEN.sampling_note,
))


def get_task(name: str) -> Task:
    try:
        return TASKS[name]
    except KeyError:
        raise KeyError(f"unknown LLM task {name!r}; known: {', '.join(TASKS)}") from None


# ---------------------------------------------------------------------------------------------
# Items to run a task over
# ---------------------------------------------------------------------------------------------

def dataset_items(dataset: str, over: str) -> list[tuple[str, str]]:
    """(id, text) pairs: a dataset's queries or its corpus documents, in the dataset's order."""
    from toolkit.data import load_dataset
    ds = load_dataset(dataset)
    if over == "queries":
        return [(q.qid, q.text) for q in ds.queries.values()]
    return [(d.doc_id, d.text) for d in ds.corpus.values()]
