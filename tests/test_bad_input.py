"""Bad input and faults, one probe per test (issue 19): each reproduces what a careless user or a
failing machine does, and checks the suite answers with a clear error naming the file, field or
parameter, or recovers without losing anything."""
from __future__ import annotations

import json

import pytest

from toolkit.llm.backends import EchoBackend
from toolkit.llm.cache import ResponseCache
from toolkit.llm.client import LLMClient


# --- bug 3: concurrent generation must use the answer the cache keeps -----------------------------

def test_concurrent_generation_uses_the_answer_the_cache_kept(tmp_path):
    first = LLMClient(EchoBackend(answer_fn=lambda r: "first"), cache_root=tmp_path, namespace="ns")

    def slow_second(req):
        # while this process is generating, another one stores its answer for the same prompt
        first.generate(["same prompt"])
        return "second"

    second = LLMClient(EchoBackend(answer_fn=slow_second), cache_root=tmp_path, namespace="ns")
    got = second.generate(["same prompt"])[0][0]
    assert got == "first"                                       # what the cache holds, not "second"
    replay = ResponseCache(tmp_path, "ns", "echo", readonly=True)
    assert [a["text"] for a in replay.answers()] == ["first"]


# --- bug 4: one damaged prefix line must not make the whole cache unreadable ---------------------

def _write_cache(tmp_path, n=3):
    llm = LLMClient(EchoBackend(answer_fn=lambda r: "answer " + r.messages()[-1]["content"][-1]),
                    cache_root=tmp_path, namespace="ns")
    head = "Long shared instructions. " * 20              # >= 256 characters: stored once as a prefix
    prompts = [head + f"item {i}" for i in range(n)]
    llm.generate(prompts)
    return llm.cache("ns").path, prompts


def test_damaged_prefix_line_is_skipped_and_reported_with_file_and_line(tmp_path):
    path, prompts = _write_cache(tmp_path)
    lines = path.read_text().splitlines()
    xline = next(i for i, l in enumerate(lines) if json.loads(l)["t"] == "x")
    lines[xline] = lines[xline][:25]                          # the prefix record is cut
    path.write_text("\n".join(lines) + "\n")
    cache = ResponseCache(tmp_path, "ns", "echo", readonly=True)
    assert cache.damaged and cache.damaged[0].startswith(f"{path}:{xline + 1}:")
    # the prompts that needed that prefix are reported too, everything else is served
    assert any("prefix" in d for d in cache.damaged)
    assert cache.stats()["damaged_lines"] == cache.damaged
    assert len(list(cache.answers())) >= 1
    first = [{"role": "user", "content": prompts[0]}]
    ans = cache.get("chat", first, EchoBackend().model_id and LLMClient(EchoBackend()).sampling.key(), 0)
    assert ans is not None and ans.text == "answer 0"         # its prompt record is self-contained


def test_llm_stats_lists_damaged_lines(tmp_path, capsys):
    from toolkit.llm import cli
    path, _ = _write_cache(tmp_path)
    with open(path, "a") as f:
        f.write('{"t": "p", "id": "zz", "kind": "chat", "x": "missing", "rest": "]"}\n')
    assert cli.main(["stats", "--cache-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "1 damaged lines skipped" in out and f"{path}:" in out and "missing" in out
