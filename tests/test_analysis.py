import numpy as np

from toolkit.analysis import instruction_lengths, term_overlap, terms
from toolkit.data.contract import Document, Query, RetrievalDataset


def _ds():
    docs = {"d1": Document("d1", "c", "t", "a", "Weather forecast for a city"),
            "d2": Document("d2", "c", "t", "b", "Convert currency amounts")}
    queries = {"q1": Query("q1", "What is the weather forecast in Paris?"),
               "q2": Query("q2", "the and of"),
               "q3": Query("q3", "convert 10 dollars and check the forecast")}
    return RetrievalDataset("toy", docs, queries, {"q1": {"d1": 1}, "q2": {"d2": 1}, "q3": {"d1": 1, "d2": 1}})


def test_terms_drop_stopwords():
    assert terms("What is the weather?") == {"weather"}
    assert terms("What is the weather?", stopwords=False) == {"what", "is", "the", "weather"}


def test_overlap_and_lengths():
    ds = _ds()
    ov = term_overlap(ds)
    assert ov[0] == 2 / 3                      # weather, forecast of {weather, forecast, paris}
    assert np.isnan(ov[1])                    # only stop words: reported as NaN, not dropped
    assert ov[2] == 2 / 5                     # {convert, forecast} of {convert, 10, dollars, check, forecast}
    assert list(instruction_lengths(ds)) == [7, 3, 7]
