"""One configuration object for notebook ``40_querygen``: its ``smoke``, ``standard`` and ``paper``
instances, and the checks every override goes through (names and types, then ranges).

    cfg = config_for("standard")                          # the standard run
    cfg = config_for("smoke", test_requests=20)           # an override, checked
    cfg = fair_config("standard")                         # the fair test (FAIR_* below)
"""
from __future__ import annotations

from dataclasses import dataclass, field

from toolkit.config import check_sizes, overridden
from toolkit.querygen.alignment import AlignConfig, FilterConfig
from toolkit.querygen.data import SplitConfig
from toolkit.querygen.generation import PROMPT_LINES, Decoding
from toolkit.querygen.sft import SFTConfig


@dataclass(frozen=True)
class QuerygenConfig:
    profile: str = "smoke"
    split: SplitConfig = SplitConfig()
    encoder: str = "mpnet"                 # §4.2: all-mpnet-base-v2
    list_size: int = 11                    # retrieved list length (lost; Recall@11 is the largest printed)
    append_utterance: bool = True          # §4.2 / App. B.1
    dev_requests: int | None = 100         # calibration requests (nested seeded sample of the dev split)
    test_requests: int | None = 200        # requests per test set given to the LLM methods (None: all)
    sample_seed: int = 0
    temperatures: tuple[float, ...] = (0.0, 0.3, 0.6, 0.9)
    uncalibrated_temperature: float | None = 0.0   # while a method's calibration grid is incomplete, its test
                                                   # rows use this temperature's answers, labelled as uncalibrated
    zero_shot_model: str = "qwen-1.5b"     # in place of LLaMA-13B (§3.1)
    generator_base: str = "qwen-0.5b"      # SFT and alignment start here (in place of a 13B model)
    sft: SFTConfig = SFTConfig()
    sft_train_requests: int | None = 500   # training requests for SFT (nested seeded sample; None: all):
                                           # full fine-tuning runs at ~70 tokens/s on 2 cores, 500 x ~220 tokens ~ 27 min
    sft_target_words: int | None = None    # SFT targets: None = each gold API's whole index text; n = tool, API and
                                           # the description's first sentence, <= n words a line (trimmed_description)
    decoding: Decoding = Decoding()        # zero-shot and SFT answers: line stop / repetition penalty (default: off,
                                           # as every committed answer); alignment's is align.decoding
    align: AlignConfig = AlignConfig()
    ablation_test_requests: int | None = 100   # Tables 3-5: requests per test set for each ablation row (nested in
                                               # the LLM samples; 40 prints each row's answering time)
    align_eval_temperature: float = 0.0    # each iteration's test answers (Figure 4): greedy, not calibrated per
                                           # iteration (a dev grid per iteration would cost ~4x the answers)
    align_report_iteration: int | None = None  # Table 1's Alignment row; None: the iteration with the best
                                               # out-of-domain Recall@5, the paper's operating point (§4.4)
    extra: dict = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if self.profile not in PROFILE_NAMES:
            raise ValueError(f"profile must be one of {PROFILE_NAMES}, got {self.profile!r}")
        if self.list_size < 5:
            raise ValueError(f"list_size must be >= 5 (Recall@5 is reported), got {self.list_size}")
        check_sizes("40_querygen", self, ("dev_requests", "test_requests", "sft_train_requests", "ablation_test_requests",
                                          "sft_target_words"))
        if not self.temperatures or any(t < 0 for t in self.temperatures):
            raise ValueError(f"temperatures must be a non-empty tuple of values >= 0, got {self.temperatures}")
        if self.align_report_iteration is not None and not 1 <= self.align_report_iteration <= self.align.iterations:
            raise ValueError(f"align_report_iteration must be in 1..{self.align.iterations} (align.iterations) or None, "
                             f"got {self.align_report_iteration}")
        if self.encoder not in ("mpnet", "minilm") and not self.encoder.startswith("dense:"):
            raise ValueError(f"encoder must be mpnet, minilm or dense:<path>, got {self.encoder!r}")
        if self.profile != "paper":
            # smoke and standard replay the committed caches of the local models: another name has no answers there,
            # and its rows would all turn pending in a run that ends "ok"
            from toolkit.llm import models
            for name in ("zero_shot_model", "generator_base"):
                v = getattr(self, name)
                if models.canonical_id(v) not in models.MODELS:
                    known = ", ".join(sorted(models.ALIASES))
                    raise ValueError(f"40_querygen parameter {name} must be a local model under the {self.profile} "
                                     f"profile ({known}, or a .gguf file), got {v!r}; other models run under the "
                                     f"paper profile")

    def sft_tag(self) -> str:
        """Names the SFT run (its model directory, GGUF file and so its cache model id): a hash of
        everything that changes the fine-tuned weights."""
        import hashlib
        import json
        from dataclasses import asdict
        key = {"sft": asdict(self.sft), "split": asdict(self.split), "n": self.sft_train_requests,
               "seed": self.sample_seed, "base": self.generator_base}
        if self.sft_target_words is not None:      # added later: out of the key at None, the committed run's value
            key["target_words"] = self.sft_target_words
        return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:8]

    def metrics(self) -> list[str]:
        """Table 1's metrics: MMRR and MAP at the list length, Recall@3/5/11."""
        k = self.list_size
        return [f"mmrr@{k}", f"map@{k}", "recall@3", "recall@5", f"recall@{min(11, k)}"]


PROFILE_NAMES = ("smoke", "standard", "paper")
PROFILES = {
    # seconds on 2 cores: a dozen requests per test set, answers replayed from the committed cache. The
    # temperature is calibrated on the standard profile's dev sample: a dozen dev requests can pick another
    # temperature than the standard's 100 (SFT: T=0.6 vs 0.0), whose test answers were never generated
    "smoke": QuerygenConfig(profile="smoke", dev_requests=100, test_requests=12, ablation_test_requests=6),
    # the CPU run: 100 dev requests for calibration, 200 requests per test set for the LLM rows
    "standard": QuerygenConfig(profile="standard"),
    # the paper's scale: every request, every training request, 100 drafts per request (Table 3's baseline)
    "paper": QuerygenConfig(profile="paper", dev_requests=None, test_requests=None, sft_train_requests=None,
                            zero_shot_model="meta-llama/Llama-2-13b-chat-hf", generator_base="meta-llama/Llama-2-13b-chat-hf",
                            align=AlignConfig(n_drafts=100, train_size=None)),
}


def config_for(profile: str, **overrides) -> QuerygenConfig:
    """The profile's configuration with ``overrides`` applied; an unknown name or a value of the
    wrong type is an error naming the parameter and what it expects."""
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILE_NAMES}, got {profile!r}")
    return overridden("40_querygen", PROFILES[profile], overrides)


# The fair test (``fair_config``; ``python -m toolkit.querygen <command> --fair``). Every value below is a
# choice of ours, sized by ``python -m toolkit.querygen size --fair`` (toolkit.querygen.sizing) from the rates
# measured in the committed caches to fit about 20 CPU hours on this 2-core machine:
# - decoding: every answer ends at the prompt's number of lines (Fig. 2 / Fig. 5: "at most 5 descriptions
#   (lines)"); no repetition penalty (it would also penalize a tool name that rightly recurs across lines);
# - SFT: one epoch over the whole training split, targets trimmed to tool, API and a first sentence, 19 words a
#   line (the prompt's "less than 20 words");
# - alignment: fresh requests every iteration (disjoint slices of one seeded shuffle), 20 drafts per request (the
#   issue's minimum), and a filter relative to the request alone: keep the best draft only if its MMRR beats the
#   utterance-alone MMRR (min_gain=0), the absolute minimum off (min_reward=0).
FAIR_DECODING = Decoding(max_lines=PROMPT_LINES)
FAIR_FILTER = FilterConfig(min_reward=0.0, min_gain=0.0)
FAIR_ALIGN = AlignConfig(n_drafts=20, train_size=150, fresh_requests=True, filter=FAIR_FILTER, decoding=FAIR_DECODING)
FAIR_CHANGES = {"sft_train_requests": None, "sft_target_words": 19, "decoding": FAIR_DECODING, "align": FAIR_ALIGN}
# the filter settings whose kept drafts the fair run reports (alignment.kept_counts), Table 3's thresholds re-read
FAIR_FILTER_SETTINGS = {
    "fair (gain > 0)": FAIR_FILTER,
    "gain > 0.05": FilterConfig(min_reward=0.0, min_gain=0.05),
    "no filter": FilterConfig(min_reward=0.0),
    "standard (reward >= 0.05)": FilterConfig(),
    "fair, 2 kept per request": FilterConfig(min_reward=0.0, min_gain=0.0, keep_per_sample=2),
}


def fair_config(profile: str = "standard", **overrides) -> QuerygenConfig:
    """The profile's configuration with the fair test (:data:`FAIR_CHANGES`), then ``overrides``
    (checked as :func:`config_for`'s). Its SFT run and alignment iterations have their own names (tags) and its
    answers their own cache keys, so the standard profile's committed runs are untouched."""
    from dataclasses import replace
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILE_NAMES}, got {profile!r}")
    base = PROFILES[profile]
    changes = dict(FAIR_CHANGES)
    if profile == "paper":          # the paper's own drafts per request and training pool
        changes["align"] = replace(FAIR_ALIGN, n_drafts=base.align.n_drafts)
    return overridden("40_querygen", replace(base, **changes), overrides)
