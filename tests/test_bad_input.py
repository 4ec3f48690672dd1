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


# --- bug 2 and the runner's weak spots -----------------------------------------------------------

def test_profile_is_not_an_ordinary_notebook_parameter():
    from toolkit.runner import check_parameters, notebook_path
    with pytest.raises(ValueError, match=r"use --profile smoke instead of -p profile=smoke"):
        check_parameters(notebook_path("00_datasets"), {"profile": "smoke"})


def test_none_does_not_skip_the_type_check():
    from toolkit.runner import check_parameters, fold_overrides, notebook_path
    with pytest.raises(TypeError, match=r"parameter 'stopwords' must be bool .* got None"):
        check_parameters(notebook_path("00_datasets"), {"stopwords": None})
    # a notebook kept by a config object: -p k=None reaches its config's check before anything runs
    with pytest.raises(TypeError, match=r"01_baselines parameter 'k' must be int .* got None"):
        fold_overrides(notebook_path("01_baselines"), {"k": None}, "smoke")


def test_ambiguous_prefix_names_the_candidates_and_paths_stay_inside_notebooks():
    from toolkit.runner import notebook_path
    with pytest.raises(FileNotFoundError, match=r"'0' matches several notebooks: 00_datasets, 01_baselines"):
        notebook_path("0")
    for bad in ("../README", "/etc/passwd", "../../x.ipynb", ".hidden"):
        with pytest.raises(FileNotFoundError, match="is not a notebook name"):
            notebook_path(bad)


# --- bug 1: k <= 0, and k below a metric's cut-off -------------------------------------------------

def _cli(*argv):
    from toolkit.__main__ import main
    return main(list(argv))


@pytest.mark.parametrize("k", ["0", "-3"])
def test_evaluate_rejects_a_non_positive_depth(k, capsys):
    with pytest.raises(SystemExit) as e:
        _cli("evaluate", "--dataset", "toole-multi", "--retriever", "bm25", "--k", k)
    assert e.value.code == 2 and "must be a positive integer" in capsys.readouterr().err


def test_evaluate_refuses_a_depth_below_the_metric_cutoff_before_retrieving(capsys, monkeypatch):
    import toolkit.data
    monkeypatch.setattr(toolkit.data, "load_dataset", lambda *a, **k: pytest.fail("loaded data before checking"))
    assert _cli("evaluate", "--dataset", "toole-multi", "--retriever", "bm25", "--k", "3", "--metrics", "ndcg@5") == 2
    assert "k=3 is below the cut-off of ndcg@5" in capsys.readouterr().err
    assert _cli("evaluate", "--dataset", "toole-multi", "--retriever", "bm25", "--metrics", "ndgc@5") == 2
    assert "unknown or malformed metric 'ndgc@5'" in capsys.readouterr().err


def test_notebook_loop_and_retrieve_reject_k_zero():
    from toolkit.data import load_dataset
    from toolkit.experiment import evaluate_grid
    from toolkit.retrieval import build_retriever, retrieve
    ds = load_dataset("toole-multi").sample(3)
    with pytest.raises(ValueError, match="k must be a positive integer"):
        evaluate_grid({"x": ds}, {"BM25": lambda: build_retriever("bm25")}, ["ndcg@5"], k=0, log=None)
    with pytest.raises(ValueError, match="positive integer"):
        retrieve(ds, build_retriever("bm25"), k=0)


@pytest.mark.parametrize("argv,needle", [
    (["--limit", "0"], "must be a positive integer"),
    (["--limit", "-5"], "must be a positive integer"),
])
def test_evaluate_rejects_bad_limits(argv, needle, capsys):
    with pytest.raises(SystemExit):
        _cli("evaluate", "--dataset", "toole-multi", "--retriever", "bm25", *argv)
    assert needle in capsys.readouterr().err


def test_retriever_parameter_of_the_wrong_type_is_named(capsys):
    assert _cli("evaluate", "--dataset", "toole-multi", "--retriever", "bm25", "-r", "k1=abc") == 2
    assert "retriever 'bm25': parameter 'k1' must be float" in capsys.readouterr().err


# --- the LLM command line and cache names ---------------------------------------------------------

@pytest.mark.parametrize("argv,needle", [
    (["--limit", "0"], "--limit: must be a positive integer"), (["--limit", "-2"], "--limit: must be a positive integer"),
    (["--offset", "-5"], "--offset: must be an integer >= 0"), (["--n", "0"], "--n: must be a positive integer"),
])
def test_llm_generate_rejects_bad_counts(argv, needle, capsys):
    from toolkit.llm import cli
    with pytest.raises(SystemExit):
        cli.main(["generate", "--prompt", "intents", "--backend", "replay", *argv])
    assert needle in capsys.readouterr().err


@pytest.mark.parametrize("namespace", ["..", ".", "../../etc", ""])
def test_cache_names_stay_inside_the_cache_root(tmp_path, namespace):
    with pytest.raises(ValueError, match="must be a plain name"):
        ResponseCache(tmp_path / "root", namespace, "echo")
    assert not (tmp_path / "echo.jsonl").exists()


def test_an_echoed_api_key_never_reaches_the_cache(tmp_path, monkeypatch):
    secret = "sk-test-0123456789abcdef"
    monkeypatch.setenv("TOOLKIT_LLM_API_KEY", secret)
    llm = LLMClient(EchoBackend(answer_fn=lambda r: f"my key is {secret}, ok"), cache_root=tmp_path, namespace="ns")
    assert llm.generate(["hi"])[0][0] == "my key is ***, ok"
    assert secret not in llm.cache("ns").path.read_text()


# --- compare: a selection that names nothing is an error; failed runs are flagged -----------------

@pytest.mark.parametrize("argv,needle", [
    (["--paper", "reinvoke", "--table", "99"], "no table '99' in the paper numbers of reinvoke; tables: 1,"),
    (["--notebook", "99_nothing"], "no results for notebook '99_nothing'"),
    (["--profile", "../../x"], "unknown profile '../../x'; profiles: smoke, standard, paper"),
])
def test_compare_refuses_unknown_selections(argv, needle, capsys):
    from toolkit.__main__ import main
    assert main(["compare", *argv]) == 2
    assert needle in capsys.readouterr().err


def test_failed_run_is_marked_and_compare_says_so(tmp_path, monkeypatch, capsys):
    import shutil

    from toolkit import runner
    from toolkit.compare import main as compare_main
    from toolkit.paths import RESULTS
    monkeypatch.setenv("TOOLKIT_RESULTS", str(tmp_path))
    shutil.copytree(RESULTS / "00_datasets", tmp_path / "00_datasets")
    import papermill
    monkeypatch.setattr(papermill, "execute_notebook", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("cell 3 failed")))
    assert runner.run(["00_datasets"], "standard", stream=open("/dev/null", "w")) == 1
    marker = tmp_path / "00_datasets" / "standard.failed"
    assert marker.is_file() and "cell 3 failed" in marker.read_text()
    compare_main(["--notebook", "00_datasets"])
    assert "the last standard run of 00_datasets FAILED" in capsys.readouterr().err
    monkeypatch.setattr(papermill, "execute_notebook", lambda *a, **k: None)
    assert runner.run(["00_datasets"], "standard", stream=open("/dev/null", "w")) == 0 and not marker.exists()
    # a parameter error is not a failed run: nothing executed, nothing marked
    with pytest.raises(ValueError):
        runner.run(["00_datasets"], "standard", {"nonsense": 1}, stream=open("/dev/null", "w"))
    assert not marker.exists()


# --- evaluate(): silent zeros become warnings ------------------------------------------------------

def test_evaluate_warns_on_an_empty_or_disjoint_run():
    from toolkit.metrics import evaluate
    qrels = {"q1": {"d1": 1}, "q2": {"d2": 1}}
    with pytest.warns(RuntimeWarning, match="the run is empty"):
        assert evaluate({}, qrels, "ndcg@5")["ndcg@5"] == 0.0
    with pytest.warns(RuntimeWarning, match=r"answers none of the 2 qrels queries \(1 run queries, 0 shared"):
        evaluate({"other": {"d1": 1.0}}, qrels, "ndcg@5")
    import warnings
    with warnings.catch_warnings():          # a run that answers some queries is normal (BM25 finds nothing for some)
        warnings.simplefilter("error")
        evaluate({"q1": {"d1": 1.0}}, qrels, "ndcg@5")


def test_retrieve_warns_about_blank_queries():
    from toolkit.data.contract import Document, Query, RetrievalDataset
    from toolkit.retrieval import build_retriever, retrieve
    ds = RetrievalDataset("tiny", {"d": Document("d", "c", "t", "a", "weather api")},
                          {"q1": Query("q1", "   "), "q2": Query("q2", "weather")}, {"q1": {"d": 1}, "q2": {"d": 1}})
    with pytest.warns(RuntimeWarning, match=r"1 of 2 queries of 'tiny' have blank text \(first: 'q1'\)"):
        retrieve(ds, build_retriever("bm25"), k=5)


# --- loaders with the checksum off: damaged files are named, dropped queries counted ---------------

def _release_dir(tmp_path, qrels_text):
    d = tmp_path / "G1"
    d.mkdir()
    doc = json.dumps({"category_name": "Data", "tool_name": "t", "api_name": "a", "api_description": "x"})
    (d / "corpus.tsv").write_text(f"docid\tdocument_content\n1\t{doc}\n")
    (d / "test.query.txt").write_text("q1\tfirst query\nq2\tsecond query\n")
    (d / "qrels.test.tsv").write_text(qrels_text)
    return d


def test_truncated_release_qrels_names_file_and_line(tmp_path):
    from toolkit.data import load_retrieval_dir
    d = _release_dir(tmp_path, "q1\t0\t1\t1\nq2\t0\t1")          # the last line lost its label
    with pytest.raises(ValueError, match=r"qrels.test.tsv:2: expected 'qid<TAB>0<TAB>docid<TAB>label'"):
        load_retrieval_dir(d)


def test_queries_without_qrels_are_counted_not_silently_dropped(tmp_path, capsys):
    from toolkit.data import load_retrieval_dir
    d = _release_dir(tmp_path, "q1\t0\t1\t1\n")
    with pytest.warns(RuntimeWarning, match=r"1 of 2 queries have no relevant document .* \(first: 'q2'\)"):
        ds = load_retrieval_dir(d)
    assert list(ds.queries) == ["q1"] and "dropped 1 of 2 queries" in capsys.readouterr().out


def test_toollens_record_without_text_names_file_line_and_field(tmp_path, monkeypatch):
    import shutil

    from toolkit.data import load_toollens
    from toolkit.data import sources
    from toolkit.paths import data_dir
    src = data_dir() / "toollens"
    dst = tmp_path / "toollens"
    shutil.copytree(src, dst)
    (dst / "queries.jsonl").chmod(0o644)
    lines = (dst / "queries.jsonl").read_text().splitlines()
    lines[2] = json.dumps({"_id": json.loads(lines[2])["_id"], "metadata": {}})
    (dst / "queries.jsonl").write_text("\n".join(lines) + "\n")
    monkeypatch.setenv("TOOLKIT_DATA", str(tmp_path))
    monkeypatch.setattr(sources, "_verified", lambda *a: True)          # the checksum check is off
    with pytest.raises(ValueError, match=r"queries.jsonl:3: record has no field 'text'"):
        load_toollens("test")
