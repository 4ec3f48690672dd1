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


def seen_share_in_top(c: Candidates, method, k: int = 5) -> float:
    """Mean over queries of the share of a method's top ``k`` APIs whose tool is seen in training.

    On unseen-tool queries every such API is wrong; a reranker biased towards the tools it was trained
    on raises this share above the retriever's (the failure Adaptive Truncation is meant to contain)."""
    lists = method_lists(c, method)
    vals = [sum(c.tool_of(d) in c.seen for d in L[:k]) / len(L[:k]) for L in lists.values() if L]
    return float(np.mean(vals)) if vals else float("nan")


def reranker_scores_by_label(c: Candidates, depth: int = 50) -> dict[str, float]:
    """Mean reranker score of gold vs non-gold APIs among the retriever's top ``depth`` candidates,
    non-gold split into seen-tool and unseen-tool APIs (how well the reranker separates them)."""
    acc: dict[str, list[float]] = {"gold": [], "other (seen tool)": [], "other (unseen tool)": []}
    for q, rel in c.dataset.qrels.items():
        for d in c.ranked[q][:depth]:
            key = "gold" if d in rel else "other (seen tool)" if c.tool_of(d) in c.seen else "other (unseen tool)"
            acc[key].append(c.scores[q][d])
    return {k: float(np.mean(v)) if v else float("nan") for k, v in acc.items()}


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


CLAIM_KEYS = ("reranking", "toolrerank", "fig1a", "truncation", "har", "extended")


def claims(t3: Mapping, t5: Mapping, t6: Mapping, t7: Mapping, fig_rows: list[dict] | None = None,
           metric: str = "recall@5", per_query: Mapping | None = None, controls: Mapping | None = None,
           condition: str = "", alpha: float = 0.05) -> list[dict]:
    """The paper's claims checked on one set of tables (``{method: {subset/average: {metric: v}}}``, as
    the notebook builds them; the paper's own numbers in the same layout give the paper's column), each judged
    by :func:`toolkit.claims.record` (held / not held / within noise / pending):

    1. reranking helps (§4.2): every Rerank-m above DPR on the all-average;
    2. ToolRerank beats every Rerank-m (Table 3; tested against the best Rerank-m);
    3. fewer candidates for seen tools, more for unseen (Figure 1(a)): the best m is smaller for seen (by
       direction: a curve's best m has no per-query test);
    4. m_s < m_u beats equal and reversed (Table 5): best row of each relation;
    5. HAR helps when its algorithm matches the query type (Table 6): Algorithm 1 raises the
       single-tool average, Algorithm 2 raises the multi-tool one;
    6. the extended list helps only for unseen tools (Table 7): unseen-only above the best other row (a tie
       is within noise, never "best").
    Rows whose inputs are missing (e.g. the paper has no Figure 1(a) numbers) are left out.

    With ``per_query`` (``{row label: {subset: {qid: metric}}}``, filled by :func:`tables.table3` ... ``table7``)
    each comparison gets its paired randomization test on the average the claim reads
    (:func:`toolkit.significance.compared`, the mean of per-subset means); without it (the paper's printed numbers)
    a claim is judged by direction. ``controls``: claim key of :data:`CLAIM_KEYS` -> ``(control rows, conclusion)``
    (:func:`tables.claim_controls`), the ``explained_by`` of a claim not held; ``condition``: what differs from the
    paper (:data:`tables.CONDITION`)."""
    from toolkit.claims import record
    from toolkit.significance import compared

    from .splits import AVERAGES
    out = []
    controls = controls or {}

    def p_of(a, b, avg="all-avg"):
        """the paired test of rows a, b on the macro average ``avg``; None without per-query values"""
        if not per_query or a not in per_query or b not in per_query:
            return None
        groups = AVERAGES[avg]
        if not all(g in per_query[a] and g in per_query[b] for g in groups):
            return None
        return compared(f"{a} vs {b}", {g: per_query[a][g] for g in groups}, {g: per_query[b][g] for g in groups})

    def v(t, m, col="all-avg"):
        try:
            x = t[m][col][metric]
        except (KeyError, TypeError):
            return None
        return None if x is None or x != x else float(x)

    def row(key, claim, evidence, pairs, tests=(), unit=""):
        ctl, conclusion = controls.get(key, ((), ""))
        out.append(record(claim, tests, pairs, evidence, condition=condition, controls=ctl, conclusion=conclusion,
                          alpha=alpha, key=key, unit=unit))

    dpr, rr = v(t3, "DPR"), {m: v(t3, m) for m in ("Rerank-10", "Rerank-30", "Rerank-50")}
    tr = v(t3, "ToolRerank")
    if dpr is not None and None not in rr.values():
        row("reranking", "reranking helps (every Rerank-m > DPR, all-avg)",
            f"DPR {dpr:.3f}; " + ", ".join(f"{m} {x:.3f}" for m, x in rr.items()),
            [(x, dpr) for x in rr.values()], [p_of(m, "DPR") for m in rr])
        if tr is not None:
            top = max(rr, key=rr.get)
            row("toolrerank", "ToolRerank > every Rerank-m (all-avg)",
                f"ToolRerank {tr:.3f} vs best Rerank-m {max(rr.values()):.3f}", [(tr, rr[top])],
                [p_of("ToolRerank", top)])
    if fig_rows:
        best = {}
        for part in ("seen", "unseen"):
            pts = [(r["recall@5"], -int(r["m"])) for r in fig_rows if r["tools"] == part and r["m"] != "dpr"]
            if pts:
                best[part] = -max(pts)[1]
        if len(best) == 2:   # claimed: best m unseen > best m seen
            row("fig1a", "fewer candidates for seen tools, more for unseen (Fig. 1a: best m seen < best m unseen)",
                f"best m: seen {best['seen']}, unseen {best['unseen']}", [(best["unseen"], best["seen"])],
                unit="candidates")
    rel = {"<": [], "=": [], ">": []}
    for m in t5:
        ms, mu = (int(x) for x in m.split("m_s=")[1].split(")")[0].split(", m_u="))
        x = v(t5, m)
        if x is not None:
            rel["<" if ms < mu else "=" if ms == mu else ">"].append((x, m))
    if all(rel.values()):
        b = {k: max(x) for k, x in rel.items()}
        row("truncation", "m_s < m_u beats m_s = m_u and m_s > m_u (Table 5, best row of each)",
            "; ".join(f"m_s{k}m_u best {x:.3f} {m.split(' ', 1)[1]}" for k, (x, m) in b.items()),
            [(b["<"][0], b["="][0]), (b["<"][0], b[">"][0])],
            [p_of(b["<"][1], b["="][1]), p_of(b["<"][1], b[">"][1])])
    none_s, single_s = v(t6, "ToolRerank (none)", "single-avg"), v(t6, "ToolRerank (single)", "single-avg")
    none_m, multi_m = v(t6, "ToolRerank (none)", "multi-avg"), v(t6, "ToolRerank (multi)", "multi-avg")
    if None not in (none_s, single_s, none_m, multi_m):
        row("har", "HAR helps when it matches the query type (Alg. 1 on single-tool > none; Alg. 2 on multi-tool > none)",
            f"single-avg none {none_s:.3f} -> Alg. 1 {single_s:.3f}; multi-avg none {none_m:.3f} -> Alg. 2 {multi_m:.3f}",
            [(single_s, none_s), (multi_m, none_m)],
            [p_of("ToolRerank (single)", "ToolRerank (none)", "single-avg"),
             p_of("ToolRerank (multi)", "ToolRerank (none)", "multi-avg")])
    ext = {m: v(t7, m, "single-avg") for m in t7}
    if ext and None not in ext.values():
        claimed = next((m for m in ext if m.endswith("seen=no, unseen=yes)")), None)
        rival = max((m for m in ext if m != claimed), key=ext.get, default=None)
        if claimed and rival:     # the claimed row against the best other one: a tie is within noise
            row("extended", "extended list for unseen tools only is best (Table 7)",
                "; ".join(f"{m.split('(')[1].rstrip(')')}: {x:.3f}" for m, x in ext.items()),
                [(ext[claimed], ext[rival])], [p_of(claimed, rival, "single-avg")])
    return out


def verdict_of(c: Mapping) -> str:
    """A claim record's verdict in :data:`toolkit.claims.VERDICTS`; a run recorded before the shared claims rule (``holds``:
    yes / no by direction alone) reads as "held" / "not held" by direction, as it was judged."""
    v = c["here"] if "here" in c else c.get("holds", "n/a")
    return {"yes": "held", "no": "not held"}.get(v, v)       # old draws record yes / no under "here" too


def held_on_draws(claim_rows: list[dict], draws: list[Mapping]) -> list[dict]:
    """The claim rows with column ``draws held``: on how many of the recorded held-out draws (``draws``: their
    ``claims`` as ``{claim: verdict}``) the claim is held, "k/N" (an extra column of the verdict table)."""
    out = []
    for r in claim_rows:
        got = [verdict_of({"here": d["claims"][r["claim"]]}) for d in draws if r["claim"] in d.get("claims", {})]
        out.append({**r, "draws held": f"{sum(x == 'held' for x in got)}/{len(got)}" if got else "n/a"})
    return out


def table_values(frame) -> dict:
    """A paper frame of :func:`tables.paper_frame` (percent, columns (subset, metric)) as
    ``{method: {subset: {metric: fraction}}}``, the layout :func:`claims` reads."""
    out: dict = {}
    for method, r in frame.iterrows():
        for (col, met), x in r.items():
            out.setdefault(method, {}).setdefault(col, {})[met] = None if x != x else float(x) / 100
    return out


def convergence(stats: Mapping[str, dict], flat: float = 0.005) -> dict[str, str]:
    """Per trained stage with a learning curve (``stats[stage]["epoch_curve"]``, dev score after every epoch):
    the curve, the kept epoch, and whether the last epoch still gained more than ``flat`` (then the model
    is not shown converged: more epochs may help) — a sentence for the reading."""
    out = {}
    for stage, st in stats.items():
        curve = [c["dev"] for c in st.get("epoch_curve") or []]
        if not curve:
            continue
        path = " → ".join(f"{x:.3f}" for x in curve)
        if len(curve) == 1:
            verdict = "one epoch: convergence not measured"
        elif curve[-1] - curve[-2] > flat:
            verdict = f"still rising at the last epoch (+{curve[-1] - curve[-2]:.3f}): not shown converged"
        else:
            verdict = f"flat or falling at the last epoch ({curve[-1] - curve[-2]:+.3f}): converged within its budget"
        out[stage] = f"{path} (kept epoch {st.get('best_epoch') or len(curve)}; {verdict})"
    return out


def compare_runs(runs: Mapping[str, Mapping]) -> "pd.DataFrame":
    """Several recorded runs of notebook 10 side by side — each claim's verdict, the coverage premise of
    §4.2 (gold APIs in the DPR top 10, seen vs unseen, %) and the Recall@5 averages (%) of DPR, Rerank-10,
    Rerank-50 and ToolRerank — to tell whether a verdict follows the data or the training (an
    earlier, weaker training setup against the full-strength one). ``runs``: label -> a run's record with
    ``claims`` and ``cells`` as ``results/10_toolrerank/<name>.json`` stores them. A value a run lacks is
    NaN / "n/a"; ``changed`` says whether the runs disagree on a row."""
    import pandas as pd
    rows: dict[tuple[str, str], dict[str, object]] = {}
    for label, run in runs.items():
        for c in run.get("claims", []):
            rows.setdefault(("claim", c["claim"].split(" (")[0]), {})[label] = verdict_of(c)
        cells = {(c["table"], c["dataset"], c["method"], c["metric"]): c["value"] for c in run.get("cells", [])}
        for part in ("seen", "unseen"):
            v = cells.get(("s4.2", part, "DPR", "gold_in_top10"))
            rows.setdefault(("gold in DPR top 10 (%)", part), {})[label] = float("nan") if v is None else 100 * v
        for method in ("DPR", "Rerank-10", "Rerank-50", "ToolRerank"):
            for avg in ("seen-avg", "unseen-avg", "all-avg"):
                v = cells.get(("3", avg, method, "recall@5"))
                rows.setdefault((f"{method} Recall@5 (%)", avg), {})[label] = float("nan") if v is None else 100 * v
    df = pd.DataFrame.from_dict(rows, orient="index").reindex(columns=list(runs))
    df.index = pd.MultiIndex.from_tuples(df.index, names=["quantity", "row"])
    is_claim = df.index.get_level_values(0) == "claim"
    df.loc[is_claim] = df.loc[is_claim].fillna("n/a")
    def shown(v):   # what a reader compares: verdicts as they are, numbers at one decimal, NaN as "n/a"
        return v if not isinstance(v, float) else ("n/a" if v != v else round(v, 1))
    df["changed"] = ["yes" if len({shown(v) for v in r}) > 1 else "no" for r in df[list(runs)].itertuples(index=False)]
    return df


def claims_before_after(runs: Mapping[str, Mapping]) -> "pd.DataFrame":
    """Each claim under several recorded runs of notebook 10 (the first run, "MiniLM-head reranker",
    against the fair setup): per run its verdict on the main split with the p-values it rests on, and over the run's
    held-out draws how many hold it (``k/N draws``). ``runs``: label -> a results record (``claims``, ``draws`` as
    ``results/10_toolrerank/<name>.json`` stores them)."""
    import pandas as pd
    rows: dict[str, dict[str, str]] = {}
    for label, run in runs.items():
        for c in run.get("claims", []):
            r = rows.setdefault(c["claim"].split(" (")[0], {})
            r[f"{label}: verdict"] = verdict_of(c)
            r[f"{label}: p"] = c.get("p") or ""
        draws = run.get("draws") or []
        for d in draws:
            for claim, here in d.get("claims", {}).items():
                r = rows.setdefault(claim.split(" (")[0], {})
                k_n = r.get(f"{label}: draws", "0/0").split("/")
                r[f"{label}: draws"] = f"{int(k_n[0]) + (verdict_of({'here': here}) == 'held')}/{int(k_n[1]) + 1}"
    cols = [f"{label}: {part}" for label in runs for part in ("verdict", "p", "draws")]
    df = pd.DataFrame.from_dict(rows, orient="index").reindex(columns=cols).fillna("n/a")
    df.index.name = "claim"
    return df


def fig1a_before_after(runs: Mapping[str, Mapping], tools: str = "unseen") -> "pd.DataFrame":
    """Figure 1(a)'s curve for ``tools`` (seen or unseen), Recall@5 in percent by number of candidates m (``dpr``:
    no reranker), one column per recorded run (its ``fig1a`` rows)."""
    import pandas as pd
    cols = {label: {str(r["m"]): 100 * r["recall@5"] for r in run.get("fig1a", []) if r["tools"] == tools}
            for label, run in runs.items()}
    df = pd.DataFrame(cols)
    order = sorted((m for m in df.index if m != "dpr"), key=int) + [m for m in df.index if m == "dpr"]
    df = df.reindex(order)
    df.index.name = "m"
    return df
