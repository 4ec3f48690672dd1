"""Notebook 30's reading: prose whose numbers are looked up in the run (moved out of the notebook, so the notebook
shows one call and its prose, in Lab and in any renderer)."""
from __future__ import annotations

import pandas as pd

from toolkit.feedback import controls as C
from toolkit.feedback import experiment as X
from toolkit.feedback import tables as T
from toolkit.report import Reading
from toolkit.retrieval.models import resolve_model
from toolkit.significance import compared, p_label, p_text


def reading(*, cfg, profile: str, rec, tests: dict, train, values: pd.DataFrame, llm_values: pd.DataFrame,
            extra: dict, pending: list, caps: pd.DataFrame, condition_rounds: pd.DataFrame, claims: pd.DataFrame,
            offline: pd.DataFrame, offline_test, offline_moves, audit: pd.DataFrame, effect: pd.DataFrame,
            moves: pd.DataFrame) -> str:
    """The reading of notebook 30 (markdown): the baselines per set, fine-tuning, feedback against the fine-tuned
    retriever, rounds, what explains the gap, the LLM-scale rows, ablations, training or loop, base models,
    embedding sizes, the claims, the offline feedback, stopping, where the change comes from, what is pending.
    Records the fine-tuning tests in ``rec.extra["fine_tuning_tests"]``."""
    v = values[~values.ours_only].set_index(["set", "method", "metric"]).value
    lines = [f"- **{label}** NDCG@5: BM25 {v[label, 'BM25', 'ndcg@5']:.3f}, off-the-shelf {cfg.base} "
             f"{v[label, 'Ada Embedding', 'ndcg@5']:.3f} "
             f"(n = {len(tests[label].nested_sample(cfg.baseline_queries, cfg.sample_seed).queries)})" for label in tests]
    R = Reading.from_cells(rec.cells, T.PAPER, tail=("ndcg@5",))
    if "ToolRetriever" in set(llm_values.method):
        def per_query(frame, label, method):
            r = frame[(frame.set == label) & (frame.method == method) & (frame.metric == "ndcg@5")]
            return r.per_query.iloc[0] if len(r) else None
        finetune = {label: compared(f"{label}", per_query(llm_values, label, "ToolRetriever"),
                                    per_query(values, label, "Ada Embedding"))
                    for label in ("I1", "I2", "I3", "UltraTool") if per_query(llm_values, label, "ToolRetriever")}
        rec.extra["fine_tuning_tests"] = finetune
        lines.append(R.format(
            "- **Fine-tuning on ToolLens** (ToolRetriever: the warm-up dual encoder on the whole sets, beside the "
            f"off-the-shelf {cfg.base}, NDCG@5; paper ToolRetriever / Ada): I1 {{2|toolbench-i1|ToolRetriever}} vs "
            "{2|toolbench-i1|Ada Embedding} ({paper:2|toolbench-i1|ToolRetriever} / {paper:2|toolbench-i1|Ada Embedding}), "
            "I2 {2|toolbench-i2|ToolRetriever} vs {2|toolbench-i2|Ada Embedding} ({paper:2|toolbench-i2|ToolRetriever} / "
            "{paper:2|toolbench-i2|Ada Embedding}), I3 {2|toolbench-i3|ToolRetriever} vs {2|toolbench-i3|Ada Embedding} "
            "({paper:2|toolbench-i3|ToolRetriever} / {paper:2|toolbench-i3|Ada Embedding}), UltraTool "
            "{3|ultratool|ToolRetriever} vs {3|ultratool|Ada Embedding} ({paper:3|ultratool|ToolRetriever} / "
            "{paper:3|ultratool|Ada Embedding}). Paired randomization tests of the difference: "
            + p_text([{**t, "comparison": g} for g, t in finetune.items()], sep=", ")
            + ". The paper trains on ToolBench's own training instructions; ours on "
            f"ToolLens ({len(train.corpus):,} APIs), while I1-I3 search {len(tests['I1'].corpus):,} APIs here."))
    if {"Ours", "ToolRetriever"} <= set(llm_values.method):
        def same_queries(label):
            """ToolRetriever's row on Ours' queries: the LLM sample's, unless that sample is the whole set"""
            m = "ToolRetriever (LLM sample)"
            return m if ((llm_values.set == label) & (llm_values.method == m)).any() else "ToolRetriever"
        lines.append(R.format(
            "- **Feedback vs the fine-tuned retriever** (NDCG@5 on the LLM samples, Ours — the fair LLM step, the run "
            "Tables 2-3 lead with and notebook 50 reads; the first, capped run is the row 'Ours (first run)' — and its "
            "relative change over ToolRetriever, n queries): I1 {2|toolbench-i1|Ours} ({2|toolbench-i1|% improve!+.1%}, n = "
            "{2|toolbench-i1|Ours|n}; paper {paper:2|toolbench-i1|% improve!+.1%}), I2 {2|toolbench-i2|Ours} "
            "({2|toolbench-i2|% improve!+.1%}, n = {2|toolbench-i2|Ours|n}; paper {paper:2|toolbench-i2|% improve!+.1%}), "
            "I3 {2|toolbench-i3|Ours} ({2|toolbench-i3|% improve!+.1%}, n = {2|toolbench-i3|Ours|n}), "
            "UltraTool {3|ultratool|Ours} ({3|ultratool|% improve!+.1%}, n = {3|ultratool|Ours|n})."))
        lines.append(R.format(
            "- **Rounds** (Table 5, I2, n = {5|toolbench-i2|Ours (T=3)|n}): NDCG@5 {5|toolbench-i2|Ours (T=1)} / {5|toolbench-i2|Ours (T=2)} / "
            "{5|toolbench-i2|Ours (T=3)} after 1 / 2 / 3 rounds, at "
            "{5|toolbench-i2|Ours (T=1)|seconds_per_instruction!.1f} / {5|toolbench-i2|Ours (T=2)|seconds_per_instruction!.1f}"
            " / {5|toolbench-i2|Ours (T=3)|seconds_per_instruction!.1f} LLM seconds per instruction (paper "
            "{paper:5|toolbench-i2|Ours (T=1)} / {paper:5|toolbench-i2|Ours (T=2)} / {paper:5|toolbench-i2|Ours (T=3)}).")
            + " Instructions refined 0 / 1 / 2 / 3 times: "
            + " / ".join(str(n) for n in extra.get("stopped_after_round", {}).values())
            + "; the refinement changed the text of " + " / ".join(f"{x:.0%}" for x in extra["rewritten_by_round"].values())
            + R.format(" of the instructions at rounds 1 / 2 / 3. Before any feedback (T=0) the trained retriever scores "
                       f"{{5|toolbench-i2|Ours (T=0)}} against ToolRetriever's {{2|toolbench-i2|{same_queries('I2')}}} on "
                       "the same queries; ending the loop at an unchanged refinement as at \"N/A\" gives "
                       f"{{5|toolbench-i2|{X.UNCHANGED_STOPS.format(T=cfg.training.rounds)}}} at "
                       f"{{5|toolbench-i2|{X.UNCHANGED_STOPS.format(T=cfg.training.rounds)}|seconds_per_instruction!.1f}} "
                       "LLM seconds per instruction."))

        def rows_of(table, methods, name=lambda m: m):
            """'name ours (paper p)' for each row of ``table`` with a value here; the others listed as pending"""
            have = set(llm_values[llm_values.table == table].method)
            done = [f"{name(m)} {{{table}|toolbench-i2|{m}}} (n = {{{table}|toolbench-i2|{m}|n}}; paper "
                    f"{{paper:{table}|toolbench-i2|{m}}})" for m in methods if m in have]
            todo = [name(m) for m in methods if m not in have]
            return R.format("; ".join(done + ([f"pending: {', '.join(todo)}"] if todo else [])))
        if rec.extra.get("decomposition"):
            lines.append("- **What explains the gap** (NDCG@5 on the LLM samples, paired differences with p; the controls "
                         "above): " + C.decomposition_text(rec.extra["decomposition"]) + ". The oracle's refinement "
                         "names the gold APIs, so its gain bounds what feedback can give the same retriever and loop: "
                         "a positive gain says the loop and the retrieval are sound and the LLM's feedback is what falls "
                         "short.")
        if rec.extra.get("fair_decomposition"):
            lines.append("- **The same decomposition under the fair LLM step** (Ours and its controls retrained on the "
                         "uncapped training feedback; on the instructions the fair Ours has traced so far): "
                         + C.decomposition_text(rec.extra["fair_decomposition"]) + ".")
        if rec.extra.get("llm_scale"):
            fair_caps = caps[caps.setting == "fair"].groupby("llm")["share at the cap"].max()
            lines.append(f"- **Is the LLM the limit?** (the loop on ToolRetriever with each LLM, I2 sample of "
                         f"{cfg.scale_queries}, NDCG@5, paired differences on the instructions both rows traced): "
                         + C.scale_text(rec.extra["llm_scale"]) + ". Largest share of a step's answers at its cap: "
                         + ", ".join(f"{m} {x:.1%}" for m, x in fair_caps.items()) + ". Refinements that are not "
                         "refined instructions: "
                         + ", ".join(f"{e['row']} {e['not a refinement']} of {e['refinements']} ("
                                     f"{e['repeats the request']} repeat step 4's request, {e['a bare yes/no']} a bare "
                                     f"yes/no, {e['a refusal']} refuse; NDCG@5 {e['ndcg@5']:.3f}, "
                                     f"{e['ndcg@5 had they stopped']:.3f} had they stopped, {p_label(e['p'])})"
                                     for e in rec.extra["non_refinements"]) + ".")
        lines.append("- **Ablations** (Table 4, I2 sample, NDCG@5): "
                     + rows_of("4", ["Ours", *X.CONDITIONS["4"]]) + ".")
        if len(condition_rounds):
            lines.append(R.format("- **Training or loop** (NDCG@5 at round 0, before any feedback → after the loop; the "
                                  "warm-up ToolRetriever, before any training on feedback, scores "
                                  "{6|toolbench-i2|ToolRetriever (BERT-based)} on the same queries): ")
                         + T.condition_rounds_text(condition_rounds, cfg.training.rounds))
        base_tests = [t for who in ("ToolRetriever", "Ours")
                      if (t := T.paired_test(llm_values, "6", "I2", f"{who} (RoBERTa-based)", f"{who} (BERT-based)"))]
        lines.append("- **Base models** (Table 6, I2 sample, NDCG@5; MiniLM in place of BERT-base, mpnet of "
                     "RoBERTa-base): " + rows_of("6", [f"{who} ({base}-based)" for base in ("BERT", "RoBERTa")
                                                        for who in ("ToolRetriever", "Ours")])
                     + (f". RoBERTa-class vs BERT-class, same method: {p_text(base_tests)}" if base_tests else "") + ".")
        lines.append(f"- **Embedding sizes** (Table 7, I2 sample, NDCG@5; a linear projection of {cfg.base}'s "
                     f"{resolve_model(cfg.base)[1]['dim']}-dimensional embedding): " + rows_of("7", list(X.CONDITIONS["7"]),
                                                           lambda m: m.split("=")[1].rstrip(")")) + ".")
    for setup, judged in claims.groupby("setup", sort=False):
        decided = judged[judged.here != "pending"]
        lines.append(f"- **Claims, {setup}** ({len(decided)} of {len(judged)} decided; table above)"
                     + (", here vs the paper's own tables: " + "; ".join(f"{c.claim}: {c.here} vs {c.paper}"
                                                                          + (f" ({c.p})" if c.p else "")
                                                                          for c in decided.itertuples())
                        if len(decided) else ": every verdict waits for its traces (the commands above)") + ".")
    if offline_test is not None:
        steps = [f"ToolRetriever + feedback (round {t})" for t in range(cfg.training.rounds + 1)]
        lines.append(R.format(
            "- **Offline feedback alone** (§4.3; ToolLens train, the warm-up retriever on its own training instructions, "
            "NDCG@5, n = {n}): " + " → ".join(f"{{s4.3|toollens-train|{m}}}" for m in steps) + " from round 0 to "
            f"{cfg.training.rounds} ({{d!+.3f}}, {p_text([offline_test])}); instructions changed by the refinement at rounds "
            f"1-{cfg.training.rounds}: " + " / ".join(f"{{s4.3|toollens-train|{m}|rewritten!.0%}}" for m in steps[1:])
            + f"; per instruction, round {cfg.training.rounds} is better than round 0 on {offline_moves['better']}, equal on "
            f"{offline_moves['equal']} and worse on {offline_moves['worse']}.",
            n=int(offline.n.iloc[0]), d=offline_test["diff"]))
    if len(audit):
        a = audit.set_index("set")
        lines.append("- **Stopping** (round 1): the LLM asked for no refinement on "
                     + ", ".join(f"{g} {a.at[g, 'N/A at round 1']:.0%}" for g in a.index)
                     + " of the instructions; the round-0 top " + str(cfg.feedback.k) + " held every gold API for "
                     + ", ".join(f"{g} {a.at[g, f'all gold in top {cfg.feedback.k}']:.0%}" for g in a.index)
                     + "; it stopped with a gold API missing on "
                     + ", ".join(f"{g} {a.at[g, 'N/A with gold missing']:.0%}" for g in a.index) + "."
                     + (" Asked whether all goals are solved, it said yes on "
                        + ", ".join(f"{g} {a.at[g, 'Q1 yes']:.0%}" for g in a.index)
                        + ", and whether the appropriate tools rank highest, on "
                        + ", ".join(f"{g} {a.at[g, 'Q2 yes']:.0%}" for g in a.index) + "; both yes (the rule's own "
                        "N/A; the rest of the stops are refinements that returned the instruction unchanged) on "
                        + ", ".join(f"{g} {a.at[g, 'both yes']:.0%}" for g in a.index) + "."
                        if "Q1 yes" in a else ""))
    if len(effect):
        e, T_ = effect.set_index(["set", "instructions"]), cfg.training.rounds
        kinds = (("text changed", "changed text"), ("text never changed", "same text"), ("N/A at round 1", "N/A"))

        def words(x):
            return "none" if pd.isna(x) else f"{x:+g}"
        lines.append(f"- **Where the change comes from** (NDCG@5, round 0 → {T_}, by what the LLM did with the text): "
                     + "; ".join(f"{g} ({e.loc[g].contribution.sum():+.3f}, of which {e.at[(g, 'text changed'), 'contribution']:+.3f}"
                                 " from changed text): " + ", ".join(
                         f"{name} n = {e.at[(g, kind), 'n']} ({e.at[(g, kind), 'share']:.0%}) "
                         f"{e.at[(g, kind), 'round 0']:.3f} → {e.at[(g, kind), f'round {T_}']:.3f}"
                         for kind, name in kinds if e.at[(g, kind), "n"]) for g in e.index.unique("set"))
                     + ". Rewritten at round 1, moved up / stayed / moved down at round 1: "
                     + "; ".join(f"{m.set} {m.better} / {m.equal} / {m.worse} (median words added: "
                                 f"{words(m['words added (better)'])} up, {words(m['words added (worse)'])} down)"
                                 for _, m in moves.iterrows()) + ".")
    if pending:
        partial = (llm_values[llm_values.n < llm_values.planned][["table", "set", "method"]].drop_duplicates().shape[0]
                   if len(llm_values) else 0)
        lines.append(f"- **Pending:** {len(pending)} traces (listed above). A trace still being generated gives its rows on "
                     f"the instructions traced so far ({partial} rows here; their n and notes say so); the rows of a "
                     "trace not started are absent, not filled.")
    if profile == "smoke":
        lines.append("- *Smoke profile: an echo stand-in LLM and a few training steps; these numbers mean nothing.*")
    if R.missing:
        lines.append(f"\n*{len(set(R.missing))} numbers are not in this run (n/a above).*")
    return "\n".join(lines)
