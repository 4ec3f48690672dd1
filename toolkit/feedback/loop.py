"""The iterative loop (Xu et al. 2024, §4.4), for test instructions and, offline, for training ones.

Round 0 retrieves with "Iteration 0: <instruction>". Round t = 1..T gives the LLM the previous
instruction and its top-K tools (:func:`toolkit.feedback.round.feedback_round`); a refined
instruction q^t is retrieved with "Iteration t: <q^t>", while "N/A" ends the loop for that
instruction, and so does a "refinement" identical to q^(t-1) under ``FeedbackConfig.unchanged="na"`` (the
default; "retrieve" retrieves it again under the next prefix, which :func:`stop_when_unchanged` undoes exactly). The final list is the last round's retrieval. Retrieval is batched over the
instructions still in the loop; each instruction's round is one chat (its steps share the KV cache
of the round), and up to ``workers`` instructions' chats run at once (default: the backend's
``max_concurrency``, its llama.cpp slots), so their decoding is batched.

    traces = iterate(queries, search, corpus, llm, rounds=3)
    run = final_run(traces)                    # {qid: {doc_id: score}} after the last round
    run_1 = run_at(traces, 1)                  # after one round of refinement (Table 5)
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Mapping

from toolkit.data.contract import Document, Run
from toolkit.feedback.round import NAMESPACE, FeedbackConfig, RoundFeedback, feedback_round

Search = Callable[[Mapping[str, str]], Run]     # {qid: text} -> {qid: {doc_id: score}}, best first


def llm_slots(llm) -> int:
    """How many requests the client's backend serves at once (its llama.cpp slots; 1 without an LLM)."""
    return getattr(getattr(llm, "backend", None), "max_concurrency", 1) or 1


def iteration_prefix(instruction: str, t: int, prefix: bool = True) -> str:
    """§4.3: "we concatenate a special token 'Iteration t' in front of the instruction"."""
    return f"Iteration {t}: {instruction}" if prefix else instruction


@dataclass
class Trace:
    """One instruction through the loop: instructions[t] = q^t, runs[t] = the retrieval of q^t."""
    qid: str
    instructions: list[str]
    runs: list[dict[str, float]] = field(default_factory=list)
    feedback: list[RoundFeedback] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)      # LLM seconds per round (Table 5's cost), as
                                                            # recorded with the answers when they were generated
    answers: list[list[str] | None] = field(default_factory=list)   # per round, step 3's yes/no answers
                                                                    # (decision="answers"; None otherwise)

    @property
    def stopped(self) -> bool:
        """The LLM answered "N/A" (no refinement) at the last round it was asked."""
        return bool(self.feedback) and self.feedback[-1].refined is None

    def changed(self, t: int) -> bool:
        """Round t's refinement exists and its text differs from q^(t-1) (the LLM may "refine" into the same text)."""
        return len(self.instructions) > t and self.instructions[t] != self.instructions[t - 1]

    def top(self, t: int, k: int) -> list[str]:
        return list(self.runs[min(t, len(self.runs) - 1)])[:k]


def iterate(queries: Mapping[str, str], search: Search, corpus: Mapping[str, Document], llm, rounds: int = 3,
            cfg: FeedbackConfig = FeedbackConfig(), prefix: bool = True, namespace: str = NAMESPACE,
            progress: bool = True, workers: int | None = None,
            round_fn: Callable[[Trace, list[Document]], RoundFeedback] | None = None) -> dict[str, Trace]:
    """Run T = ``rounds`` rounds of feedback over ``queries``; returns one :class:`Trace` each.
    ``round_fn(trace, shown_docs)``: the feedback of one round in place of the LLM's (a control: the oracle
    feedback of :mod:`toolkit.feedback.controls`); ``llm`` is then unused.
    ``workers``: instructions whose round runs at once (None: the backend's ``max_concurrency``). Each
    chat is the same whatever the concurrency; only a slot's batched decoding can change a greedy answer
    (llama.cpp's batches are not bit-identical to single-sequence decoding)."""
    from concurrent.futures import ThreadPoolExecutor

    from tqdm.auto import tqdm
    if rounds < 0:
        raise ValueError(f"rounds must be >= 0, got {rounds}")
    if workers is None:
        workers = llm_slots(llm)
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    traces = {q: Trace(q, [text]) for q, text in queries.items()}
    for q, r in search({q: iteration_prefix(t.instructions[0], 0, prefix) for q, t in traces.items()}).items():
        traces[q].runs.append(r)
    for t in range(1, rounds + 1):
        active = [tr for tr in traces.values() if not tr.stopped and len(tr.instructions) == t]
        if not active:
            break
        refined = {}

        def one(tr: Trace) -> tuple[RoundFeedback, float]:
            t0 = time.perf_counter()
            shown = [corpus[d] for d in tr.top(t - 1, cfg.k)]
            fb = (round_fn(tr, shown) if round_fn is not None
                  else feedback_round(llm, tr.instructions[-1], shown, cfg, namespace))
            return fb, time.perf_counter() - t0
        with ThreadPoolExecutor(max_workers=min(workers, len(active))) as ex:
            done = tqdm(ex.map(one, active), total=len(active), desc=f"feedback round {t}", disable=not progress)
            results = list(done)
        for tr, (fb, wall) in zip(active, results):        # in the instructions' order, whatever finished first
            # the generation time recorded with the answers: a resumed run's cached rounds keep their real cost
            tr.seconds.append(fb.seconds if fb.seconds is not None else wall)
            tr.feedback.append(fb)
            tr.answers.append(list(fb.answers) if fb.answers else None)
            if fb.refined is not None and not (cfg.unchanged == "na" and fb.refined == tr.instructions[-1]):
                tr.instructions.append(fb.refined)
                refined[tr.qid] = iteration_prefix(fb.refined, t, prefix)
        if refined:
            for q, r in search(refined).items():
                traces[q].runs.append(r)
    return traces


def run_at(traces: Mapping[str, Trace], t: int) -> Run:
    """The retrieval after round t (an instruction that left the loop earlier keeps its last list)."""
    return {q: tr.runs[min(t, len(tr.runs) - 1)] for q, tr in traces.items()}


def final_run(traces: Mapping[str, Trace]) -> Run:
    return {q: tr.runs[-1] for q, tr in traces.items()}


def stop_when_unchanged(traces: Mapping[str, Trace]) -> dict[str, Trace]:
    """The loop as if a "refinement" identical to the instruction it refines were "N/A": each trace cut at the
    first round t whose q^t equals q^(t-1), keeping that round's LLM seconds (they were spent to learn that nothing
    changed) and q^(t-1)'s list as the final one. Exact from a complete trace, since the rounds after such a one
    are the only ones this rule would not have asked. (The loop as the paper states it stops only at "N/A": an
    unchanged instruction is retrieved again under the next "Iteration t" prefix, which alone can move its list.)"""
    out = {}
    for q, tr in traces.items():
        t = next((t for t in range(1, len(tr.instructions)) if not tr.changed(t)), None)
        out[q] = tr if t is None else Trace(tr.qid, tr.instructions[:t], tr.runs[:t], tr.feedback[:t], tr.seconds[:t],
                                            tr.answers[:t])
    return out
