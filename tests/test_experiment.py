"""toolkit.experiment's aggregations: micro-averaged unions (``means``) and macro averages over subsets
(``macro_average``), on a hand-made fixture whose right answers differ from the wrong ones."""
import pandas as pd
import pytest

from toolkit.experiment import macro_average, means


@pytest.fixture
def per_query():
    rows = [("a", "M", "q1", "ndcg@5", 1.0), ("a", "M", "q2", "ndcg@5", 0.0),          # a: mean 0.5 over 2
            ("b", "M", "q3", "ndcg@5", 0.2), ("b", "M", "q4", "ndcg@5", 0.2),
            ("b", "M", "q5", "ndcg@5", 0.2), ("b", "M", "q6", "ndcg@5", 0.2)]          # b: mean 0.2 over 4
    return pd.DataFrame(rows, columns=["dataset", "method", "qid", "metric", "value"])


def test_means_and_micro_averaged_union(per_query):
    t = means(per_query, {"a+b": ["a", "b"]}).set_index("dataset")
    assert t.loc["a", "mean"] == pytest.approx(0.5) and t.loc["b", "mean"] == pytest.approx(0.2)
    # a union is one merged test set: (1 + 0 + 4 * 0.2) / 6, not (0.5 + 0.2) / 2
    assert t.loc["a+b", "mean"] == pytest.approx(1.8 / 6) and t.loc["a+b", "count"] == 6
    with pytest.raises(KeyError, match="needs datasets"):
        means(per_query, {"x": ["a", "zzz"]})


def test_macro_average_is_the_unweighted_mean_of_subset_means(per_query):
    t = means(per_query)
    avg = macro_average(t, "avg", ["a", "b"]).iloc[0]
    assert avg["mean"] == pytest.approx(0.35)           # (0.5 + 0.2) / 2; a max would give 0.5, a micro mean 0.3
    assert avg["count"] == 6 and avg["dataset"] == "avg"
    with pytest.raises(KeyError, match="needs datasets"):
        macro_average(t, "avg", ["a", "c"])
