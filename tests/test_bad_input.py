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


# --- bug 5: fetch without a network: a clear message, no debris, the right advice -----------------

@pytest.fixture
def one_file_manifest(tmp_path, monkeypatch):
    from toolkit.data import sources
    entries = {"toole.single": {**sources.manifest()["toole.single"], "url": "http://127.0.0.1:9/nothing.json"},
               "toolbench.library": sources.manifest()["toolbench.library"]}
    monkeypatch.setattr(sources, "manifest", lambda: entries)
    return tmp_path


def test_fetch_without_network_names_file_and_url_and_leaves_nothing(one_file_manifest):
    from toolkit.data import sources
    dest = one_file_manifest / "raw"
    for _ in range(2):
        with pytest.raises(sources.DataFileError, match=r"could not download toole.single from http://127.0.0.1:9"):
            sources.fetch(["toole.single"], dest=dest)
    assert [p for p in dest.rglob("*") if p.is_file()] == []              # no temporary files left


def test_fetch_of_a_derived_file_says_copy_not_fetch(one_file_manifest, monkeypatch):
    from toolkit.data import sources
    with pytest.raises(sources.DataFileError, match="derived from other files and has no download URL"):
        sources.fetch(["toolbench.library"], dest=one_file_manifest)
    skipped = []
    library = sources.manifest()["toolbench.library"]
    monkeypatch.setattr(sources, "manifest", lambda: {"toolbench.library": library})
    assert sources.fetch(None, dest=one_file_manifest, skipped=skipped) == [] and "copy it" in skipped[0]


def test_corrupt_derived_file_is_not_advised_to_be_fetched(tmp_path, monkeypatch):
    from toolkit.data import sources
    lib = tmp_path / "toolbench" / "library" / "apis.jsonl"
    lib.parent.mkdir(parents=True)
    lib.write_text("{}\n")
    monkeypatch.setenv("TOOLKIT_DATA", str(tmp_path))
    with pytest.raises(sources.DataFileError) as e:
        sources.data_file("toolbench/library/apis.jsonl")
    assert "corrupt" in str(e.value) and "fetch" not in str(e.value) and "copy it" in str(e.value)
