"""One configuration object for notebook ``20_reinvoke``: its ``smoke``, ``standard`` and ``paper``
instances and the checks every override goes through (names and types here, ranges below).

    cfg = config_for("standard")
    cfg = config_for("smoke", backbones=("qwen-0.5b",))      # checked
"""
from __future__ import annotations

from dataclasses import dataclass

from toolkit.config import overridden


@dataclass(frozen=True)
class ReinvokeConfig:
    profile: str = "smoke"
    dense_model: str = "minilm"                        # minilm | mpnet | a local sentence-transformers directory
    backbones: tuple[str, ...] = ("qwen-1.5b", "qwen-0.5b")   # read from the cache; the first is recorded
                                                       # under the paper's main rows (text-bison@001 there)
    m: int = 10                                        # synthetic queries per tool (paper: 10)
    m_toolbench: int | None = 5                        # ... per API on the ToolBench pools (2,490 APIs); None: as m
    queries_task_toole: str = "synthetic-queries-nostop"   # the query generator's cached answers on ToolE: the
                                                       # first generation (no stop strings); paper: "synthetic-queries"
    queries_task_toolbench: str = "synthetic-queries"  # ... on the ToolBench pools: answers that stop where the
                                                       # query ends (toolkit.llm.tasks.SYNTHETIC_QUERY_STOP)
    toole_single_sample: int | None = 1000             # ToolE single-tool queries for the LLM methods (None: all 20,550)
    smoke_queries: int = 12                            # smoke: queries per dataset (ToolE single/multi, ToolBench I3)
    toolbench_corpus: str = "pool"                     # pool | library
    ties: str = "sklearn"                              # sklearn (tie-averaged, the paper's ndcg_score) | trec
    k: int = 100                                       # retrieval depth
    seed: int = 0

    def __post_init__(self) -> None:
        if self.profile not in PROFILE_NAMES:
            raise ValueError(f"profile must be one of {PROFILE_NAMES}, got {self.profile!r}")
        for name in ("m", "smoke_queries", "k", "m_toolbench", "toole_single_sample"):
            v = getattr(self, name)
            if v is not None and v < 1:
                raise ValueError(f"20_reinvoke parameter {name} must be >= 1{' or None' if name in ('m_toolbench', 'toole_single_sample') else ''}, got {v}")
        if self.seed < 0:
            raise ValueError(f"20_reinvoke parameter seed must be >= 0, got {self.seed}")
        if not self.backbones or not all(isinstance(b, str) and b.strip() for b in self.backbones):
            raise ValueError(f"20_reinvoke parameter backbones must name at least one LLM, got {self.backbones!r}")
        if self.toolbench_corpus not in ("pool", "library"):
            raise ValueError(f"20_reinvoke parameter toolbench_corpus must be pool or library, got {self.toolbench_corpus!r}")
        for name in ("queries_task_toole", "queries_task_toolbench"):
            if getattr(self, name) not in QUERY_TASKS:
                raise ValueError(f"20_reinvoke parameter {name} must be one of {QUERY_TASKS}, got {getattr(self, name)!r}")
        if self.ties not in ("sklearn", "trec"):
            raise ValueError(f"20_reinvoke parameter ties must be sklearn or trec, got {self.ties!r}")

    @property
    def main_backbone(self) -> str:
        return self.backbones[0]

    def queries_task(self, dataset: str) -> str:
        """The synthetic-query task (cache sampling) whose answers expand ``dataset``'s tools."""
        return self.queries_task_toolbench if dataset.startswith("toolbench") else self.queries_task_toole


QUERY_TASKS = ("synthetic-queries", "synthetic-queries-nostop")   # toolkit.llm.tasks


PROFILE_NAMES = ("smoke", "standard", "paper")
PROFILES = {
    # a dozen queries per ToolE set and ToolBench I3, answers replayed from the committed caches
    "smoke": ReinvokeConfig(profile="smoke"),
    # every query (ToolE single-tool: a 1,000-query sample for the LLM methods), m = 5 on the ToolBench pools
    "standard": ReinvokeConfig(profile="standard"),
    # the paper's sizes: every ToolE query, m = 10 everywhere, the whole library as ToolBench corpus
    "paper": ReinvokeConfig(profile="paper", m_toolbench=None, toole_single_sample=None, toolbench_corpus="library",
                            queries_task_toole="synthetic-queries"),
}


def config_for(profile: str, **overrides) -> ReinvokeConfig:
    """The profile's configuration with ``overrides`` (unknown names and wrong types are errors)."""
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILE_NAMES}, got {profile!r}")
    return overridden("20_reinvoke", PROFILES[profile], overrides)
