"""One round of LLM feedback (Xu et al. 2024, §4.2): comprehension (Eq. 2), assessment (Eq. 3),
refinement (Eq. 4: a refined instruction, or "N/A").

The three steps run as **one multi-turn chat**: the first user turn holds the instruction and the
K retrieved tools (category, name, description and parameters, each cut to ``tool_chars``
characters) with the comprehension request; the assessment and refinement requests follow as
later turns, so each step sees the previous answers, as Eqs. 3-4 require, and llama.cpp reuses the
round's KV cache instead of reading the K tool documents three times.
:func:`feedback_round_independent` is the three-separate-calls variant (each prompt repeats the
tools and pastes the previous answer), kept for the throughput benchmark
(``scripts/bench_feedback.py``).

Every call goes through the LLM client's cache (key: the whole message list), so a round
interrupted after step 2 resumes at step 3, and replay needs no model.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from toolkit.llm import parsers, prompts
from toolkit.llm.base import Sampling

NAMESPACE = "feedback"


@dataclass(frozen=True)
class FeedbackConfig:
    """The feedback LLM's settings. The paper (gpt-3.5-turbo) states none; greedy decoding here."""
    k: int = 10                        # K tools shown to the LLM (§5.1)
    tool_chars: int = 600              # per-tool budget, characters (~150 tokens): 10 tools ~ 1,500 tokens
    comprehension_tokens: int = 256
    assessment_tokens: int = 256
    refinement_tokens: int = 128

    def __post_init__(self) -> None:
        for name in ("k", "tool_chars", "comprehension_tokens", "assessment_tokens", "refinement_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"FeedbackConfig.{name} must be >= 1, got {getattr(self, name)}")

    def sampling(self, step: str) -> Sampling:
        return Sampling(temperature=0.0, top_p=1.0, max_tokens=getattr(self, f"{step}_tokens"), seed=0)


@dataclass(frozen=True)
class RoundFeedback:
    comprehension: str
    assessment: str
    refinement: str                    # the raw answer of step 3
    refined: str | None                # the parsed refined instruction; None = "N/A" (leave the loop)
    seconds: float | None = None       # the three answers' generation seconds as recorded in the cache
                                       # (None when a backend recorded none: the loop times the round itself)


def first_turn(instruction: str, docs: Sequence[Any], cfg: FeedbackConfig = FeedbackConfig()) -> str:
    head = prompts.FEEDBACK_COMPREHENSION.format(
        k=str(len(docs)), instruction=instruction, tools=prompts.format_tools(docs, max_chars=cfg.tool_chars))
    return head


def _ask(llm, messages: list[dict], sampling: Sampling, namespace: str) -> str:
    return llm.generate([messages], n=1, sampling=sampling, namespace=namespace, progress=False)[0][0]


def _recorded(llm, calls: list[tuple[list[dict], Sampling]], namespace: str) -> float | None:
    """Sum of the calls' generation seconds as the cache recorded them (a resumed or replayed round costs what
    it cost when generated, not a cache hit's milliseconds); None if any call has no recorded time."""
    get = getattr(llm, "recorded_seconds", None)
    if get is None:
        return None
    secs = [get(m, s, namespace=namespace) for m, s in calls]
    return None if any(x is None for x in secs) else sum(secs)


def feedback_round(llm, instruction: str, docs: Sequence[Any], cfg: FeedbackConfig = FeedbackConfig(),
                   namespace: str = NAMESPACE) -> RoundFeedback:
    """The three steps as one chat: [user: tools + step 1] -> F_C, [user: step 2] -> F_A, [user: step 3] -> F_R."""
    msgs = [{"role": "user", "content": first_turn(instruction, docs, cfg)}]
    calls = [(list(msgs), cfg.sampling("comprehension"))]
    comp = _ask(llm, *calls[-1], namespace)
    msgs += [{"role": "assistant", "content": comp}, {"role": "user", "content": prompts.FEEDBACK_STEP_ASSESSMENT}]
    calls.append((list(msgs), cfg.sampling("assessment")))
    assess = _ask(llm, *calls[-1], namespace)
    msgs += [{"role": "assistant", "content": assess}, {"role": "user", "content": prompts.FEEDBACK_STEP_REFINEMENT}]
    calls.append((list(msgs), cfg.sampling("refinement")))
    refine = _ask(llm, *calls[-1], namespace)
    return RoundFeedback(comp, assess, refine, parsers.parse_refinement(refine), _recorded(llm, calls, namespace))


def feedback_round_independent(llm, instruction: str, docs: Sequence[Any], cfg: FeedbackConfig = FeedbackConfig(),
                               namespace: str = NAMESPACE) -> RoundFeedback:
    """The same three steps as three independent calls (each re-reads the tools)."""
    slots = {"k": str(len(docs)), "instruction": instruction,
             "tools": prompts.format_tools(docs, max_chars=cfg.tool_chars)}
    user = lambda text: [{"role": "user", "content": text}]  # noqa: E731
    calls = [(user(prompts.FEEDBACK_COMPREHENSION.format(**slots)), cfg.sampling("comprehension"))]
    comp = _ask(llm, *calls[-1], namespace)
    calls.append((user(prompts.FEEDBACK_ASSESSMENT.format(**slots, comprehension=comp)), cfg.sampling("assessment")))
    assess = _ask(llm, *calls[-1], namespace)
    calls.append((user(prompts.FEEDBACK_REFINEMENT.format(**slots, assessment=assess)), cfg.sampling("refinement")))
    refine = _ask(llm, *calls[-1], namespace)
    return RoundFeedback(comp, assess, refine, parsers.parse_refinement(refine), _recorded(llm, calls, namespace))
