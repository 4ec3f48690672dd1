"""The ``openai`` backend against a real server: llama.cpp's HTTP server (``xllamacpp``, the API vLLM and
``llama-server`` speak) with Qwen2.5-Coder-0.5B on 127.0.0.1, started as a process of its own
(:class:`toolkit.llm.serve.LlamaServer`) and stopped by its handle.

Each paper's LLM step runs on a handful of real items through ``TOOLKIT_LLM_BACKEND=openai`` and
``TOOLKIT_LLM_BASE_URL``, exactly as a notebook's client is built under the paper profile; greedy answers are
compared with the in-process local backend's for the same model and parameters. Run with ``make test-llm-server``
(``TOOLKIT_LLM_SERVER_TEST=1``; about two minutes on 2 cores).
"""
from __future__ import annotations

import os
import secrets
import threading
import time
from dataclasses import replace

import pytest

pytestmark = [pytest.mark.llm_server, pytest.mark.slow,
              pytest.mark.skipif(os.environ.get("TOOLKIT_LLM_SERVER_TEST") != "1",
                                 reason="the llama.cpp server test runs with TOOLKIT_LLM_SERVER_TEST=1 "
                                        "(make test-llm-server)")]

MODEL = "qwen-0.5b"
KEY_ENV = "TOOLKIT_TEST_SERVER_KEY"
THREADS = 1          # one thread per llama.cpp: the 2 shared cores also run the in-process local backend


@pytest.fixture(scope="module")
def server_key():
    return "sk-test-" + secrets.token_hex(12)


@pytest.fixture(scope="module")
def server(server_key, tmp_path_factory):
    """llama.cpp's server on a free port of 127.0.0.1, 4 slots, requiring ``server_key``; stopped by its handle."""
    from toolkit.llm.serve import LlamaServer, health
    os.environ[KEY_ENV] = server_key
    srv = LlamaServer(MODEL, n_parallel=4, n_threads=THREADS, ctx_per_slot=2048, api_key_env=KEY_ENV,
                      log=tmp_path_factory.mktemp("server") / "server.log")
    srv.start()
    yield srv
    srv.stop()
    assert srv.proc.poll() is not None and not health(srv.root)
    os.environ.pop(KEY_ENV, None)


@pytest.fixture
def through_server(server, server_key, monkeypatch, tmp_path):
    """The environment a GPU user sets: backend, URL, key; a fresh cache so every answer comes from the server."""
    monkeypatch.setenv("TOOLKIT_LLM_BACKEND", "openai")
    monkeypatch.setenv("TOOLKIT_LLM_BASE_URL", server.base_url)
    monkeypatch.setenv("TOOLKIT_LLM_API_KEY", server_key)
    monkeypatch.setenv("TOOLKIT_LLM_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    return server


@pytest.fixture(scope="module")
def local():
    """The in-process llama.cpp backend on the same model, one slot: the reference for greedy answers."""
    from toolkit.llm.client import get_client
    return get_client(MODEL, "local", n_parallel=1, n_threads=THREADS, ctx_per_slot=2048)


def _local_client(local, namespace, tmp_path, sampling=None):
    from toolkit.llm.client import LLMClient
    from toolkit.llm.base import GREEDY
    (tmp_path / "local").mkdir(exist_ok=True)
    return LLMClient(local.backend, namespace=namespace, cache_root=tmp_path / "local", sampling=sampling or GREEDY)


def _toole(n_queries=3):
    from toolkit.data import load_dataset
    ds = load_dataset("toole-multi")
    qs = list(ds.queries.values())[:n_queries]
    return ds, {q.qid: q.text for q in qs}


def _small(task, max_tokens):
    return replace(task, sampling=task.sampling.with_(max_tokens=max_tokens))


def test_reinvoke_intents_and_synthetic_queries(through_server, local, tmp_path):
    """Re-Invoke's two LLM steps (§3.1 synthetic queries, §3.2 intents) through the server; greedy intents are the
    local backend's, word for word."""
    from toolkit.llm.tasks import INTENTS, SYNTHETIC_QUERIES
    from toolkit.reinvoke import generation as gen
    ds, queries = _toole(3)
    intents_task = _small(INTENTS, 64)
    llm = gen.client(intents_task, profile="paper", model=MODEL)
    assert llm.backend.name == "openai" and llm.mode == "live"
    served = gen.intents(queries, llm, task=intents_task)
    assert set(served) == set(queries) and all(served[q] for q in queries)
    assert llm.stats["generated"] == 3
    ref = gen.intents(queries, _local_client(local, intents_task.namespace, tmp_path), task=intents_task)
    assert served == ref

    sq_task = _small(SYNTHETIC_QUERIES, 48)
    docs = dict(list(ds.corpus.items())[:2])
    sq = gen.client(sq_task, profile="paper", model=MODEL)
    expansions = gen.synthetic_queries(docs, sq, m=2, task=sq_task)
    assert set(expansions) == set(docs)
    assert sum(len(v) for v in expansions.values()) >= 3       # sampled at T=0.7: one may parse to nothing
    assert sq.stats["generated"] == 4


def test_feedback_round_multi_turn(through_server, local, tmp_path):
    """One feedback round (§4.2): a multi-turn chat, each turn seeing the earlier ones; answers equal the local
    backend's."""
    from toolkit.feedback.round import NAMESPACE, FeedbackConfig, feedback_round
    from toolkit.llm.client import client_for_profile
    ds, queries = _toole(1)
    qid, text = next(iter(queries.items()))
    docs = [ds.corpus[d] for d in list(ds.corpus)[:3]]
    cfg = FeedbackConfig(k=3, tool_chars=200, comprehension_tokens=40, assessment_tokens=40, decision_tokens=12,
                         refinement_tokens=32)
    llm = client_for_profile("paper", MODEL, namespace=NAMESPACE)
    fb = feedback_round(llm, text, docs, cfg)
    assert fb.comprehension and fb.assessment and fb.decision is not None
    assert llm.stats["generated"] == (4 if fb.refinement else 3)
    ref = feedback_round(_local_client(local, NAMESPACE, tmp_path), text, docs, cfg)
    assert (fb.comprehension, fb.assessment, fb.decision, fb.refinement) == \
        (ref.comprehension, ref.assessment, ref.decision, ref.refinement)


def test_querygen_zero_shot(through_server, local, tmp_path):
    """Query generation's zero-shot step (§3.1, Fig. 2) at T=0: parsed API descriptions, equal to the local
    backend's."""
    from toolkit.querygen import generation as qg
    _, queries = _toole(2)
    llm = qg.client("paper", MODEL)
    served = qg.generate_queries(queries, llm, temperature=0.0, max_tokens=64)
    assert set(served) == set(queries) and all(served[q] for q in queries)
    ref = qg.generate_queries(queries, _local_client(local, qg.QUERYGEN.namespace, tmp_path), temperature=0.0,
                              max_tokens=64)
    assert served == ref


def test_four_concurrent_requests(through_server):
    """Four requests in flight at once (the backend's default concurrency, the server's 4 slots), all answered."""
    from toolkit.llm.client import get_client
    llm = get_client(MODEL, namespace="concurrency")
    assert llm.backend.max_concurrency == 4
    inflight, peak, lock = [0], [0], threading.Lock()
    post = llm.backend._post

    def counting(path, body):
        with lock:
            inflight[0] += 1
            peak[0] = max(peak[0], inflight[0])
        try:
            return post(path, body)
        finally:
            with lock:
                inflight[0] -= 1
    llm.backend._post = counting
    answers = llm.generate([f"Count from {i} to {i + 3}." for i in range(4)], max_tokens=16)
    assert peak[0] == 4
    assert all(a[0].strip() for a in answers) and llm.stats["generated"] == 4


def test_server_killed_mid_batch_then_rerun_completes_the_rest(server_key, monkeypatch, tmp_path):
    """A server that dies mid-batch: a clear error, every finished answer cached, and a rerun (against a new
    server) generates only the missing ones."""
    from toolkit.llm.base import ServerUnavailable
    from toolkit.llm.client import get_client
    from toolkit.llm.serve import LlamaServer
    monkeypatch.setenv(KEY_ENV, server_key)
    monkeypatch.setenv("TOOLKIT_LLM_API_KEY", server_key)
    prompts = [f"Name a fruit that starts with the letter {c}." for c in "ABCDEF"]
    dying = LlamaServer(MODEL, n_parallel=1, n_threads=THREADS, ctx_per_slot=1024, api_key_env=KEY_ENV).start()
    try:
        llm = get_client(MODEL, "openai", base_url=dying.base_url, namespace="killed", cache_root=tmp_path,
                         concurrency=1, max_retries=1, backoff=0.1)
        cache = llm.cache()

        def kill_after_two():
            t0 = time.time()
            while time.time() - t0 < 300:
                cache.refresh()
                if len(llm.missing(prompts, max_tokens=12)) <= 4:
                    dying.kill()
                    return
                time.sleep(0.05)
        killer = threading.Thread(target=kill_after_two)
        killer.start()
        with pytest.raises(ServerUnavailable) as err:
            llm.generate(prompts, max_tokens=12)
        killer.join()
    finally:
        dying.stop()
    msg = str(err.value)
    assert dying.base_url in msg and "\n" not in msg and server_key not in msg
    assert "cached" in msg and "missing" in msg
    missing = llm.missing(prompts, max_tokens=12)
    assert 1 <= len(missing) <= 4                     # two (or three: the one in flight may have landed) are kept

    with LlamaServer(MODEL, n_parallel=1, n_threads=THREADS, ctx_per_slot=1024, api_key_env=KEY_ENV) as again:
        rerun = get_client(MODEL, "openai", base_url=again.base_url, namespace="killed", cache_root=tmp_path,
                           concurrency=1)
        answers = rerun.generate(prompts, max_tokens=12)
    assert rerun.stats["generated"] == len(missing) and rerun.stats["cached"] == len(prompts) - len(missing)
    assert all(a[0] for a in answers)


def test_wrong_key_or_url_is_one_line_without_the_key(through_server, server_key, monkeypatch, tmp_path):
    """A wrong key, no key, a wrong path, nothing listening, no scheme: each a one-line error that names the fix and
    never prints the key."""
    from toolkit.llm.base import LLMError
    from toolkit.llm.client import get_client
    wrong = "sk-wrong-" + secrets.token_hex(8)
    monkeypatch.setenv("TOOLKIT_LLM_API_KEY", wrong)
    llm = get_client(MODEL, namespace="keys", max_retries=0)
    with pytest.raises(LLMError) as err:
        llm.generate(["Say hi"], max_tokens=4)
    msg = str(err.value)
    assert "refused the API key" in msg and "TOOLKIT_LLM_API_KEY" in msg and wrong not in msg and "\n" not in msg
    monkeypatch.delenv("TOOLKIT_LLM_API_KEY")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(LLMError, match="no key was sent"):
        get_client(MODEL, namespace="keys", max_retries=0).generate(["Say hi"], max_tokens=4)

    monkeypatch.setenv("TOOLKIT_LLM_API_KEY", server_key)         # the right key, wrong URLs
    for url, expect in ((through_server.root + "/nothing/v1", "no such endpoint"),
                        ("http://127.0.0.1:9", "unavailable"), ("127.0.0.1:8080", "must start with http")):
        with pytest.raises(LLMError) as err:
            get_client(MODEL, "openai", base_url=url, namespace="keys", max_retries=0).generate(["Say hi"],
                                                                                               max_tokens=4)
        msg = str(err.value)
        assert expect in msg and server_key not in msg and "\n" not in msg, msg
    assert not list(tmp_path.glob("cache/keys/*.jsonl")) or all(
        wrong not in p.read_text() for p in tmp_path.glob("cache/keys/*.jsonl"))
