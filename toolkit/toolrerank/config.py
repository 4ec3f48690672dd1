"""One configuration object for notebook ``10_toolrerank`` (and ``scripts/train_toolrerank.py``): the
evaluation sizes and the training :class:`~toolkit.toolrerank.experiment.Setup` of each profile.

    cfg = config_for("standard")
    cfg = config_for("standard", subset_queries=None, ce_neg_pool="all")   # a Setup field goes to cfg.setup

Overrides are checked by name and type (:func:`toolkit.config.overridden`); a name that is a field of
``Setup`` changes the training setup (and so the models' cache key), any other must be a field here.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

from toolkit.config import check_sizes, overridden
from toolkit.toolrerank.experiment import PROFILES as SETUPS
from toolkit.toolrerank.experiment import Setup


@dataclass(frozen=True)
class ExperimentConfig:
    profile: str = "smoke"
    setup: Setup = SETUPS["smoke"]
    subset_queries: int | None = 2         # queries per test subset, seeded sample (None: all)
    dev_queries: int | None = 6            # dev queries for the grid search (None: all)
    transfer_queries: int | None = 1       # queries per StableToolBench group (None: all)
    transfer_corpus: str = "pool"          # the StableToolBench groups' corpus: pool = each group's candidate pools;
                                           # library = all 16,427 APIs (tools with several APIs: hierarchy at work)
    depth: int = 50                        # DPR candidates given to the reranker (the largest m of the grid)
    eval_seed: int = 0                     # the evaluation samples (the split and training: setup.seed)
    toolbench_release_dir: str | None = None   # ToolBench data/retrieval/ (G1/ G2/ G3/): the paper's own protocol
    retrain: bool = False                  # ignore a matching score cache: train (or load) the models, rewrite it
    # held-out draws (toolkit.toolrerank.draws): the split drawn again with each seed, smaller training
    draw_seeds: tuple[int, ...] = ()       # () = no draws
    draw_setup: dict = field(default_factory=dict)   # changes of the main Setup for the draws (checked)
    draw_subset_queries: int | None = 2    # queries per subset in each draw (seeded sample; None: all)
    draw_dev_queries: int | None = 6       # dev queries of each draw's grid search
    draw_train_missing: bool = True        # train a draw without a score cache (else: listed as pending)
    # reranker variants (toolkit.toolrerank.variants): the main split and DPR, the reranker started elsewhere, each
    # trained at a screen budget (variant_setup: reranker fields only) and evaluated on the draws' sample sizes
    variants: tuple[str, ...] = ()         # names of toolkit.toolrerank.variants.VARIANTS (() = none)
    variant_setup: dict = field(default_factory=dict)
    variant_subset_queries: int | None = 2  # queries per subset each variant is evaluated on (seeded sample; None: all)
    variant_dev_queries: int | None = 6    # dev queries of each variant's grid search
    variant_train_missing: bool = True     # train a variant without a score cache (else: listed as pending)
    alone_queries: int | None = 0          # the reranker judged alone (toolkit.toolrerank.alone): queries per subset
                                           # scored against the whole library (0: no such table; None: all)
    alone_library: int | None = None       # cap on the library those queries are scored against (their gold APIs and
                                           # a seeded sample of the others; smoke); None: the whole library
    alone_train_missing: bool = True       # score them in the notebook when no file holds them (else: pending)
    # the budget control (toolkit.toolrerank.budget): the main reranker retrained with these Setup changes (ce_* only,
    # e.g. ce_queries=0: every training query), everything else and the evaluation samples the main run's
    budget_setup: dict = field(default_factory=dict)   # {} = no budget control
    budget_train_missing: bool = True      # train and score it in the notebook when no score cache holds it (else: pending)

    def __post_init__(self) -> None:
        if self.profile not in PROFILE_NAMES:
            raise ValueError(f"profile must be one of {PROFILE_NAMES}, got {self.profile!r}")
        check_sizes("10_toolrerank", self, ("subset_queries", "dev_queries", "transfer_queries"))
        if self.depth < 10:
            raise ValueError(f"10_toolrerank parameter depth must be >= 10 (Rerank-10 needs it), got {self.depth}")
        check_sizes("10_toolrerank", self, ("draw_subset_queries", "draw_dev_queries", "variant_subset_queries",
                                            "variant_dev_queries"))
        if self.transfer_corpus not in ("pool", "library"):
            raise ValueError(f"10_toolrerank parameter transfer_corpus must be 'pool' or 'library', got "
                             f"{self.transfer_corpus!r}")
        if len(set(self.draw_seeds)) != len(self.draw_seeds) or any(s < 0 for s in self.draw_seeds):
            raise ValueError(f"10_toolrerank parameter draw_seeds must be distinct seeds >= 0, got {self.draw_seeds}")
        overridden("10_toolrerank draw_setup", self.setup, dict(self.draw_setup), fixed=("profile", "seed"))
        from toolkit.toolrerank.variants import VARIANTS
        unknown = [v for v in self.variants if v not in VARIANTS]
        if unknown or len(set(self.variants)) != len(self.variants):
            raise ValueError(f"10_toolrerank parameter variants must be distinct names of {sorted(VARIANTS)}, "
                             f"got {list(self.variants)}")
        overridden("10_toolrerank variant_setup", self.setup, dict(self.variant_setup), fixed=("profile", "seed"))
        for name_, over in (("variant_setup", self.variant_setup), ("budget_setup", self.budget_setup)):
            not_ce = [k for k in over if not k.startswith("ce_")]
            if not_ce:
                raise ValueError(f"10_toolrerank {name_} may change reranker fields (ce_*) only, so it shares the "
                                 f"main DPR and classifier; got {not_ce}")
        overridden("10_toolrerank budget_setup", self.setup, dict(self.budget_setup), fixed=("profile", "seed"))
        if self.eval_seed < 0:
            raise ValueError(f"10_toolrerank parameter eval_seed must be >= 0, got {self.eval_seed}")


PROFILE_NAMES = ("smoke", "standard", "paper")
# the draws train each model for one epoch without dev selection, the reranker on one gold API and one hard negative
# per training query: ~1.5 h per draw here instead of ~5 h for the main models
STANDARD_DRAW_SETUP = {"de_epochs": 1, "de_select_on_dev": False, "ce_pos": 1, "ce_neg": 1, "ce_epochs": 1,
                       "ce_select_on_dev": False, "cl_epochs": 1, "cl_select_on_dev": False}
# the plumbing of the new variant kinds but mpnet's (its 420 MB checkpoint alone would double the smoke run); the
# first runs' start is the main smoke reranker already
SMOKE_VARIANTS = ("fine-tuned DPR + fresh head", "MiniLM + library random negatives")
# The first standard runs (their score caches are committed and replay): every query of the six mirror
# subsets, of the 600-query dev set sampled before the hold-out, and of the 765 StableToolBench queries over their
# pools; models at full strength, two held-out categories drawn at random; three draws. Reach it with
# first_run_config(); results/10_toolrerank/first_run_standard.json is its record.
FIRST_RUN_STANDARD = ExperimentConfig(profile="standard", setup=SETUPS["standard"], subset_queries=None,
                                      dev_queries=None, transfer_queries=None, draw_seeds=(0, 1, 2),
                                      draw_setup=STANDARD_DRAW_SETUP, draw_subset_queries=100, draw_dev_queries=200,
                                      draw_train_missing=False, variant_train_missing=False, alone_train_missing=False,
                                      budget_train_missing=False)
PROFILES = {
    # smoke: the plumbing in about two minutes on a cold cache -- reranker scoring (queries x depth pairs) is most of it
    "smoke": ExperimentConfig(profile="smoke", setup=SETUPS["smoke"], draw_seeds=(0, 1), draw_subset_queries=1,
                              draw_dev_queries=3, variants=SMOKE_VARIANTS, variant_subset_queries=1,
                              variant_dev_queries=1, alone_queries=1, alone_library=30,
                              budget_setup={"ce_queries": 32}),   # twice the smoke reranker's 16: the plumbing
    "paper": ExperimentConfig(profile="paper", setup=SETUPS["paper"], subset_queries=None, dev_queries=600,
                              transfer_queries=None),
}


# The fair test, the standard profile since its score caches landed (trained in the background by
# scripts/fair_toolrerank_chain.sh): the paper's seen-only dev set, the reranker variants
# at a screen budget (one epoch, one gold API and one hard negative for each of 2,000 training queries; evaluated on 25
# queries per subset and 50 dev queries), the reranker judged alone on 20 queries per subset, and the StableToolBench
# groups over the whole library. Sized from results/bench/toolrerank_bases.json (cores free, 6 steps): the
# cross-encoder trains at 8.1 (MiniLM) and 1.15 (mpnet) pairs/s and scores at 24.4 and 4.6 pairs/s; the DPR trained
# at 5.6 pairs/s in the first hour of the fair run (2026-11-29), not the 12.8 measured on 2026-11-25. Screen: about
# 15 min per MiniLM variant and 1.6 h for mpnet's.
# Unseen tests that can carry a claim: three held-out categories per draw instead of two, the draws'
# blocks of one fixed shuffle of the 11 eligible categories (category_draw="block"), so draws 0, 1, 2 hold out nine
# distinct categories (the main run holds out draw 0's block); the first standard draws shared Gaming.
# Budget: weights are never committed, so the whole chain -- DPR, classifier, variants, the main reranker, scoring --
# must fit one ~3 h session on 2 cores. Every main model trains at the draws' budget (STANDARD_DRAW_SETUP: one epoch,
# one gold API and one hard negative per training query), so the main run is comparable with the first runs' draws.
# Measured 2026-12-01 with the cores free (scripts/bench_toolrerank.py --steps 20): DPR 6.2 pairs/s, reranker 9.8
# pairs/s training and 38.8 scoring, classifier 17.8. The fair split's 8,764 training queries hold 23,367 positive
# pairs; batches without a repeated query or API cut them into 640 full batches of 32 and a tail of 1,316 batches
# of 2-7 (the popular APIs' leftovers), 1,956 steps in all: 56 min at 6.9 pairs/s (2026-12-02). The variants' screen
# (2,000 queries, one gold API and one hard negative each: 4,000 pairs, ~10 min; with one random library negative per
# positive 6,000 pairs, ~12 min) picks the reranker's start on its 50 dev queries; the main reranker *is* the chosen
# variant (ce_queries=2000 and its fields), the same model. At the screen's 4,000-6,000 pairs every variant's
# Rerank-10 stayed under the DPR (2026-12-02), where the first runs' draws, at ~19-22k pairs, matched it: the chosen
# start on every training query (~26k pairs with its random negatives, ~52 min) did not fit after the screen in
# that session: it is the budget control (budget_setup, toolkit.toolrerank.budget; scripts/train_toolrerank.py --budget).
FAIR_STANDARD = {**STANDARD_DRAW_SETUP, "ce_queries": 2000, "ce_random_neg": 1,  # the chosen variant
                 "subset_queries": 100, "dev_queries": 200,
                 "transfer_queries": 50, "dev_pool": "seen", "n_heldout_categories": 3, "category_draw": "block",
                 "variants": ("pretrained MiniLM + fresh head", "fine-tuned DPR + fresh head",
                              "pretrained mpnet + fresh head", "MiniLM + library random negatives"),
                 "variant_setup": {"ce_epochs": 1, "ce_pos": 1, "ce_neg": 1, "ce_queries": 2000},
                 "variant_subset_queries": 25, "variant_dev_queries": 50,
                 "alone_queries": 20, "transfer_corpus": "library",
                 "budget_setup": {"ce_queries": 0}}


def _with(base: ExperimentConfig, overrides: dict) -> ExperimentConfig:
    setup_names = {f.name for f in fields(Setup)} - {"profile"}
    own = {k: v for k, v in overrides.items() if k not in setup_names}
    setup_over = {k: v for k, v in overrides.items() if k in setup_names}
    try:
        cfg = overridden("10_toolrerank", base, own, fixed=("profile", "setup"))
    except ValueError as e:
        if str(e).startswith("10_toolrerank has no parameter"):
            raise ValueError(f"{e}; or a training Setup field: {', '.join(sorted(setup_names))}") from None
        raise
    if setup_over:
        cfg = replace(cfg, setup=overridden("10_toolrerank (Setup)", base.setup, setup_over))
    return cfg


# the standard profile: the fair test above on the first runs' base
PROFILES["standard"] = _with(FIRST_RUN_STANDARD, FAIR_STANDARD)


def config_for(profile: str, **overrides) -> ExperimentConfig:
    """The profile's configuration with ``overrides`` (experiment fields, or ``Setup`` fields)."""
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILE_NAMES}, got {profile!r}")
    return _with(PROFILES[profile], overrides)


def first_run_config(**overrides) -> ExperimentConfig:
    """The first standard runs' configuration (:data:`FIRST_RUN_STANDARD`; profile "standard") with ``overrides``."""
    return _with(FIRST_RUN_STANDARD, overrides)
