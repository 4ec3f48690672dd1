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

# Fig. 4's answer is a preamble line, the query (quoted, as a rule) and then, with the small Qwen models, an
# explanation of the query that runs into the token cap (25 % of 4,480 cached 1.5B answers on ToolE and the ToolBench
# pools; 57 % of 40 fresh ToolBench answers, scripts/bench_synthetic_queries.py). These stop strings end the answer
# where the query ends: a closing quote at a line end, or the usual openings of what follows the query (an
# explanation, the API call, the parameters). None of them occurs before the query in the cached answers: cut there,
# 3.1 % of the cached 1.5B answers stay capped and 0.1 % parse to nothing (--simulate). The parser is unchanged: it
# reads the query out of what is left. llama.cpp and vLLM take any number of stop strings (OpenAI's own API: 4).
SYNTHETIC_QUERY_STOP = ('"\n', '"**', "\nThis", "\n\nIn ", "\n\nExplanation", "\n\nInput", "\n\n**API",
                        "\n\n**Input", "\n\n**Explanation", "\n\n**Parameters", "\n\n**Description", "\n\nTherefore",
                        "\n\nThe API", "\n\nWith ")

SYNTHETIC_QUERIES = _add(Task(
    name="synthetic-queries", namespace="reinvoke_synthetic_queries", over="documents",
    build=prompts.synthetic_query_prompt, parse=parsers.parse_synthetic_query,
    sampling=Sampling(temperature=0.7, top_p=1.0, max_tokens=256, stop=SYNTHETIC_QUERY_STOP, seed=0), n=10,
    source=prompts.REINVOKE_SYNTHETIC_QUERY.source,
    sampling_note="temperature 0.7 and 10 samples per tool document (Re-Invoke §4.3); other parameters "
                  "'default' in the paper, here top_p=1, top_k off, seeds 0..9; the answer stops where the query "
                  "ends (SYNTHETIC_QUERY_STOP), the prompt is the paper's; max_tokens=256, since with the stop strings "
                  "an answer that reaches it is a long query (ToolBench I3's long documents: 8 of 117 answers cut at 160)",
))

# The first generation, without stop strings (ToolE's m = 10 expansions and ToolBench's first m = 1 are in the
# cache under this sampling; notebook 20 says which data set reads which).
SYNTHETIC_QUERIES_NOSTOP = _add(Task(
    name="synthetic-queries-nostop", namespace="reinvoke_synthetic_queries", over="documents",
    build=prompts.synthetic_query_prompt, parse=parsers.parse_synthetic_query,
    sampling=Sampling(temperature=0.7, top_p=1.0, max_tokens=160, seed=0), n=10,
    source=prompts.REINVOKE_SYNTHETIC_QUERY.source,
    sampling_note="the first generation: no stop strings (the answer runs on into an explanation of the query), "
                  "max_tokens=160",
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
