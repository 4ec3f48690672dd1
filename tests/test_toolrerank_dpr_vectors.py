"""The DPR's committed vectors stand in for its weights (toolkit.toolrerank.dpr_vectors)."""
import json
import shutil
from types import SimpleNamespace

import numpy as np
import pytest

DOCS = {"a": "Get the weather forecast for a city", "b": "Convert an amount between currencies",
        "c": "Search recipes by ingredient", "d": "Translate text into another language"}
QUERIES = {"q1": "will it rain in Paris tomorrow", "q2": "how many yen is 20 euros", "q3": "cook with leeks"}


def _saved_minilm(de):
    from toolkit.retrieval.models import load_encoder
    load_encoder("minilm").save(str(de))
    (de / "train_stats.json").write_text(json.dumps({"steps": 3, "pairs": 12}))
    return de


def test_exported_vectors_rank_exactly_as_the_live_dpr_and_name_what_they_lack(tmp_path, monkeypatch):
    from toolkit.toolrerank import dpr_vectors
    monkeypatch.setattr(dpr_vectors, "DIR", tmp_path / "committed")
    de = _saved_minilm(tmp_path / "models" / "standard-0123" / "dual_encoder" / "final")
    ids, docs = list(DOCS), list(DOCS.values())
    out = dpr_vectors.export(de, texts=docs + list(QUERIES.values()))
    assert out == tmp_path / "committed" / "dpr-vectors-standard-0123.npz"
    info = dpr_vectors.meta(de.parent.parent)
    assert info["texts"] == 7 and info["training"] == {"steps": 3, "pairs": 12} and len(info["weights_sha256"]) == 64
    live = dpr_vectors.retriever(de).index(ids, docs)
    live_run = live.search(QUERIES, k=3)

    shutil.rmtree(de)                          # the weights leave with the machine
    frozen = dpr_vectors.retriever(de)
    assert isinstance(frozen, dpr_vectors.FrozenDense)
    frozen.index(ids, docs)
    assert frozen.search(QUERIES, k=3) == live_run
    assert np.array_equal(frozen.doc_emb, live.doc_emb)
    with pytest.raises(KeyError, match="dpr-vectors-standard-0123.npz.*1 of 2 texts"):
        frozen.embed([docs[0], "a text nobody exported"])

    monkeypatch.setattr(dpr_vectors, "DIR", tmp_path / "elsewhere")   # neither weights nor vectors
    with pytest.raises(FileNotFoundError, match="--stages dual_encoder"):
        dpr_vectors.retriever(de)


def test_train_all_takes_the_committed_vectors_instead_of_retraining_the_dpr(tmp_path, monkeypatch):
    from toolkit.toolrerank import dpr_vectors, experiment
    monkeypatch.setattr(dpr_vectors, "DIR", tmp_path / "committed")
    monkeypatch.setattr(experiment, "model_root", lambda split, setup: tmp_path / "models" / "standard-4567")
    monkeypatch.setattr(experiment, "train_dual_encoder",
                        lambda *a, **k: pytest.fail("retrained the DPR although its vectors are committed"))
    de = _saved_minilm(tmp_path / "models" / "standard-4567" / "dual_encoder" / "final")
    dpr_vectors.export(de, texts=list(DOCS.values()))
    shutil.rmtree(de)
    split = SimpleNamespace(train=SimpleNamespace(queries={}, qrels={}))
    setup = experiment.PROFILES["smoke"]
    models = experiment.train_all(split, setup, log=None, stages=("dual_encoder",))
    assert models.stats["dual_encoder"] == {"steps": 3, "pairs": 12, "vectors": "committed"}
    assert isinstance(dpr_vectors.retriever(models.dual_encoder), dpr_vectors.FrozenDense)

    # the reranker that starts from the DPR's weights needs them: it retrains
    from dataclasses import replace
    monkeypatch.setattr(experiment, "train_dual_encoder", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("trains")))
    with pytest.raises(RuntimeError, match="trains"):
        experiment.train_all(split, replace(setup, ce_init="dpr"), log=None, stages=("dual_encoder",))
