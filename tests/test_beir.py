"""Your own data: a BEIR-format folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv) loads with
``load_dataset("beir:<folder>")`` and every baseline and method of the suite runs on it."""
from __future__ import annotations

import json

import pytest

from toolkit.data import load_dataset

DOCS = {"weather": ("Weather forecast", "get the weather forecast for a city by name"),
        "flights": ("Flight search", "search flights between two airports on a date"),
        "hotels": ("Hotel booking", "book a hotel room in a city for given nights"),
        "stocks": ("Stock quote", "latest stock price quote for a ticker symbol"),
        "translate": ("Translate text", "translate text from one language to another")}
QUERIES = {"q1": "what is the weather forecast in Paris", "q2": "find flights from Boston to Denver",
           "q3": "stock price of the ticker AAPL", "q4": "translate this sentence into German",
           "train1": "book a hotel"}


def write_beir(root, qrels=None, corpus_extra=""):
    root.mkdir(parents=True, exist_ok=True)
    (root / "corpus.jsonl").write_text("".join(
        json.dumps({"_id": d, "title": t, "text": x, "metadata": {"category": "demo", "tool": d}}) + "\n"
        for d, (t, x) in DOCS.items()) + corpus_extra)
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in QUERIES.items()))
    (root / "qrels").mkdir(exist_ok=True)
    rows = qrels or [("q1", "weather", 1), ("q2", "flights", 1), ("q3", "stocks", 1), ("q4", "translate", 1),
                     ("q4", "hotels", 0)]
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{s}\n" for q, d, s in rows))
    (root / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\ntrain1\thotels\t1\n")
    return root


def test_beir_folder_loads_and_bm25_evaluates(tmp_path):
    import pytrec_eval

    from toolkit.experiment import evaluate_grid
    from toolkit.retrieval import build_retriever
    ds = load_dataset(f"beir:{write_beir(tmp_path / 'mine')}")
    assert (len(ds.corpus), len(ds.queries)) == (5, 4)          # the test split's queries only
    assert ds.corpus["weather"].text.startswith("Weather forecast: ") and ds.corpus["weather"].category == "demo"
    assert len(load_dataset(f"beir:{tmp_path / 'mine'}", split="train").queries) == 1
    per_query, runs, _ = evaluate_grid({"mine": ds}, {"BM25": lambda: build_retriever("bm25")}, ["ndcg@5"], k=5,
                                       log=None)
    ours = per_query.groupby("metric")["value"].mean()["ndcg@5"]
    ev = pytrec_eval.RelevanceEvaluator({q: {d: int(r) for d, r in rel.items()} for q, rel in ds.qrels.items()},
                                        {"ndcg_cut.5"})
    ref = ev.evaluate({q: {d: float(s) for d, s in r.items()} for q, r in runs[("mine", "BM25")].items()})
    assert ours == pytest.approx(sum(v["ndcg_cut_5"] for v in ref.values()) / len(ref), abs=1e-9)
    assert ours > 0.9                              # each query shares its words with its one relevant tool


def test_every_method_runs_on_a_beir_folder(tmp_path):
    """Every method of notebook 50 either scores the folder or says, as pending, what it needs (its inputs are
    committed for the benchmark's own data); BM25, the dense encoders and their fusion score it."""
    from toolkit.methods.benchmark import config_for, default_methods, run_benchmark
    ds = load_dataset(f"beir:{write_beir(tmp_path / 'mine')}")
    cfg = config_for("smoke", encode_missing=True)
    methods = {k: v for k, v in default_methods(cfg, {"mine": ds}).items() if k != "Dense mpnet"}  # mpnet: slow here
    result = run_benchmark(methods, {"mine": ds}, log=None)
    scored = set(result.per_query["method"])
    pending = {p["method"] for p in result.pending}
    assert scored | pending == set(methods), set(methods) - scored - pending
    assert {"BM25", "Dense MiniLM"} <= scored
    means = result.per_query[result.per_query.metric == "ndcg@5"].groupby("method")["value"].mean()
    assert means["BM25"] > 0.9 and means["Dense MiniLM"] > 0.9
    assert all(p["reason"] for p in result.pending)


@pytest.mark.parametrize("mutate, needle", [
    (lambda r: (r / "queries.jsonl").unlink(), "queries.jsonl: missing"),
    (lambda r: (r / "corpus.jsonl").write_text('{"_id": "x"}\n'), "corpus.jsonl:1: field 'text' missing"),
    (lambda r: (r / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tnope\t1\n"),
     "test.tsv:2: document 'nope' is not in corpus.jsonl"),
])
def test_beir_bad_folder_says_which_file_and_field(tmp_path, mutate, needle):
    root = write_beir(tmp_path / "bad")
    mutate(root)
    with pytest.raises((ValueError, FileNotFoundError), match=needle.replace(".", r"\.")):
        load_dataset(f"beir:{root}")
    with pytest.raises(FileNotFoundError, match="splits in this folder"):
        load_dataset(f"beir:{write_beir(tmp_path / 'ok')}", split="dev")
