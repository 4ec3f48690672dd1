"""One round of LLM feedback (Xu et al. 2024, §4.2): comprehension (Eq. 2), assessment (Eq. 3),
refinement (Eq. 4: a refined instruction, or "N/A" when the answers to its two questions are both "yes";
see :class:`FeedbackConfig` ``decision`` for who applies that rule).

The steps run as **one multi-turn chat**: the first user turn holds the instruction and the
K retrieved tools (category, name, description and parameters, each cut to ``tool_chars``
characters) with the comprehension request; the assessment, the two yes/no questions and (unless
both are "yes") the refinement request follow as later turns, so each step sees the previous
answers, as Eqs. 3-4 require, and llama.cpp reuses the round's KV cache instead of reading the K
tool documents at every step. :func:`feedback_round_independent` is the separate-calls variant
(one call per step; each prompt repeats the tools and pastes the previous answers), kept for the
throughput benchmark (``scripts/bench_feedback.py``).

Every call goes through the LLM client's cache (key: the whole message list), so a round
interrupted after step 2 resumes at step 3, and replay needs no model.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from toolkit.llm import parsers, prompts
from toolkit.llm.base import Sampling

NAMESPACE = "feedback"


DECISIONS = ("answers", "model")
UNCHANGED = ("na", "retrieve")


@dataclass(frozen=True)
class FeedbackConfig:
    """The feedback LLM's settings. The paper (gpt-3.5-turbo) states none; greedy decoding here.

    ``decision`` -- who applies §4.2's rule "if one of the answers [to the two questions] is not 'yes', we
    prompt the LLM to provide a potential refinement; otherwise it returns 'N/A'":
    ``"answers"`` (default, the rule as the paper words it): step 3 answers the two questions yes/no, our
    code applies the rule, and a fourth turn asks for the refined instruction only when one is not "yes";
    ``"model"``: one step-3 turn in which the LLM answers the questions itself and writes "N/A" or the
    refinement (one turn fewer)."""
    k: int = 10                        # K tools shown to the LLM (§5.1)
    tool_chars: int = 600              # per-tool budget, characters (~150 tokens): 10 tools ~ 1,500 tokens
    comprehension_tokens: int = 256
    assessment_tokens: int = 256
    refinement_tokens: int = 128
    decision: str = "answers"
    decision_tokens: int = 24          # "1) no\n2) yes" and a little slack
    brevity: str = "none"              # steps 1-2: "none" (the first generation's wording) or "one-line", a request for
                                       # answers of bounded length (toolkit.llm.prompts.FEEDBACK_BREVITY)
    refine_wording: str = "enrich"     # step 4's request (decision="answers"): "enrich", the paper's two dimensions;
                                       # "enrich-add", the same + "keep the request and add to it, do not return it
                                       # unchanged" (toolkit.llm.prompts.FEEDBACK_REFINE_WORDINGS)
    tool_format: str = "fields"        # how a shown tool reads (toolkit.llm.prompts.format_tools): "fields", its names
                                       # once, its description, then its parameters as room allows; "text", the
                                       # first generation's names + the document text (which repeats the names)
    reasoning_repeat_penalty: float = 1.0   # llama.cpp's repetition penalty on steps 1-2 (free-form reasoning; 1.0 =
                                       # off); steps 3-4 keep 1.0: "1) yes 2) yes" and a refinement that copies the
                                       # instruction repeat by design
    reasoning_dry: float = 0.0         # llama.cpp's DRY multiplier on steps 1-2 (0 = off; Sampling.dry_multiplier): ends
                                       # the paragraph-long verbatim loops the windowed penalty above misses
    unchanged: str = "na"              # a refinement identical to the instruction it refines: "na" ends the loop as
                                       # "N/A" does (nothing new to retrieve); "retrieve", the first generation's:
                                       # retrieved again under the next "Iteration t" prefix (toolkit.feedback.loop)

    def __post_init__(self) -> None:
        for name in ("k", "tool_chars", "comprehension_tokens", "assessment_tokens", "refinement_tokens",
                     "decision_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"FeedbackConfig.{name} must be >= 1, got {getattr(self, name)}")
        if self.decision not in DECISIONS:
            raise ValueError(f"FeedbackConfig.decision must be one of {DECISIONS}, got {self.decision!r}")
        if self.brevity not in prompts.FEEDBACK_BREVITY:
            raise ValueError(f"FeedbackConfig.brevity must be one of {tuple(prompts.FEEDBACK_BREVITY)}, "
                             f"got {self.brevity!r}")
        if self.tool_format not in prompts.TOOL_FORMATS:
            raise ValueError(f"FeedbackConfig.tool_format must be one of {prompts.TOOL_FORMATS}, got {self.tool_format!r}")
        if not self.reasoning_repeat_penalty > 0:
            raise ValueError(f"FeedbackConfig.reasoning_repeat_penalty must be > 0 (1.0 = off), got "
                             f"{self.reasoning_repeat_penalty}")
        if not self.reasoning_dry >= 0:
            raise ValueError(f"FeedbackConfig.reasoning_dry must be >= 0 (0 = off), got {self.reasoning_dry}")
        if self.unchanged not in UNCHANGED:
            raise ValueError(f"FeedbackConfig.unchanged must be one of {UNCHANGED}, got {self.unchanged!r}")
        if self.refine_wording not in prompts.FEEDBACK_REFINE_WORDINGS:
            raise ValueError(f"FeedbackConfig.refine_wording must be one of "
                             f"{tuple(prompts.FEEDBACK_REFINE_WORDINGS)}, got {self.refine_wording!r}")

    def sampling(self, step: str) -> Sampling:
        reasoning = step in ("comprehension", "assessment")
        return Sampling(temperature=0.0, top_p=1.0, max_tokens=getattr(self, f"{step}_tokens"), seed=0,
                        repeat_penalty=self.reasoning_repeat_penalty if reasoning else 1.0,
                        dry_multiplier=self.reasoning_dry if reasoning else 0.0)


@dataclass(frozen=True)
class RoundFeedback:
    comprehension: str
    assessment: str
    refinement: str                    # the raw refinement answer ("" when the decision asked for none)
    refined: str | None                # the parsed refined instruction; None = "N/A" (leave the loop)
    seconds: float | None = None       # the answers' generation seconds as recorded in the cache
                                       # (None when a backend recorded none: the loop times the round itself)
    decision: str | None = None        # decision="answers": the raw step-3 answer to the two questions
    answers: tuple[str, str] | None = None   # ... parsed: "yes" / "no" / "?" each


def first_turn(instruction: str, docs: Sequence[Any], cfg: FeedbackConfig = FeedbackConfig()) -> str:
    head = prompts.FEEDBACK_COMPREHENSION.format(
        k=str(len(docs)), instruction=instruction, tools=prompts.format_tools(docs, max_chars=cfg.tool_chars, style=cfg.tool_format))
    return head + prompts.FEEDBACK_BREVITY[cfg.brevity][0]


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


def _refine_needed(answers: tuple[str, str]) -> bool:
    return answers != ("yes", "yes")           # §4.2: "if one of the answers is not 'yes'"


def _steps(ask, cfg: FeedbackConfig, llm, calls: list, namespace: str) -> RoundFeedback:
    """The round's steps in order, whatever carries them: ``ask(step, **previous answers)`` -> the answer."""
    comp = ask("comprehension")
    assess = ask("assessment", comprehension=comp)
    if cfg.decision == "model":
        refine = ask("refinement", assessment=assess)
        return RoundFeedback(comp, assess, refine, parsers.parse_refinement(refine), _recorded(llm, calls, namespace))
    decision = ask("decision", assessment=assess)
    answers = parsers.parse_decision(decision)
    refine = ask("refine", assessment=assess, decision=decision) if _refine_needed(answers) else ""
    return RoundFeedback(comp, assess, refine, parsers.parse_refinement(refine) if refine else None,
                         _recorded(llm, calls, namespace), decision, answers)


def _tokens(step: str) -> str:
    return "refinement" if step == "refine" else step        # step 4 has the refinement's token cap


def feedback_round(llm, instruction: str, docs: Sequence[Any], cfg: FeedbackConfig = FeedbackConfig(),
                   namespace: str = NAMESPACE) -> RoundFeedback:
    """The steps as one chat: [user: tools + step 1] -> F_C, [user: step 2] -> F_A, then either
    [user: step 3 questions] -> yes/no and, unless both are "yes", [user: step 4] -> F_R (``decision="answers"``),
    or [user: step 3] -> F_R or "N/A" (``decision="model"``). Each turn sees the earlier ones in the chat."""
    texts = {"comprehension": first_turn(instruction, docs, cfg),
             "assessment": prompts.FEEDBACK_STEP_ASSESSMENT + prompts.FEEDBACK_BREVITY[cfg.brevity][1],
             "refinement": prompts.FEEDBACK_STEP_REFINEMENT, "decision": prompts.FEEDBACK_STEP_DECISION,
             "refine": prompts.FEEDBACK_REFINE_WORDINGS[cfg.refine_wording]}
    msgs: list[dict] = []
    calls: list[tuple[list[dict], Sampling]] = []

    def turn(step: str, **_previous) -> str:
        msgs.append({"role": "user", "content": texts[step]})
        calls.append((list(msgs), cfg.sampling(_tokens(step))))
        out = _ask(llm, *calls[-1], namespace)
        msgs.append({"role": "assistant", "content": out})
        return out
    return _steps(turn, cfg, llm, calls, namespace)


def feedback_round_independent(llm, instruction: str, docs: Sequence[Any], cfg: FeedbackConfig = FeedbackConfig(),
                               namespace: str = NAMESPACE) -> RoundFeedback:
    """The same steps as independent calls (each re-reads the tools and is given the previous answer)."""
    brief = dict(zip(("comprehension", "assessment"), prompts.FEEDBACK_BREVITY[cfg.brevity]))
    templates = {"comprehension": prompts.FEEDBACK_COMPREHENSION, "assessment": prompts.FEEDBACK_ASSESSMENT,
                 "refinement": prompts.FEEDBACK_REFINEMENT, "decision": prompts.FEEDBACK_DECISION,
                 "refine": prompts.FEEDBACK_REFINE_TEMPLATES[cfg.refine_wording]}
    slots = {"k": str(len(docs)), "instruction": instruction,
             "tools": prompts.format_tools(docs, max_chars=cfg.tool_chars, style=cfg.tool_format)}
    calls: list[tuple[list[dict], Sampling]] = []

    def call(step: str, **previous) -> str:
        text = templates[step].format(**slots, **previous) + brief.get(step, "")
        calls.append(([{"role": "user", "content": text}],
                      cfg.sampling(_tokens(step))))
        return _ask(llm, *calls[-1], namespace)
    return _steps(call, cfg, llm, calls, namespace)
