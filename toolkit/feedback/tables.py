"""Notebook ``30_feedback``'s tables, one function each (Xu et al. 2024, Tables 1-3), and the cells
they record under the paper's keys (``data/paper_numbers/iterative_feedback.yaml``)."""
from __future__ import annotations

import pandas as pd

from toolkit.feedback.data import IN_DOMAIN, OUT_OF_DOMAIN, UNAVAILABLE

PAPER = "iterative_feedback"
KEY = {**IN_DOMAIN, **OUT_OF_DOMAIN, "T-Eval": "teval"}       # column label -> the YAML's dataset key


def table1(train_queries: int, train_apis: int, tests: dict) -> pd.DataFrame:
    """Our statistics: # instructions and # tool set per set (T-Eval: tools only, its queries are not public)."""
    rows = [{"set": "Training: ToolLens train (in place of ToolBench train)", "dataset": "toolbench-all",
             "method": "train", "queries": train_queries, "tools": train_apis}]
    for label, ds in tests.items():
        rows.append({"set": f"{'In' if label in IN_DOMAIN else 'Out-of'}-domain: {label}", "dataset": KEY[label],
                     "method": "test", "queries": len(ds.queries), "tools": len(ds.corpus)})
    for label, why in UNAVAILABLE.items():
        rows.append({"set": f"Out-of-domain: {label}", "dataset": KEY[label], "method": "test", "queries": None,
                     "tools": 50, "note": why})
    return pd.DataFrame(rows)


def record_table1(rec, t1: pd.DataFrame) -> None:
    for r in t1.itertuples():
        for metric in ("queries", "tools"):
            v = getattr(r, metric)
            if v is not None and not pd.isna(v):
                rec.add(paper=PAPER, table="1", dataset=r.dataset, method=r.method, metric=metric, value=float(v),
                        note=getattr(r, "note", "") if isinstance(getattr(r, "note", ""), str) else "",
                        ours_only=(r.method, metric) == ("train", "tools"))     # the paper prints no training tool set


METRICS = ["ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10"]


def baseline_values(tests: dict, retrievers: dict, cfg, k: int = 100, llm_qids=None) -> pd.DataFrame:
    """Tables 2/3's baselines: each retriever (``{method: build_retriever(...)}``) on each test set
    (``cfg.baseline_queries`` of it, nested sample), NDCG@1/3/5/10 with ToolBench's tie handling; where
    the LLM methods run on a sample, the same retriever on that sample too (``<method> (LLM sample)``,
    our own rows; ``llm_qids(label)`` gives that sample, default the set's nested sample of
    ``cfg.sample_size``). Columns set, method, metric, n, value, ours_only."""
    from toolkit.metrics import evaluate
    from toolkit.retrieval import retrieve
    rows = []
    for method, retriever in retrievers.items():
        for label, full in tests.items():
            ds = full.nested_sample(cfg.baseline_queries, cfg.sample_seed)
            per_q = evaluate(retrieve(ds, retriever, k=k), ds.qrels, METRICS, per_query=True, ties="sklearn")
            sample = llm_qids(label) if llm_qids else full.nested_sample(cfg.sample_size(label), cfg.sample_seed).queries
            sample = set(sample) & set(ds.queries)
            for metric, vals in per_q.items():
                rows.append({"set": label, "method": method, "metric": metric, "n": len(vals),
                             "value": sum(vals.values()) / len(vals), "ours_only": False})
                if 0 < len(sample) < len(ds.queries):
                    sub = [vals[q] for q in sample]
                    rows.append({"set": label, "method": f"{method} (LLM sample)", "metric": metric, "n": len(sub),
                                 "value": sum(sub) / len(sub), "ours_only": True})
    return pd.DataFrame(rows)


def retrieval_table(values: pd.DataFrame, metrics: list[str]) -> pd.DataFrame:
    """Tables 2/3: method rows x (set, metric) columns, ours (x100, as the paper prints)."""
    v = values[values.metric.isin(metrics)].astype({"value": float})
    w = v.pivot_table(index="method", columns=["set", "metric"], values="value", sort=False) * 100
    return w.round(2)


def improve(values: pd.DataFrame, ours: str = "Ours", best_previous: str = "ToolRetriever") -> pd.DataFrame:
    """'% improve': the relative improvement of ours over the best previous method, per cell."""
    w = values.pivot_table(index=["set", "metric"], columns="method", values="value", sort=False)
    if ours not in w or best_previous not in w:
        return pd.DataFrame(columns=["set", "metric", "% improve"])
    return ((w[ours] / w[best_previous] - 1) * 100).rename("% improve").reset_index()


def record_retrieval(rec, values: pd.DataFrame, table: str, notes: dict[str, str] | None = None) -> None:
    """Cells of Tables 2/3 (our values as fractions); rows on an LLM sample carry its size in the note."""
    notes = notes or {}
    for r in values.itertuples():
        note = notes.get(r.method) or (r.note if isinstance(getattr(r, "note", None), str) else "")
        rec.add(paper=PAPER, table=table, dataset=KEY[r.set], method=r.method, metric=r.metric, value=r.value,
                n_queries=int(r.n), note=note, ours_only=bool(getattr(r, "ours_only", False)))


def sample_notes(values: pd.DataFrame, tests: dict, cfg) -> list[str]:
    """Per row of :func:`toolkit.feedback.experiment.collect`: what produced it and on how many of the
    set's queries (the LLM rows run on seeded samples, said in every cell's note)."""
    out = []
    for r in values.itertuples():
        full = len(tests[r.set].queries)
        size = f"{r.n} of {full} queries" + (" (seeded sample)" if r.n < full else "")
        if r.method.startswith("ToolRetriever"):
            what = f"{cfg.base} fine-tuned on ToolLens train (warm-up)"
        else:
            what = f"{cfg.llm} feedback, K={cfg.feedback.k}, T={cfg.training.rounds}, retriever {cfg.base}"
        out.append(f"{what}; {size}")
    return out


def condition_table(values: pd.DataFrame, table: str, metrics: list[str]) -> pd.DataFrame:
    """One of Tables 4-7: method rows x metric columns, ours x100 (seconds as they are), with n."""
    v = values[values.table == table]
    w = v.pivot_table(index="method", columns="metric", values="value", sort=False)
    cols = [m for m in metrics if m in w]
    w = w[cols].apply(lambda c: c if c.name == "seconds_per_instruction" else c * 100).round(2)
    return w.join(v.groupby("method", sort=False)["n"].first())
