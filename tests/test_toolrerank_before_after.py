"""Issue 50: the first run's verdicts and Figure 1(a) beside the fair setup's, from recorded results."""
import pytest

from toolkit.toolrerank.analysis import claims_before_after, fig1a_before_after


def _run(holds, p, draw_holds, fig):
    return {"claims": [{"claim": "reranking helps (every Rerank-m > DPR, all-avg)", "holds": holds, "p": p}],
            "draws": [{"claims": {"reranking helps (every Rerank-m > DPR, all-avg)": h}} for h in draw_holds],
            "fig1a": [{"tools": t, "m": m, "recall@5": v} for t, m, v in fig]}


def test_claims_before_after_counts_the_draws_that_hold_a_claim():
    first = _run("no", "Rerank-10 vs DPR p<0.001", ["no", "yes", "no"], [])
    fair = _run("yes", "Rerank-10 vs DPR p=0.020", ["yes", "yes"], [])
    df = claims_before_after({"first run": first, "fair": fair})
    row = df.loc["reranking helps"]
    assert (row["first run: verdict"], row["first run: draws"]) == ("not held", "1/3")
    assert (row["fair: verdict"], row["fair: p"], row["fair: draws"]) == ("held", "Rerank-10 vs DPR p=0.020", "2/2")
    # a run without draws says so instead of 0/0
    assert claims_before_after({"x": {"claims": first["claims"]}}).loc["reranking helps", "x: draws"] == "n/a"


def test_fig1a_before_after_orders_m_numerically_with_dpr_last():
    a = _run("no", "", [], [("unseen", 50, 0.5), ("unseen", 10, 0.6), ("unseen", "dpr", 0.55), ("seen", 10, 0.9)])
    b = _run("no", "", [], [("unseen", 10, 0.7), ("unseen", 50, 0.65), ("unseen", "dpr", 0.6)])
    df = fig1a_before_after({"before": a, "after": b})
    assert list(df.index) == ["10", "50", "dpr"]
    assert df.loc["10", "before"] == pytest.approx(60.0) and df.loc["50", "after"] == pytest.approx(65.0)
    assert "seen" not in df.to_string()
