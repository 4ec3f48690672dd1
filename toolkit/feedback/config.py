"""One configuration object for the feedback experiment (notebook ``30_feedback`` and
``python -m toolkit.feedback``): ``smoke`` / ``standard`` / ``paper`` instances and their checks."""
from __future__ import annotations

from dataclasses import dataclass

from toolkit.config import check_sizes, overridden

from toolkit.feedback.round import FeedbackConfig
from toolkit.feedback.training import IterationConfig

PROFILE_NAMES = ("smoke", "standard", "paper")


@dataclass(frozen=True)
class FeedbackExperiment:
    profile: str = "smoke"
    base: str = "minilm"                  # in place of BERT-base (§5.1); Table 6's second model: mpnet
    # Table 6's "RoBERTa-class" row's base encoder (experiment.condition); smoke: minilm, which trains ~5x faster
    # than mpnet: the smoke run checks the row's code path (its own warm-up, ToolRetriever and loop), not the model
    roberta_class_base: str = "mpnet"
    llm: str = "qwen-1.5b"                # in place of gpt-3.5-turbo-0125
    feedback: FeedbackConfig = FeedbackConfig()
    training: IterationConfig = IterationConfig()
    train_feedback_requests: int | None = 500      # training instructions given offline feedback
    warmup_pos: int = 0                            # warm-up pairs: gold APIs per training query (0 = all)
    warmup_pairs: int | None = None                # warm-up on a seeded sample of that many pairs (None: all)
    ablation_requests: int | None = 40             # I2 sample of Tables 4, 6, 7 (nested in the I2 sample)
    train_trace_retriever: str | None = None       # set by experiment.condition: the main run's warm-up model
    llm_backend: str | None = None                 # None: auto (llama.cpp for a local GGUF); smoke: echo
    llm_slots: int | None = None                   # llama.cpp slots = instructions whose round runs at once
                                                   # (None: the backend's default)
    run_missing: bool = False                      # the notebook runs missing stages itself (smoke)
    test_requests: dict | None = None              # per group: LLM sample size (None: whole group)
    warmup_max_steps: int | None = None            # cap on the warm-up's batches (smoke)
    sample_seed: int = 0
    toolbench_corpus: str = "library"              # library (the protocol) | pool (fast: smoke)
    baseline_queries: int | None = None            # smoke: baselines on a sample of each set too
    max_docs: int | None = None                    # smoke: each test corpus cut to this many documents
    # is the LLM the limit: the loop on ToolRetriever with each of these LLMs on one I2 sample of
    # scale_queries (nested in the I2 sample), with the fair LLM step; the oracle on the same sample is the ceiling
    # (smallest first; SmolLM2-135M is a third size, so the trend has three points)
    scale_llms: tuple = ("smollm2", "qwen-0.5b", "qwen-1.5b")
    scale_queries: int | None = 60

    def __post_init__(self) -> None:
        if self.toolbench_corpus not in ("library", "pool"):
            raise ValueError(f"toolbench_corpus must be library or pool, got {self.toolbench_corpus!r}")
        if self.profile not in PROFILE_NAMES:
            raise ValueError(f"profile must be one of {PROFILE_NAMES}, got {self.profile!r}")
        check_sizes("30_feedback", self, ("train_feedback_requests", "ablation_requests", "warmup_pairs",
                                          "scale_queries"))
        if not isinstance(self.scale_llms, tuple) or not all(isinstance(m, str) and m for m in self.scale_llms):
            raise ValueError(f"30_feedback parameter scale_llms must be a tuple of LLM names (e.g. ('qwen-0.5b', "
                             f"'qwen-1.5b')), got {self.scale_llms!r}")
        if self.llm_slots is not None and self.llm_slots < 1:
            raise ValueError(f"30_feedback parameter llm_slots must be >= 1 or None (the backend's default), "
                             f"got {self.llm_slots}")
        if self.warmup_pos < 0:
            raise ValueError(f"30_feedback parameter warmup_pos must be >= 0 (0 = every gold API), got {self.warmup_pos}")
        from toolkit.feedback.data import OUT_OF_DOMAIN
        groups = ("I1", "I2", "I3", *OUT_OF_DOMAIN)
        for group, n in (self.test_requests or {}).items():
            if group not in groups:     # a misspelt group would silently mean "all queries" for the real one
                raise ValueError(f"30_feedback parameter test_requests has no group {group!r}; groups: "
                                 f"{', '.join(groups)}")
            if n is not None and n < 1:
                raise ValueError(f"test_requests[{group!r}] must be >= 1 or None, got {n}")
        if self.profile != "paper":
            # checked before any encoding: a name that is not an encoder fails here, not after minutes of work
            from pathlib import Path

            from toolkit.retrieval.models import registered_id
            for name in ("base", "roberta_class_base"):
                v = getattr(self, name)
                if registered_id(v) is None and not Path(v).expanduser().is_dir():
                    raise ValueError(f"30_feedback parameter {name} must be minilm, mpnet or a local model "
                                     f"directory, got {v!r}")

    def sample_size(self, group: str) -> int | None:
        return (self.test_requests or {}).get(group)


# FeedbackConfig's defaults are the fair LLM step (the paper's step-4 wording, tools shown by their
# fields, an unchanged refinement ends the loop); the committed smoke and standard traces were made before, with these
FIRST_GENERATION = {"tool_format": "text", "unchanged": "retrieve"}

PROFILES = {
    # the whole pipeline in seconds: an echo LLM (deterministic stand-in), a few training steps, 2-4 queries
    "smoke": FeedbackExperiment(profile="smoke", llm="echo", llm_backend="echo", run_missing=True,
                                feedback=FeedbackConfig(**FIRST_GENERATION),
                                training=IterationConfig(batch_size=8, max_seq_length=64),
                                train_feedback_requests=8, warmup_max_steps=2, ablation_requests=2,
                                test_requests={"I1": 4, "I2": 4, "I3": 4, "UltraTool": 4},
                                toolbench_corpus="pool", baseline_queries=20, max_docs=150,
                                scale_llms=("echo-small", "echo"), scale_queries=2, roberta_class_base="minilm"),
    # the budget: all of I2 and I3, >= 150 I1 queries, >= 500 training instructions with feedback
    # max length 128 (paper: unstated; 256 made the mpnet warm-up need > 12 GB at batch 32 on this machine)
    # Feedback budget (scripts/bench_feedback.py, 4 I2 queries, 1.5B, 2 threads): 600 characters per tool and caps
    # 256/256/128 tokens took 55.9 s per round; 400 characters and 160/160/96, 40.2 s (-28 %), same N/A decisions.
    # 400 characters keep a median ToolBench API document whole (270 characters; 31 % are cut, 19 % at 600).
    # 4 llama.cpp slots (4 instructions' rounds decoded together): 4 I2 rounds took 172.5 s against 232.5 s with
    # 1 slot, and 155.5 s against 194.4 s in a second pair of runs (1.35x, 1.25x; 2 threads, same inputs;
    # results/bench/feedback_round.json holds the second). Batched greedy decoding changed one of the 4 decisions
    # in the first pair -- the committed cache is what replays, so a regenerated trace may differ in a few answers.
    # Step 4's wording "enrich-add": on the first 24 recorded refinement requests, the 1.5B model changed 9 instructions
    # with "enrich" and 16 with "enrich-add" (scripts/ab_refine_wording.py; results/bench/refine_wording.json); an
    # unchanged "refinement" retrieves the same list, so with "enrich" the loop did nothing for most instructions.
    "standard": FeedbackExperiment(profile="standard", training=IterationConfig(max_seq_length=128), llm_slots=4,
                                   feedback=FeedbackConfig(tool_chars=400, comprehension_tokens=160,
                                                           assessment_tokens=160, refinement_tokens=96,
                                                           refine_wording="enrich-add", **FIRST_GENERATION),
                                   test_requests={"I1": 150, "I2": None, "I3": None, "UltraTool": 150}),
    "paper": FeedbackExperiment(profile="paper", base="bert-base-uncased", llm="gpt-3.5-turbo-0125",
                                train_feedback_requests=None, training=IterationConfig(batch_size=64),
                                scale_llms=("qwen-0.5b", "qwen-1.5b", "gpt-3.5-turbo-0125")),
}


# The fair LLM step (``fair_config``; ``python -m toolkit.feedback <stage> --fair``): the paper's step-4
# wording ("enrich"; our "enrich-add" stays a named row), an unchanged refinement treated as "N/A", each tool shown as
# its names once, its description and its parameters as room allows (600 characters), steps 1-2 asked to be brief
# (FEEDBACK_BREVITY "one-line"), and caps that hold >= 95 % of the answers, from scripts/bench_feedback.py --fair on 24
# I2 rounds (4 slots, 2 threads; results/bench/feedback_caps.json): caps 1024/384/24/128 left 0/24 comprehension
# answers at the cap (max 974 tokens), 2/24 assessment (8.3 %, at 384), 0/24 decision (max 8), 1/24 refinement (4.2 %,
# at 128), 76.3 s per round; so assessment and refinement get 512 and 192 (a first bench at 640/384/24/128 with
# the document text: 3 of 24 comprehension answers capped). The caps bound the answers, not the cost: median answers
# were 318 / 194 / 8 / 62 tokens.
# Steps 1-2 decode with llama.cpp's repetition penalty 1.1 (reasoning_repeat_penalty): the first 0.5B loop on I2
# (2026-12-02, penalty off) cut 7 of its first 13 assessment answers at 512 tokens, each a sentence repeated to the
# cap; the same 13 prompts with 1.1 ended 0 of 13 at the cap (127 s for the 13). The 1.5B bench above ran with it off.
# In the loop with the penalty (step 1's answers changed with it) 5 of the first 16 0.5B assessments still reached 512
# tokens, no longer a loop but the ten tools' parameters listed one by one, so assessment gets 1024 like comprehension
# (a cap bounds an answer, it costs nothing on answers that end before it).
FAIR_FEEDBACK = FeedbackConfig(tool_chars=600, brevity="one-line", comprehension_tokens=1024, assessment_tokens=1024,
                               decision_tokens=24, refinement_tokens=192, refine_wording="enrich",
                               tool_format="fields", unchanged="na", reasoning_repeat_penalty=1.1)

# The fair step's settings for one LLM on top of FAIR_FEEDBACK. Qwen2.5-Coder-0.5B with the penalty above still cut 3
# of its first 33 assessment answers at 1,024 tokens (9.1 %), each a paragraph of ~100 tokens repeated verbatim, which
# a penalty over the last 64 tokens does not see. llama.cpp's DRY sampler (toolkit.llm.base.Sampling.dry_multiplier)
# on the same three prompts (scripts/ab_reasoning_dry.py, results/bench/feedback_dry.json, 2026-12-03): at 0.8, the
# value llama.cpp suggests, two ended (275 and 243 tokens) and one still reached 1,024, a numbered list whose lines
# differ only by their counters ("Goal 21: ...", "Goal 22: ..."); at 2.0 all three ended (190, 94, 149 tokens). We
# keep 0.8, the milder penalty on ordinary text (it also penalises copying long tool names from the prompt), and the
# notebook prints the share at the cap that the loop then measures. The 1.5B model's fair answers end before their
# caps without DRY (at most 1 of 41 per step), so its traces keep it off. SmolLM2-135M (the third size on the
# I2 sample) is smaller than the 0.5B model that needed DRY, so it gets the same setting from its first answer (no
# penalty-only trace of it exists); notebook 30 prints its share at the cap like the others'.
FAIR_FEEDBACK_FOR_LLM = {"qwen-0.5b": {"reasoning_dry": 0.8}, "smollm2": {"reasoning_dry": 0.8}}

# The offline training feedback under the fair step is regenerated on fewer training instructions than the capped
# run's 500 (fewer instructions where needed, stated): the 1.5B loop with the fair step costs 82 s
# per instruction on this machine (3 rounds, 4 slots; notebook 30's loop-cost table), so 500 would be ~11 h, 200
# ~4.6 h. Per profile; a profile not named keeps its own size. The matched-budget control reads the same trace rows.
FAIR_TRAIN_FEEDBACK_REQUESTS = {"standard": 200}


def fair_config(profile: str = "standard", **overrides) -> FeedbackExperiment:
    """The profile's configuration with the fair LLM step (:data:`FAIR_FEEDBACK`, and
    :data:`FAIR_FEEDBACK_FOR_LLM` for the LLM that ``overrides`` or the profile names; smoke keeps its echo LLM),
    then ``overrides`` (so an explicit ``feedback`` override wins). Its traces have their own names (the feedback
    settings are part of every LLM trace's name)."""
    from dataclasses import replace
    base = config_for(profile)
    base = with_fair_feedback(replace(base, llm=overrides.get("llm", base.llm)))
    return overridden("30_feedback", base, overrides)


def with_fair_feedback(cfg: FeedbackExperiment) -> FeedbackExperiment:
    """``cfg`` (its overrides kept) with the fair LLM step for its LLM (:data:`FAIR_FEEDBACK`, then the LLM's
    :data:`FAIR_FEEDBACK_FOR_LLM`) and its profile's :data:`FAIR_TRAIN_FEEDBACK_REQUESTS` (at most; a smaller
    override stays): the configuration of its fair-LLM traces."""
    from dataclasses import replace
    size = cfg.train_feedback_requests
    if (fewer := FAIR_TRAIN_FEEDBACK_REQUESTS.get(cfg.profile)) is not None:
        size = fewer if size is None else min(size, fewer)
    return replace(cfg, feedback=replace(FAIR_FEEDBACK, **FAIR_FEEDBACK_FOR_LLM.get(cfg.llm, {})),
                   train_feedback_requests=size)


def config_for(profile: str, **overrides) -> FeedbackExperiment:
    """The profile's configuration with ``overrides`` (checked: unknown names and wrong types are errors)."""
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILE_NAMES}, got {profile!r}")
    return overridden("30_feedback", PROFILES[profile], overrides)
