"""toolkit.llm: response cache (hit/miss/replay, interruption and resume), backend selection,
the OpenAI-compatible backend against a fake server, the transformers backend on a tiny random
model, a live smoke generation with the smallest local GGUF, the CLI, and the committed
Re-Invoke intent cache replayed without a model."""
from __future__ import annotations

import http.server
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from toolkit import paths
from toolkit.llm import (LLMError, ReplayMiss, ResponseCache, Sampling, ServerUnavailable, get_client,
                         parsers, select_backend)
from toolkit.llm import models as llm_models
from toolkit.llm.backends import EchoBackend, OpenAIBackend, ReplayBackend
from toolkit.llm.client import LLMClient
from toolkit.llm.tasks import INTENTS



def echo_client(tmp_path, **kw) -> LLMClient:
    backend = kw.pop("backend", None) or EchoBackend()
    return LLMClient(backend, namespace="t", cache_root=tmp_path, progress=False, **kw)


# ---------------------------------------------------------------------------------------------
# cache: hit, miss, keys, replay
# ---------------------------------------------------------------------------------------------

def test_cache_miss_then_hit(tmp_path):
    c = echo_client(tmp_path)
    a = c.generate(["p1", "p2"], n=2)
    assert c.backend.calls == 4 and len({x for r in a for x in r}) == 4     # sample index is in the key
    c2 = echo_client(tmp_path)                                              # a fresh process, same files
    b = c2.generate(["p2", "p1", "p3"], n=2)
    assert c2.backend.calls == 2                                            # only p3 is new
    assert b[0] == a[1] and b[1] == a[0]


def test_cache_key_covers_model_and_sampling(tmp_path):
    c = echo_client(tmp_path)
    c.chat("q")
    c.chat("q", temperature=0.7)
    c.chat("q", max_tokens=5)
    c.chat("q", stop=["\n"])
    c.complete("q")                                                         # completion != chat
    assert c.backend.calls == 5
    c.chat("q", temperature=0.0)                                            # same as the first
    assert c.backend.calls == 5
    other = echo_client(tmp_path, backend=EchoBackend(model_id="other-model"))
    other.chat("q")
    assert other.backend.calls == 1
    assert c.cache().path != other.cache().path


def test_duplicate_prompts_in_a_batch_are_computed_once(tmp_path):
    c = echo_client(tmp_path)
    out = c.generate(["x", "y", "x"])
    assert c.backend.calls == 2 and out[0] == out[2]


def test_cache_file_is_compact_jsonl(tmp_path):
    c = echo_client(tmp_path)
    c.generate(["a long shared prompt " * 20], n=5, temperature=0.7)
    lines = [json.loads(x) for x in c.cache().path.read_text().splitlines()]
    kinds = [r["t"] for r in lines]
    assert kinds.count("p") == 1 and kinds.count("c") == 1 and kinds.count("a") == 5   # prompt stored once
    assert kinds[0] == "h"
    assert all("prompt" not in r for r in lines if r["t"] == "a")


def test_shared_prompt_prefix_is_stored_once(tmp_path):
    from toolkit.llm.prompts import intent_prompt
    c = echo_client(tmp_path)
    queries = [f"query number {i} about flights" for i in range(20)]
    first = c.generate([intent_prompt(q) for q in queries])
    text = c.cache().path.read_text()
    assert text.count("Suppose you are a query analyzer") == 2        # first prompt in full + one prefix record
    recs = [json.loads(x) for x in text.splitlines()]
    assert sum(r["t"] == "x" for r in recs) == 1
    assert len(text) < 20 * len(intent_prompt("x"))                  # far less than 20 full prompts
    again = echo_client(tmp_path)                                     # decoded on reload: all hits
    assert again.generate([intent_prompt(q) for q in queries]) == first and again.backend.calls == 0
    assert {a["prompt"][0]["content"] for a in again.cache().answers()} == {intent_prompt(q) for q in queries}


def test_a_conversation_stores_each_turn_once(tmp_path):
    # a multi-turn chat (the feedback round): each call's prompt is the previous call's messages plus the
    # answer and a new user turn; the long first turn (the tool documents) must be written once, not per call
    c = echo_client(tmp_path)
    docs = "tool document " * 300

    def conversation(i):
        msgs = [{"role": "system", "content": "You judge tools."}, {"role": "user", "content": f"{docs} query {i}"}]
        for step in ("assess", "decide", "refine"):
            msgs = msgs + [{"role": "assistant", "content": c.chat(msgs)}, {"role": "user", "content": step}]
        return msgs, c.chat(msgs)
    chats = [conversation(i) for i in range(3)]
    text = c.cache().path.read_text()
    recs = [json.loads(x) for x in text.splitlines()]
    assert sum(r["t"] == "p" and "up" in r for r in recs) == 9           # turns 2-4 of each conversation
    assert text.count(docs.strip()) <= 3 + 1                            # 3 first turns (+ one prefix record)
    assert len(text) < 2 * 3 * len(docs)
    again = echo_client(tmp_path)                                      # decoded on reload: all hits
    assert [again.chat(m) for m, _ in chats] == [a for _, a in chats] and again.backend.calls == 0
    before = {(tuple(map(json.dumps, a["prompt"])), a["text"]) for a in again.cache().answers()}
    ResponseCache(tmp_path, "t", "echo").compact()                     # compaction keeps the continuations
    fresh = ResponseCache(tmp_path, "t", "echo")
    assert {(tuple(map(json.dumps, a["prompt"])), a["text"]) for a in fresh.answers()} == before
    # a conversation whose first turn is damaged: its later turns' prompt records are skipped and named (their
    # answers are keyed by the whole prompt's hash, so a lookup still finds exactly them)
    lines = c.cache().path.read_text().splitlines()
    first = next(i for i, x in enumerate(lines) if json.loads(x)["t"] == "p" and "up" not in json.loads(x)
                 and "query 0" in x)
    c.cache().path.write_text("\n".join(lines[:first] + ["{damaged"] + lines[first + 1:]) + "\n")
    hurt = ResponseCache(tmp_path, "t", "echo")
    assert sum("continues prompt" in d for d in hurt.damaged) == 3 and len(hurt) == len(fresh)
    reread = echo_client(tmp_path)
    assert reread.chat(chats[0][0]) == chats[0][1] and reread.backend.calls == 0


def test_answers_keep_the_prompt_and_reused_token_counts(tmp_path):
    # a round's later turns should find their conversation in the server's KV cache: the counts are kept per answer
    from dataclasses import replace

    class Counting(EchoBackend):
        def generate(self, req):
            return replace(super().generate(req), prompt_tokens=120, cached_tokens=100)
    echo_client(tmp_path, backend=Counting()).chat("q")
    meta = next(ResponseCache(tmp_path, "t", "echo").answers())
    assert (meta["ptok"], meta["ctok"]) == (120, 100)


def test_compact_rewrites_without_changing_answers(tmp_path):
    from toolkit.llm.cache import ResponseCache
    c = echo_client(tmp_path)
    prompts = [("shared head " * 40) + f"tail {i}" for i in range(10)]
    ans = c.generate(prompts, n=2, temperature=0.5)
    path = c.cache().path
    with open(path, "a") as f:
        f.write('{"t":"a","cut')                                      # a cut line disappears
    cache = ResponseCache(tmp_path, "t", "echo")
    r = cache.compact()
    assert r["answers"] == 20 and r["bytes_after"] < r["bytes_before"]
    assert '"cut' not in path.read_text()
    again = echo_client(tmp_path)
    assert again.generate(prompts, n=2, temperature=0.5) == ans and again.backend.calls == 0


def test_replay_answers_from_cache_and_names_missing_prompt(tmp_path):
    live = echo_client(tmp_path, backend=EchoBackend(model_id="m"))
    ans = live.generate(["known prompt"])
    replay = LLMClient(ReplayBackend(model_id="m"), namespace="t", cache_root=tmp_path, progress=False)
    assert replay.mode == "replay"
    assert replay.generate(["known prompt"]) == ans
    with pytest.raises(ReplayMiss) as e:
        replay.generate(["known prompt", "an unseen prompt about llamas"])
    msg = str(e.value)
    assert "an unseen prompt about llamas" in msg and "'m'" in msg and str(replay.cache().path) in msg
    assert not (tmp_path / "t" / "other.jsonl").exists()


def test_replay_never_creates_files(tmp_path):
    replay = LLMClient(ReplayBackend(model_id="nothing"), namespace="empty", cache_root=tmp_path, progress=False)
    with pytest.raises(ReplayMiss):
        replay.chat("hello")
    assert not any(tmp_path.rglob("*.jsonl"))


def test_partial_last_line_is_ignored_and_repaired(tmp_path):
    c = echo_client(tmp_path)
    c.generate(["a", "b"])
    path = c.cache().path
    with open(path, "a") as f:
        f.write('{"t":"a","p":"deadbeef","c":"x","i":0,"text":"cut in the mid')   # a killed writer
    c2 = echo_client(tmp_path)
    assert len(c2.cache()) == 2
    c2.generate(["c"])
    c3 = echo_client(tmp_path)
    assert len(c3.cache()) == 3 and c3.cache().skipped_lines == 1
    c3.generate(["a", "b", "c"])
    assert c3.backend.calls == 0


def test_concurrent_writers_share_one_file(tmp_path):
    a, b = echo_client(tmp_path), echo_client(tmp_path)
    a.generate(["1", "2"])
    b.generate(["2", "3"])                       # b refreshes before looking up: "2" is a hit
    a.generate(["3"])                            # and a sees b's "3"
    assert a.backend.calls == 2 and b.backend.calls == 1
    # a raced duplicate (both computed the same answer) is written once: put re-reads under the lock
    stale = ResponseCache(tmp_path, "t", "echo")
    a.generate(["4"])
    stale.put("chat", [{"role": "user", "content": "4"}], Sampling().key(), 0, "late duplicate")
    texts = [json.loads(x).get("text") for x in stale.path.read_text().splitlines()]
    assert "late duplicate" not in texts and len(ResponseCache(tmp_path, "t", "echo")) == 4


def test_errors_keep_finished_answers(tmp_path):
    def flaky(req):
        if "bad" in req.prompt[0]["content"]:
            raise RuntimeError("boom")
        return "ok"
    c = echo_client(tmp_path, backend=EchoBackend(answer_fn=flaky))
    with pytest.raises(RuntimeError, match="boom"):
        c.generate(["good 1", "good 2", "bad", "good 3"])
    assert len(echo_client(tmp_path).cache()) == 2


def test_parallel_generation_keeps_order(tmp_path):
    c = echo_client(tmp_path, backend=EchoBackend(concurrency=4, delay=0.01, answer_fn=lambda r: r.prompt[0]["content"]))
    prompts = [f"p{i}" for i in range(20)]
    assert [a[0] for a in c.generate(prompts)] == prompts


def test_sampling_validation_and_seeds():
    s = Sampling(temperature=0.7, seed=10)
    assert s.seed_for(0) == 10 and s.seed_for(3) == 13
    assert Sampling(stop="\n").stop == ("\n",)
    assert Sampling(temperature=0.7).key() == Sampling(temperature=0.7000000001).key()
    for bad in ({"temperature": -1}, {"top_p": 0}, {"top_p": 1.5}, {"max_tokens": 0}, {"top_k": -2}):
        with pytest.raises(ValueError):
            Sampling(**bad)
    assert Sampling(seed=None).seed_for(2) is None


# ---------------------------------------------------------------------------------------------
# interruption: kill -9 mid-run, rerun, nothing computed twice
# ---------------------------------------------------------------------------------------------

_DRIVER = textwrap.dedent("""
    import sys
    from toolkit.llm.backends import EchoBackend
    from toolkit.llm.client import LLMClient
    root, log, delay, conc = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
    c = LLMClient(EchoBackend(delay=delay, log=log, concurrency=conc), namespace="kill", cache_root=root, progress=False)
    c.generate([f"prompt {i}" for i in range(30)], n=1)
    print("finished")
""")


def _answers(path: Path) -> list[str]:
    out = []
    for line in path.read_text().splitlines():
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            continue
        if r.get("t") == "a":
            out.append(r["text"].split()[-1])
    return out


@pytest.mark.parametrize("concurrency", [1, 3])
def test_sigkill_and_resume_computes_nothing_twice(tmp_path, concurrency):
    log = tmp_path / "computed.log"
    cache_file = tmp_path / "kill" / "echo.jsonl"
    env = dict(os.environ)                     # the toolkit comes from the environment (make env installs it)
    cmd = [sys.executable, "-c", _DRIVER, str(tmp_path), str(log)]
    p = subprocess.Popen(cmd + ["0.15", str(concurrency)], env=env)
    deadline = time.time() + 60
    while time.time() < deadline and (not cache_file.exists() or len(_answers(cache_file)) < 8):
        time.sleep(0.05)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    assert p.returncode == -signal.SIGKILL
    stored1 = set(_answers(cache_file))
    computed1 = log.read_text().split()
    assert 8 <= len(stored1) < 30
    assert set(computed1) >= stored1 and len(computed1) - len(stored1) <= concurrency   # lost: in flight only

    out = subprocess.run(cmd + ["0", str(concurrency)], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "finished" in out.stdout, out.stderr
    computed2 = log.read_text().split()[len(computed1):]
    stored2 = _answers(cache_file)
    assert len(stored2) == len(set(stored2)) == 30                       # every answer once in the file
    assert not (set(computed2) & stored1)                                # nothing stored was recomputed
    assert set(computed2) == set(stored2) - stored1                      # only the missing ones were


# ---------------------------------------------------------------------------------------------
# backend selection
# ---------------------------------------------------------------------------------------------

def test_backend_selection(tmp_path, monkeypatch):
    for env in ("TOOLKIT_LLM_BACKEND", "TOOLKIT_LLM_BASE_URL", "OPENAI_BASE_URL", "TOOLKIT_LLM_MODEL"):
        monkeypatch.delenv(env, raising=False)
    assert select_backend("qwen-1.5b") == "local"
    assert select_backend("qwen-0.5b") == "local"
    assert select_backend(None) == "local"                                    # default model is local
    hf = tmp_path / "sft-model"
    hf.mkdir()
    (hf / "config.json").write_text("{}")
    assert select_backend(str(hf)) == "transformers"
    with pytest.raises(LLMError, match="TOOLKIT_LLM_BASE_URL"):
        select_backend("gpt-4o-mini")
    monkeypatch.setenv("TOOLKIT_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    assert select_backend("gpt-4o-mini") == "openai"
    assert select_backend("qwen-1.5b", "replay") == "replay"
    monkeypatch.setenv("TOOLKIT_LLM_BACKEND", "replay")
    assert select_backend("qwen-1.5b") == "replay"
    with pytest.raises(ValueError, match="unknown LLM backend"):
        select_backend("qwen-1.5b", "vllm-direct")


def test_client_for_profile(tmp_path, monkeypatch):
    from toolkit.llm import client_for_profile
    monkeypatch.delenv("TOOLKIT_LLM_BACKEND", raising=False)
    assert client_for_profile("smoke", "qwen-1.5b", cache_root=tmp_path).mode == "replay"
    assert client_for_profile("standard", "qwen-1.5b", cache_root=tmp_path).mode == "replay"
    monkeypatch.setenv("TOOLKIT_LLM_BACKEND", "echo")    # a leftover variable must not write echo numbers as results
    for profile in ("smoke", "standard"):
        with pytest.raises(LLMError, match="TOOLKIT_LLM_BACKEND=echo"):
            client_for_profile(profile, "qwen-1.5b", cache_root=tmp_path)
    assert client_for_profile("paper", "qwen-1.5b", cache_root=tmp_path).mode == "live"
    with pytest.raises(ValueError, match="profile"):
        client_for_profile("fast", "qwen-1.5b")


def test_replay_client_uses_the_local_model_id(tmp_path):
    c = get_client("qwen-1.5b", backend="replay", cache_root=tmp_path)
    assert c.mode == "replay" and c.model_id == "qwen2.5-coder-1.5b-instruct-q4_k_m"
    assert get_client("Qwen/Qwen2.5-Coder-1.5B-Instruct", backend="replay", cache_root=tmp_path).model_id == c.model_id


def test_model_registry():
    rows = {r["model_id"]: r for r in llm_models.describe()}
    assert rows["qwen2.5-coder-1.5b-instruct-q4_k_m"]["bytes"] == 1_117_320_768
    assert all(len(r["sha256"]) == 64 and r["licence"] for r in rows.values())
    with pytest.raises(llm_models.ModelError, match="unknown local model"):
        llm_models.lookup("llama-70b")


def test_join_is_atomic_and_checked(tmp_path, monkeypatch):
    parts = []
    for i, chunk in enumerate([b"GGUF" + b"a" * 100, b"b" * 50, b"c" * 7]):
        p = tmp_path / f"part{i}.bin"
        p.write_bytes(chunk)
        parts.append(p)
    import hashlib
    whole = b"".join(p.read_bytes() for p in parts)
    model = llm_models.LocalModel("toy", "toy", "MIT", ("a", "b", "c"), ("x", "y", "z"), len(whole),
                                  hashlib.sha256(whole).hexdigest(), "toy.gguf")
    monkeypatch.setattr(llm_models, "part_paths", lambda m: parts)
    monkeypatch.setattr(llm_models, "models_dir", lambda: tmp_path)
    dest = tmp_path / "toy.gguf"
    llm_models._join(model, dest)
    assert dest.read_bytes() == whole and (tmp_path / "toy.gguf.sha256").is_file()
    bad = llm_models.LocalModel("toy", "toy", "MIT", ("a", "b", "c"), ("x", "y", "z"), len(whole), "0" * 64, "bad.gguf")
    with pytest.raises(llm_models.ModelError, match="sha256"):
        llm_models._join(bad, tmp_path / "bad.gguf")
    assert not (tmp_path / "bad.gguf").exists() and not list(tmp_path.glob("*.part"))


# ---------------------------------------------------------------------------------------------
# OpenAI-compatible backend against a fake server
# ---------------------------------------------------------------------------------------------

class _FakeOpenAI(http.server.BaseHTTPRequestHandler):
    requests: list = []
    fail_first = 0

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
        if type(self).fail_first > 0:
            type(self).fail_first -= 1
            self.send_response(503)
            self.end_headers()
            self.wfile.write(b"busy")
            return
        if body.get("model") == "reject":
            self.send_response(400)
            self.end_headers()
            self.wfile.write(("bad request, you sent " + str(self.headers.get("Authorization"))).encode())
            return
        if self.path.endswith("/chat/completions"):
            choice = {"index": 0, "message": {"role": "assistant", "content": "hello from fake"}, "finish_reason": "stop"}
        else:
            choice = {"index": 0, "text": "completed", "finish_reason": "length"}
        data = json.dumps({"choices": [choice], "usage": {"prompt_tokens": 3, "completion_tokens": 2}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *a):
        pass


@pytest.fixture
def fake_server():
    _FakeOpenAI.requests = []
    _FakeOpenAI.fail_first = 0
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _FakeOpenAI)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


def test_openai_backend_payload_and_key_handling(tmp_path, fake_server, monkeypatch):
    secret = "sk-test-0123456789-secret"
    monkeypatch.setenv("TOOLKIT_LLM_API_KEY", secret)
    monkeypatch.setenv("TOOLKIT_LLM_BASE_URL", fake_server)
    monkeypatch.setenv("TOOLKIT_LLM_MODEL", "served-model")
    c = get_client(backend="openai", namespace="oa", cache_root=tmp_path, backoff=0.01)
    assert c.backend.base_url == fake_server + "/v1" and c.model_id == "served-model"
    assert c.chat("hi", temperature=0.3, top_p=0.9, max_tokens=7, stop=["\n"], seed=5) == ["hello from fake"]
    assert c.complete("raw text") == ["completed"]
    r0, r1 = _FakeOpenAI.requests
    assert r0["path"] == "/v1/chat/completions" and r1["path"] == "/v1/completions"
    b = r0["body"]
    assert b["temperature"] == 0.3 and b["top_p"] == 0.9 and b["max_tokens"] == 7 and b["seed"] == 5
    assert b["stop"] == ["\n"] and b["model"] == "served-model" and "top_k" not in b and "min_p" not in b
    assert b["messages"] == [{"role": "user", "content": "hi"}]
    assert r0["auth"] == f"Bearer {secret}"
    # the key is never written or shown
    assert secret not in c.cache().path.read_text()
    assert secret not in repr(c.backend) + repr(c) + json.dumps(c.describe())
    bad = OpenAIBackend("reject", fake_server, max_retries=0)
    with pytest.raises(LLMError) as e:
        LLMClient(bad, namespace="oa", cache_root=tmp_path, progress=False).chat("x")
    assert "HTTP 400" in str(e.value) and secret not in str(e.value)


def test_openai_backend_retries_then_succeeds(tmp_path, fake_server):
    _FakeOpenAI.fail_first = 2
    c = LLMClient(OpenAIBackend("m", fake_server, max_retries=3, backoff=0.01), namespace="oa",
                  cache_root=tmp_path, progress=False)
    assert c.chat("hi") == ["hello from fake"]
    assert len(_FakeOpenAI.requests) == 3


def test_openai_backend_server_down_is_a_clear_error(tmp_path):
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()                                                               # nothing listens there
    c = LLMClient(OpenAIBackend("m", f"http://127.0.0.1:{port}", max_retries=2, backoff=0.01),
                  namespace="oa", cache_root=tmp_path, progress=False)
    t = time.time()
    with pytest.raises(ServerUnavailable) as e:
        c.chat("hi")
    assert f"127.0.0.1:{port}/v1/chat/completions" in str(e.value) and "3 attempts" in str(e.value)
    assert time.time() - t < 10


def test_openai_backend_needs_url_and_model(monkeypatch):
    for env in ("TOOLKIT_LLM_BASE_URL", "OPENAI_BASE_URL", "TOOLKIT_LLM_MODEL"):
        monkeypatch.delenv(env, raising=False)
    with pytest.raises(LLMError, match="base URL"):
        OpenAIBackend("m")
    with pytest.raises(LLMError, match="model name"):
        OpenAIBackend(None, "http://x")


# ---------------------------------------------------------------------------------------------
# transformers backend on a tiny random model (no download)
# ---------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_transformers_backend_tiny_model(tmp_path):
    pytest.importorskip("transformers")
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast
    words = ["<unk>", "<eos>"] + "the a tool query api find book weather news hello world".split()
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", eos_token="<eos>")
    import torch
    torch.manual_seed(0)
    lm = GPT2LMHeadModel(GPT2Config(vocab_size=len(words), n_positions=64, n_embd=16, n_layer=1, n_head=2,
                                    eos_token_id=1, bos_token_id=1))
    d = tmp_path / "tiny"
    fast.save_pretrained(d)
    lm.save_pretrained(d)
    assert select_backend(str(d)) == "transformers"
    c = get_client(str(d), namespace="hf", cache_root=tmp_path / "cache", progress=False)
    g = c.complete("find the weather", max_tokens=5)[0]
    assert isinstance(g, str)
    s1 = c.complete("find the weather", temperature=1.0, seed=3, n=2, max_tokens=6)
    c2 = get_client(str(d), namespace="hf2", cache_root=tmp_path / "cache", progress=False)
    assert c2.complete("find the weather", temperature=1.0, seed=3, n=2, max_tokens=6) == s1    # seeded


# ---------------------------------------------------------------------------------------------
# live smoke: the smallest local GGUF, a few tokens
# ---------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_live_local_smoke(tmp_path):
    pytest.importorskip("xllamacpp")
    try:
        llm_models.gguf_path("smollm2")
    except llm_models.ModelError as e:
        pytest.skip(str(e))
    t = time.time()
    c = get_client("smollm2", backend="local", namespace="smoke", cache_root=tmp_path, n_parallel=1,
                   ctx_per_slot=512, progress=False)
    with c:
        out = c.generate(["List two colors, one per line.", "Name a fruit."], max_tokens=8)
    assert [len(o) for o in out] == [1, 1]
    for (text,) in out:
        assert isinstance(text, str) and text.strip() and "<|im_end|>" not in text
    rec = next(r for r in c.cache().answers())
    assert rec["fin"] in ("stop", "length") and 0 < rec["ntok"] <= 8 and rec["model"] == "smollm2-135m-instruct-q4_1"
    replay = get_client("smollm2", backend="replay", namespace="smoke", cache_root=tmp_path)
    assert replay.generate(["List two colors, one per line.", "Name a fruit."], max_tokens=8) == out
    assert time.time() - t < 120


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------

def test_cli_generate_is_resumable(tmp_path, capsys):
    from toolkit.llm import cli
    out = tmp_path / "o.jsonl"
    args = ["generate", "--prompt", "intents", "--dataset", "toole-multi", "--limit", "4", "--backend", "echo",
            "--cache-dir", str(tmp_path), "--quiet", "--out", str(out)]
    assert cli.main(args) == 0
    assert "0 cached, 4 to generate" in capsys.readouterr().err
    assert cli.main(args[:6] + ["6"] + args[7:]) == 0
    assert "4 cached, 2 to generate" in capsys.readouterr().err
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == [f"m{i}" for i in range(6)]
    assert cli.main(["generate", "--prompt", "intents", "--limit", "7", "--backend", "replay", "--model", "echo",
                     "--cache-dir", str(tmp_path), "--quiet"]) == 2
    assert "replay: no cached answer" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# the committed cache: Re-Invoke intents for all 497 ToolE multi-tool queries, replayed
# ---------------------------------------------------------------------------------------------

def test_committed_reinvoke_intents_replay_all_497():
    from toolkit.llm.prompts import intent_prompt
    from toolkit.llm.tasks import dataset_items
    queries = dataset_items("toole-multi", "queries")
    assert len(queries) == 497
    c = get_client("qwen-1.5b", backend="replay", namespace=INTENTS.namespace, cache_root=paths.PROJECT_DATA / "llm_cache")
    answers = c.generate([intent_prompt(q) for _, q in queries], sampling=INTENTS.sampling)
    parsed = [parsers.parse_intents(a[0]) for a in answers]
    empty = [qid for (qid, _), p in zip(queries, parsed) if not p]
    assert not empty, f"{len(empty)} answers parse to no intent: {empty[:5]}"
    assert sum(len(p) > 1 for p in parsed) > 100          # multi-tool queries: many have several intents
    # Qwen answers one intent per line: the parser must keep every line
    assert all(p == [x.strip() for x in a[0].split("\n") if x.strip()] for p, a in zip(parsed, answers))


def test_cli_module_entry_point_runs():
    env = dict(os.environ)                     # the toolkit comes from the environment (make env installs it)
    out = subprocess.run([sys.executable, "-m", "toolkit.llm.cli", "models"], env=env, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    rows = [json.loads(x) for x in out.stdout.splitlines()]
    assert {r["model_id"] for r in rows} >= {"qwen2.5-coder-1.5b-instruct-q4_k_m", "smollm2-135m-instruct-q4_1"}


def test_default_threads_env_override(monkeypatch):
    from toolkit.llm.backends import default_threads
    monkeypatch.setenv("TOOLKIT_LLM_THREADS", "3")
    assert default_threads() == 3
    monkeypatch.delenv("TOOLKIT_LLM_THREADS")
    assert 1 <= default_threads() <= (os.cpu_count() or 1)


def test_default_threads_count_the_cores_busy_now_not_the_lagging_load_average(monkeypatch, tmp_path):
    """A job that just ended still weighs on the 1-minute load average; the /proc/stat sample does not."""
    from toolkit.llm import backends as B
    monkeypatch.delenv("TOOLKIT_LLM_THREADS", raising=False)
    monkeypatch.setattr(B.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(B.os, "getloadavg", lambda: (2.0, 2.0, 2.0))          # the lagging average: all busy
    stats = iter(["cpu  100 0 0 900 0 0 0 0 0 0\n", "cpu  110 0 0 1090 0 0 0 0 0 0\n"])   # 10 of 200 ticks busy
    real_open = open
    monkeypatch.setattr("builtins.open", lambda f, *a, **k: __import__("io").StringIO(next(stats))
                        if f == "/proc/stat" else real_open(f, *a, **k))
    monkeypatch.setattr(B.time, "sleep", lambda s: None)
    assert B.busy_cores() == pytest.approx(0.1)                              # 10 of 200 ticks x 2 cores
    stats = iter(["cpu  100 0 0 900 0 0 0 0 0 0\n", "cpu  110 0 0 1090 0 0 0 0 0 0\n"])
    assert B.default_threads() == 2                                          # the load average said 2 busy
    stats = iter(["cpu  100 0 0 900 0 0 0 0 0 0\n", "cpu  200 0 0 1000 0 0 0 0 0 0\n"])   # half the ticks busy
    assert B.default_threads() == 1


def test_prompt_user_text_joins_only_user_turns():
    from toolkit.llm.cache import prompt_user_text
    assert prompt_user_text("plain prompt") == "plain prompt"
    chat = [{"role": "system", "content": "sys"}, {"role": "user", "content": "a"},
            {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}]
    assert prompt_user_text(chat) == "a\nc"
    assert prompt_user_text(None) == ""


def test_speculative_setting_is_checked():
    from toolkit.llm.backends import parse_speculative
    assert parse_speculative(None) is None and parse_speculative("none") is None
    assert parse_speculative("ngram-simple") == "ngram-simple"
    assert parse_speculative("draft:qwen-0.5b") == "draft:qwen-0.5b"
    for bad in ("draft:", "ngram", "eagle"):
        with pytest.raises(ValueError, match="speculative must be one of"):
            parse_speculative(bad)
