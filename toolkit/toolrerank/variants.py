"""Reranker variants: does the reranker lose to the retriever because of where it starts?

Our first runs started the reranker from the same checkpoint as the DPR (all-MiniLM-L6-v2) with a fresh one-logit
head: the DPR inherits retrieval pretraining, the cross-encoder none. Each variant changes only the reranker
(:data:`VARIANTS`: Setup fields), trains at the screen budget (``ExperimentConfig.variant_setup``) on the main
run's split, so all share its DPR, and is evaluated like a held-out draw on ``variant_subset_queries`` per subset (:func:`toolkit.toolrerank.draws.run_config`:
the grid search on its own dev sample, Recall@5 of DPR, Rerank-10/30/50 and ToolRerank on the draws' sample sizes).
The variant with the best Recall@5 of Rerank-10 on its dev sample (the reranker over the DPR top 10) is *the*
reranker: the standard profile trains its main reranker at the screen budget, so the main run adopts the chosen
variant's fields and reuses its model.

Which start is the paper's? ToolRerank starts the DPR, the reranker and the classifier from one plain language model
(bert-base-uncased), so neither the DPR nor the reranker has retrieval pretraining. "pretrained MiniLM + fresh head"
keeps its one shared checkpoint, but that checkpoint is a sentence-embedding model, a head start for the DPR alone;
"fine-tuned DPR + fresh head" gives the reranker the same retrieval training as the DPR, which the paper's does not
have either. Neither equals the paper; the first is closer in recipe, the second in the balance between the two models.
"""
from __future__ import annotations

from dataclasses import replace

#: variant name -> the Setup fields it sets (the reranker's only). Each sets all three, so a variant is the same
#: reranker whichever variant the main run adopted (the main Setup may itself start the reranker from the DPR)
_START = {"ce_init": "base", "ce_base": "", "ce_random_neg": 0}
VARIANTS = {
    "pretrained MiniLM + fresh head": dict(_START),                            # our first runs
    "fine-tuned DPR + fresh head": {**_START, "ce_init": "dpr"},
    "pretrained mpnet + fresh head": {**_START, "ce_base": "mpnet"},
    "MiniLM + library random negatives": {**_START, "ce_random_neg": 1},
}


def slug(name: str) -> str:
    return "variant-" + "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-").replace("--", "-")


def variant_config(cfg, name: str):
    """The :class:`~toolkit.toolrerank.config.ExperimentConfig` of one variant: the main Setup with the screen budget
    and the variant's fields, the variants' evaluation sizes, no draws or variants of its own."""
    if name not in VARIANTS:
        raise ValueError(f"unknown reranker variant {name!r}; one of {sorted(VARIANTS)}")
    return replace(cfg, setup=replace(cfg.setup, **dict(cfg.variant_setup), **VARIANTS[name]),
                   subset_queries=cfg.variant_subset_queries, dev_queries=cfg.variant_dev_queries, draw_seeds=(),
                   variants=())


def variant_command(cfg, name: str) -> str:
    return f"python scripts/train_toolrerank.py --profile {cfg.profile} --variant '{name}'"


def run_variant(cfg, name: str, train_missing: bool = False, log=None):
    """One variant's :class:`~toolkit.toolrerank.draws.Draw` (seed = the main seed): replayed from its score cache,
    or trained and scored (``train_missing``), else None."""
    from . import score_cache
    from .draws import run_config
    vcfg = variant_config(cfg, name)
    return run_config(vcfg, lambda split: score_cache.cache_path(vcfg, split, role=slug(name)), vcfg.setup.seed,
                      train_missing, log, {"variant": name})


def dev_score(draw) -> float:
    """The selection criterion: Recall@5 of Rerank-10 (the reranker over the DPR top 10) on the variant's dev sample."""
    return float(draw.dev_recall.get("Rerank-10", float("nan")))


def describe(cfg, name: str) -> dict:
    """The variant's reranker start and negatives, from its configuration."""
    s = variant_config(cfg, name).setup
    return {"init": "the fine-tuned DPR" if s.ce_init == "dpr" else (s.ce_base or s.base),
            "negatives": (f"hard + {s.ce_random_neg} random library API per positive" if s.ce_random_neg
                          else "hard only")}


def variant_table(cfg, results: dict):
    """One row per variant: its start, dev Recall@5 of Rerank-10 (the selection; and after training on the training's
    own dev sample, when it selected an epoch), Recall@5 averages of DPR, Rerank-10 and ToolRerank on the test sample,
    training pairs and minutes; ``chosen`` marks the best dev score."""
    import pandas as pd
    rows = []
    for name, d in results.items():
        ce = d.training.get("reranker") or {}
        rows.append({"variant": name, **describe(cfg, name), "train pairs": ce.get("train_pairs"),
                     "train min": round((ce.get("seconds") or 0) / 60, 1),
                     "dev Rerank-10 R@5": 100 * dev_score(d),
                     "dev R@5 in training": 100 * ce["best_dev"] if "best_dev" in ce else float("nan"),
                     **{f"{m} {a}": 100 * d.recall[m][a] for m in ("DPR", "Rerank-10", "ToolRerank") if m in d.recall
                        for a in ("seen-avg", "unseen-avg")}})
    df = pd.DataFrame(rows).set_index("variant")
    if len(df):
        df["chosen"] = df["dev Rerank-10 R@5"] == df["dev Rerank-10 R@5"].max()
    return df


def record_variants(rec, df) -> None:
    """Our own cells (table ``variants``): each variant's dev score and test Recall@5 averages (fractions)."""
    for name, row in df.iterrows():
        for col, value in row.items():
            if col in ("init", "negatives", "chosen", "train pairs", "train min") or value != value:   # costs vary by run
                continue
            rec.add(paper="toolrerank", table="variants", dataset="toollens", method=name,
                    metric=col.replace(" ", "_"), value=float(value) / 100,
                    ours_only=True, note=f"reranker variant ({row['init']}; {row['negatives']})"
                                         + ("; chosen on dev" if row.get("chosen") else ""))
