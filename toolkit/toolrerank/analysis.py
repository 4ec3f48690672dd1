"""Coverage statistics (§4.2, §4.4), Figure 1(a) curves, the Table 4 proxy and case studies (Figures 3-4)."""
from __future__ import annotations

import random
from typing import Mapping

import numpy as np

from toolkit.metrics import evaluate

from .pipeline import Candidates, ToolRerankConfig, as_run, method_lists
from .truncation import adaptive_truncate


def gold_in_top(cands: Mapping[str, Candidates], k: int = 10) -> float:
    """Share of all gold APIs of the given sets (pooled) that the retriever ranks in its top ``k``."""
    hit = tot = 0
    for c in cands.values():
        for q, rel in c.dataset.qrels.items():
            top = set(c.ranked[q][:k])
            for d in rel:
                tot += 1
                hit += d in top
    return hit / tot if tot else float("nan")


def gold_outside_truncation(cands: Mapping[str, Candidates], cfg: ToolRerankConfig) -> dict[str, float]:
    """Share of gold APIs of seen tools / of unseen tools that are not in T (the truncated list)."""
    out = {"seen": [0, 0], "unseen": [0, 0]}
    for c in cands.values():
        for q, rel in c.dataset.qrels.items():
            T = set(adaptive_truncate(c.ranked[q], c.tool_of, c.seen, cfg.m_s, cfg.m_u))
            for d in rel:
                key = "seen" if c.tool_of(d) in c.seen else "unseen"
                out[key][0] += d not in T
                out[key][1] += 1
    return {k: (a / b if b else float("nan")) for k, (a, b) in out.items()} | \
        {f"n_{k}": b for k, (_, b) in out.items()}


def outside_T_sharing_tool(cands: Mapping[str, Candidates], cfg: ToolRerankConfig) -> int:
    """Gold APIs outside T whose tool has an API in T (what the extended list could still find)."""
    n = 0
    for c in cands.values():
        for q, rel in c.dataset.qrels.items():
            T = adaptive_truncate(c.ranked[q], c.tool_of, c.seen, cfg.m_s, cfg.m_u)
            tools = {c.tool_of(d) for d in T}
            n += sum(d not in T and c.tool_of(d) in tools for d in rel)
    return n


def all_gold_in_top(c: Candidates, method, k: int = 5) -> float:
    """Table 4 proxy: share of queries whose gold APIs are all in the top ``k``."""
    lists = method_lists(c, method)
    vals = [set(c.dataset.qrels[q]) <= set(L[:k]) for q, L in lists.items()]
    return float(np.mean(vals)) if vals else float("nan")


def shuffled_ndcg_drop(c: Candidates, cfg: ToolRerankConfig, k: int = 5, seed: int = 0, repeats: int = 5) -> float:
    """NDCG@k of ToolRerank minus NDCG@k with its top k shuffled (§4.4), averaged over ``repeats`` shuffles."""
    lists = method_lists(c, cfg)
    qrels = {q: c.dataset.qrels[q] for q in lists}
    base = evaluate(as_run(lists), qrels, [f"ndcg@{k}"])[f"ndcg@{k}"]
    rng = random.Random(seed)
    drops = []
    for _ in range(repeats):
        shuf = {}
        for q, L in lists.items():
            top = list(L[:k])
            rng.shuffle(top)
            shuf[q] = top + list(L[k:])
        drops.append(base - evaluate(as_run(shuf), qrels, [f"ndcg@{k}"])[f"ndcg@{k}"])
    return float(np.mean(drops))


def recall_vs_candidates(cands: Mapping[str, Candidates], ms: list[int], k: int = 5) -> dict[str, dict[int, float]]:
    """Figure 1(a): Recall@k of Rerank-m per set, for every m; key 'dpr' = no reranker."""
    out = {}
    for name, c in cands.items():
        row = {m: evaluate(as_run(method_lists(c, f"rerank-{m}")), c.dataset.qrels, [f"recall@{k}"])[f"recall@{k}"]
               for m in ms}
        row["dpr"] = evaluate(as_run(method_lists(c, "dpr")), c.dataset.qrels, [f"recall@{k}"])[f"recall@{k}"]
        out[name] = row
    return out


def _label(c: Candidates, d: str) -> str:
    doc = c.dataset.corpus[d]
    return f"Tool: {doc.tool}, API: {doc.api}"


def format_case(c: Candidates, q: str, baseline: str, cfg: ToolRerankConfig, top: int = 5,
                baseline_name: str = "Rerank-50") -> str:
    """A case study in the style of Figures 3-4: query, gold APIs, both lists (gold marked with *),
    and the baseline ranks of gold APIs that fall below ``top``."""
    gold = c.dataset.qrels[q]
    base = method_lists(c, baseline, [q])[q]
    ours = method_lists(c, cfg, [q])[q]
    lines = [f"Query: {c.dataset.queries[q].text}", "Ground-truth APIs:"]
    lines += [f"{i}. {_label(c, d)}" for i, d in enumerate(gold, 1)]
    for name, L in [(baseline_name, base), ("ToolRerank", ours)]:
        lines.append(f"Reranking results ({name}):")
        lines += [f"{i}. {'*' if d in gold else ' '} {_label(c, d)}" for i, d in enumerate(L[:top], 1)]
        below = [(L.index(d) + 1, d) for d in gold if d in L[top:]]
        if below:
            lines.append("   ...")
            lines += [f"{r}. * {_label(c, d)}" for r, d in sorted(below)]
        missing = [d for d in gold if d not in L]
        if missing:
            lines.append(f"   (not in the list: {', '.join(_label(c, d) for d in missing)})")
    return "\n".join(lines)


def find_case(c: Candidates, baseline: str, cfg: ToolRerankConfig, top: int = 5, single: bool | None = None):
    """A query where ToolRerank moves a gold API from below ``top`` (baseline) into the top ``top``,
    the largest such move first; None if there is none."""
    best = None
    for q, gold in c.dataset.qrels.items():
        if single is not None and c.is_single(q, "oracle") != single:
            continue
        base = method_lists(c, baseline, [q])[q]
        ours = method_lists(c, cfg, [q])[q]
        for d in gold:
            rb = base.index(d) + 1 if d in base else 10 ** 6
            ro = ours.index(d) + 1 if d in ours else 10 ** 6
            lost = sum(1 for g in gold if g in base[:top] and g not in ours[:top])
            if ro <= top < rb and not lost:
                key = (rb - ro, q)
                if best is None or key > best[0]:
                    best = (key, q, d, rb, ro)
    return None if best is None else {"qid": best[1], "doc": best[2], "baseline_rank": min(best[3], 10 ** 6),
                                      "toolrerank_rank": best[4]}
