"""Paper numbers (data/paper_numbers/*.yaml) and toolkit.compare."""
from __future__ import annotations

import json
import re
from decimal import Decimal

import pandas as pd
import pytest
import yaml

from toolkit import compare, paths

PAPER_DIR = paths.PROJECT_DATA / "paper_numbers"
PAPERS_MD = paths.REPO.parent / "shared" / "papers"
needs_papers = pytest.mark.skipif(not PAPERS_MD.is_dir(), reason="paper texts (../shared/papers) not available")


# ---------------------------------------------------------------------------------------------
# the four real files

@pytest.mark.parametrize("paper", compare.PAPERS)
def test_paper_file_loads_and_is_valid(paper):
    path = PAPER_DIR / f"{paper}.yaml"
    rows = compare.load_paper_file(path)          # validates: fields, scales, numbers, duplicates
    assert rows, paper
    doc = yaml.safe_load(path.read_text())
    assert doc["paper"] == paper
    for key, table in doc["tables"].items():
        assert isinstance(key, str), f"{paper}: table key {key!r} must be quoted"
        assert table["scale"] in compare.SCALES
        keys = [(c["dataset"], c["method"], c["metric"]) for c in table["cells"]]
        assert len(keys) == len(set(keys)), (paper, key)
        for c in table["cells"]:
            assert c.get("scale", table["scale"]) in compare.SCALES


def test_all_papers_and_expected_tables_present():
    df = compare.load_paper_numbers()
    assert list(dict.fromkeys(df["paper"])) == list(compare.PAPERS)
    tables = df.groupby("paper")["table"].agg(lambda s: set(s))
    assert {"1", "2", "3", "4", "5", "6", "7", "s4.2", "s4.4"} <= tables["toolrerank"]
    assert {"1", "2", "3", "4", "5", "6", "7"} <= tables["iterative_feedback"]
    assert {"1", "2", "3A", "3B", "3C", "3D", "4", "5", "6"} <= tables["reinvoke"]
    assert {"1", "2", "3", "4", "5"} <= tables["querygen"]
    # the full grids
    size = df.groupby(["paper", "table"]).size()
    assert size[("toolrerank", "3")] == 6 * 9 * 2
    assert size[("reinvoke", "6")] == 5 * 10 * 4
    assert size[("iterative_feedback", "2")] == 5 * 4 * 3
    assert size[("querygen", "1")] == 2 * 5 * 4


def test_canonical_names_are_documented():
    readme = (PAPER_DIR / "README.md").read_text()
    df = compare.load_paper_numbers()
    for field in ("dataset", "metric"):
        for name in set(df[field]):
            assert name in readme, f"{field} {name!r} is not in data/paper_numbers/README.md"
    for name in set(df["method"]):
        assert f"`{name}`" in readme, f"method {name!r} is not in data/paper_numbers/README.md"


def _md_numbers(text: str) -> set[Decimal]:
    out = set()
    for tok in re.findall(r"-?\d[\d,]*(?:\.\d+)?", text):
        tok = tok.replace(",", "")
        try:
            out.add(Decimal(tok))
        except Exception:  # pragma: no cover
            pass
    return out


@needs_papers
@pytest.mark.parametrize("paper", compare.PAPERS)
def test_every_printed_value_occurs_in_the_paper_text(paper):
    numbers = _md_numbers((PAPERS_MD / f"{paper}.md").read_text())
    df = compare.load_paper_numbers(paper)
    absent = [f"{r.table}/{r.dataset}/{r.method}/{r.metric}={r.printed}"
              for r in df.itertuples() if Decimal(repr(r.printed)) not in numbers]
    assert not absent, absent


# --- row-level spot checks: re-parse a table row of the .md and compare with the YAML ---------

def _row(md: str, startswith: str, after: str | None = None) -> list[Decimal]:
    """Numbers of the first line starting with ``startswith`` (after the line containing ``after``)."""
    lines = md.splitlines()
    start = 0
    if after is not None:
        start = next(i for i, l in enumerate(lines) if after in l)
    for line in lines[start:]:
        clean = re.sub(r"</?b>", "", line)
        if clean.startswith(startswith):
            rest = clean[len(startswith):]
            return [Decimal(t.rstrip("%s").replace(",", "")) for t in re.split(r"[|\t ]+", rest)
                    if re.fullmatch(r"-?\d[\d,]*(?:\.\d+)?[%s]?", t)]
    raise AssertionError(f"no line starting with {startswith!r}")


def _yaml_row(paper, table, method, datasets, metrics):
    out = []
    for d in datasets:
        for m in metrics:
            out.append(Decimal(repr(compare.paper_value(paper, table, d, method, m, printed=True))))
    return out


TR_GROUPS = ["toolbench-g1-instruction", "toolbench-g2-instruction", "toolbench-g3-instruction", "seen-avg",
             "toolbench-g1-tool", "toolbench-g1-category", "toolbench-g2-category", "unseen-avg", "all-avg"]


@needs_papers
@pytest.mark.parametrize("method", ["BM25", "DPR", "Rerank-10", "Rerank-30", "Rerank-50", "ToolRerank"])
def test_toolrerank_table3_rows(method):
    md = (PAPERS_MD / "toolrerank.md").read_text()
    printed = _row(md, f"| {method} ")
    assert printed == _yaml_row("toolrerank", "3", method, TR_GROUPS, ["ndcg@5", "recall@5"])


@needs_papers
def test_toolrerank_table6_and_text_statistics():
    md = (PAPERS_MD / "toolrerank.md").read_text()
    ds = ["toolbench-g1-instruction", "toolbench-g1-tool", "toolbench-g1-category", "single-avg",
          "toolbench-g2-instruction", "toolbench-g3-instruction", "toolbench-g2-category", "multi-avg", "all-avg"]
    assert _row(md, "| ToolRerank <sub>none</sub>") == _yaml_row("toolrerank", "6", "ToolRerank (none)", ds, ["recall@5"])
    assert "majority (91.9%)" in md and compare.paper_value("toolrerank", "s4.2", "seen", "DPR", "gold_in_top10") == 0.919
    assert "(70.2%)" in md and compare.paper_value("toolrerank", "s4.2", "unseen", "DPR", "gold_in_top10") == 0.702
    assert "is 93.3%" in md and compare.paper_value("toolrerank", "s4.4", "all-avg", "classifier", "accuracy") == 0.933
    assert "(2.6%)" in md and "(7.7%)" in md
    assert "169,287" in md and compare.paper_value("toolrerank", "1", "toolbench-all", "train", "queries") == 169287


@needs_papers
def test_reinvoke_rows():
    md = (PAPERS_MD / "reinvoke.md").read_text()
    ds5 = ["toolbench-i1", "toolbench-i2", "toolbench-i3", "toole-single", "toole-multi"]
    assert _row(md, "Sparse\tBM25\t-", after="Retrieval\tMethod\tBackbone LLM") == \
        _yaml_row("reinvoke", "1", "BM25", ds5, ["ndcg@5"])
    assert _row(md, "\tRe-Invoke w/ Vertex AI (ours)\tgpt-3.5-turbo", after="Retrieval\tMethod\tBackbone LLM") == \
        _yaml_row("reinvoke", "1", "Re-Invoke (dense) [gpt-3.5-turbo]", ds5, ["ndcg@5"])
    assert _row(md, "Maximum similarity score") == _yaml_row("reinvoke", "3D", "Max similarity", ds5, ["ndcg@5"])
    # Table 6, ToolE multi-tool block: the first line carries the dataset label
    assert _row(md, "ToolE multi-tool\tSparse\tBM25\t-") == \
        _yaml_row("reinvoke", "6", "BM25", ["toole-multi"], ["ndcg@1", "ndcg@5", "recall@1", "recall@5"])
    assert _row(md, "\tDense\tVertex AI\t-", after="ToolE multi-tool\tSparse") == \
        _yaml_row("reinvoke", "6", "Dense", ["toole-multi"], ["ndcg@1", "ndcg@5", "recall@1", "recall@5"])
    assert _row(md, "ToolBench I1\t", after="Dataset name\tNumber of queries") == \
        _yaml_row("reinvoke", "5", "test", ["toolbench-i1"], ["queries", "tools", "labeled_pairs"])
    # the paper's own Table 1 / Table 6 disagreement is kept as printed
    assert compare.paper_value("reinvoke", "1", "toolbench-i1", "BM25", "ndcg@5") == 0.3475
    assert compare.paper_value("reinvoke", "6", "toolbench-i1", "BM25", "ndcg@5") == 0.3588


@needs_papers
def test_iterative_feedback_rows():
    md = (PAPERS_MD / "iterative_feedback.md").read_text()
    ds = ["toolbench-i1", "toolbench-i2", "toolbench-i3", "toolbench-all"]
    assert _row(md, "Ours ", after="Methods Single-tool (I1)") == \
        _yaml_row("iterative_feedback", "2", "Ours", ds, ["ndcg@1", "ndcg@3", "ndcg@5"])
    assert _row(md, "UltraTools ", after="scenarios # instructions") == \
        _yaml_row("iterative_feedback", "1", "test", ["ultratool"], ["queries", "tools"])
    assert _row(md, "3 ", after="Iteration N@1 N@3 N@5 N@10 Efficiency") == \
        _yaml_row("iterative_feedback", "5", "Ours (T=3)", ["toolbench-i2"],
                  ["ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10", "seconds_per_instruction"])
    assert compare.paper_value("iterative_feedback", "5", "toolbench-i2", "Ours (T=1)", "seconds_per_instruction") == 6.12


@needs_papers
def test_querygen_rows():
    md = (PAPERS_MD / "querygen.md").read_text()
    methods = ["Utterance", "Zero-Shot", "SFT", "Alignment"]
    printed = _row(md, "Recall@5 |", after="Metric | No Gen.")
    assert printed == [Decimal(repr(compare.paper_value("querygen", "1", "querygen-in-domain", m, "recall@5", printed=True)))
                       for m in methods]
    printed = _row(md, "MMRR |", after="Out-Of-Domain Evaluation")
    assert printed == [Decimal(repr(compare.paper_value("querygen", "1", "querygen-out-of-domain", m, "mmrr", printed=True)))
                       for m in methods]
    printed = _row(md, "Recall@3 |", after="Metric | Delta wrt. Adding Utterance")
    assert printed == [Decimal(repr(compare.paper_value("querygen", "2", "querygen-in-domain", m, "delta_recall@3", printed=True)))
                       for m in ["Zero-Shot (-utt)", "SFT (-utt)", "Alignment (-utt)"]]
    # mixed scales within one table: fractions stay, percentages are divided by 100
    assert compare.paper_value("querygen", "1", "querygen-in-domain", "SFT", "mmrr") == 0.737
    assert compare.paper_value("querygen", "1", "querygen-in-domain", "SFT", "recall@5") == pytest.approx(0.8729)


def test_lost_values_are_listed():
    doc = yaml.safe_load((PAPER_DIR / "querygen.yaml").read_text())
    lost = {t: [x["what"] for x in doc["tables"][t].get("lost", [])] for t in doc["tables"]}
    assert any("temperature" in w for w in lost["A.1"])
    assert any("learning rate" in w for w in lost["A.2"])
    doc = yaml.safe_load((PAPER_DIR / "toolrerank.yaml").read_text())
    assert doc["tables"]["fig1a"]["cells"] == [] and doc["tables"]["fig1a"]["lost"]


# ---------------------------------------------------------------------------------------------
# validation errors

GOOD = """\
paper: fake
citation: "x"
tables:
  "1":
    caption: "c"
    source: "fake.md Table 1"
    scale: percent
    cells:
      - {dataset: toole-single, method: BM25, metric: ndcg@5, value: 37.35}
      - {dataset: toole-multi, method: BM25, metric: ndcg@5, value: 26.35}
"""


def _write(tmp_path, text, name="fake.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_valid_fake_file_and_percent_conversion(tmp_path):
    rows = compare.load_paper_file(_write(tmp_path, GOOD))
    assert [r["value"] for r in rows] == [0.3735, 0.2635]
    assert [r["printed"] for r in rows] == [37.35, 26.35]
    df = compare.load_paper_numbers(directory=tmp_path)
    assert list(df.columns[:8]) == ["paper", "table", "dataset", "method", "metric", "value", "printed", "scale"]
    assert compare.paper_value("fake", 1, "toole-single", "BM25", "ndcg@5", directory=tmp_path) == 0.3735
    assert compare.paper_value("fake", "1", "toole-single", "BM25", "ndcg@5", printed=True, directory=tmp_path) == 37.35


@pytest.mark.parametrize("mutate, message", [
    (lambda s: s.replace(", value: 26.35}", "}"), r"table '1': cell #2 \(toole-multi/BM25/ndcg@5\): missing field\(s\) \['value'\]"),
    (lambda s: s.replace("toole-multi", "toole-single"), r"cell #2 \(toole-single/BM25/ndcg@5\): duplicate cell"),
    (lambda s: s.replace("26.35", "'26.35'"), r"cell #2 .*value must be a finite number"),
    (lambda s: s.replace("26.35", "n/a"), r"cell #2 .*value must be a finite number"),
    (lambda s: s.replace("26.35", "true"), r"value must be a finite number"),
    (lambda s: s.replace("scale: percent", "scale: percents"), r"table '1': unknown scale 'percents'"),
    (lambda s: s.replace('    caption: "c"\n', ""), r"table '1': missing field\(s\) \['caption'\]"),
    (lambda s: s.replace("metric: ndcg@5, value: 26.35", "metric: nDCG@5, value: 26.35"), r"metric must be lowercase"),
    (lambda s: s.replace("value: 26.35}", "value: 26.35, vlaue: 1}"), r"unknown field\(s\) \['vlaue'\]"),
    (lambda s: s + '  "1":\n    caption: "again"\n', r"duplicate key '1'"),
    (lambda s: s.replace("paper: fake", "paper: other"), r"paper is 'other'"),
])
def test_validation_errors_name_file_table_and_cell(tmp_path, mutate, message):
    with pytest.raises(compare.PaperNumbersError, match=message) as exc:
        compare.load_paper_file(_write(tmp_path, mutate(GOOD)))
    assert "fake.yaml" in str(exc.value)


# ---------------------------------------------------------------------------------------------
# compare on a fake results directory

def _results(tmp_path, notebook, cells, profile="standard"):
    d = tmp_path / "results" / notebook
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{profile}.json").write_text(json.dumps({"notebook": notebook, "profile": profile, "cells": cells}))


def _cell(paper, table, dataset, method, metric, value, **kw):
    return dict(paper=paper, table=table, dataset=dataset, method=method, metric=metric, value=value, **kw)


@pytest.fixture
def fake_results(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "RESULTS", tmp_path / "results")
    _results(tmp_path, "01_baselines", [
        _cell("reinvoke", "1", "toole-single", "BM25", "ndcg@5", 0.3712, n_queries=20550),   # OK (-0.0023)
        _cell("reinvoke", "1", "toole-multi", "BM25", "ndcg@5", 0.2000, n_queries=497,       # DIFF
              note="k1=1.2"),
        _cell("reinvoke", "1", "toole-multi", "BM-25", "ndcg@5", 0.2000),                    # unmatched
        _cell("reinvoke", "1", "toole-multi", "Re-Invoke (dense) [qwen-0.5b]", "ndcg@5", 0.5,  # our own row
              ours_only=True),
        _cell("toolrerank", "3", "all-avg", "ToolRerank", "recall@5", 0.8440),               # percent paper: 84.2 -> OK
        _cell("toolrerank", "3", "all-avg", "DPR", "recall@5", 0.80),                        # 75.2 -> DIFF +0.048
        _cell("reinvoke", "5", "toole-single", "test", "queries", 20550),                    # count, exact
        {"dataset": "x", "method": "y", "metric": "z", "value": 1.0},                       # our-only number
        _cell("iterative_feedback", "fig2", "toole-single", "test", "words_mean", 20.5),     # figure-only table
    ])
    _results(tmp_path, "02_other", [_cell("reinvoke", 1, "toole-single", "BM25", "ndcg@5", 0.9)])
    _results(tmp_path, "01_baselines", [_cell("reinvoke", "1", "toole-single", "BM25", "ndcg@5", 0.1)], profile="smoke")
    return tmp_path


def test_load_results(fake_results):
    r = compare.load_results("standard")
    assert len(r) == 10 and set(r["notebook"]) == {"01_baselines", "02_other"}
    assert set(r["table"].dropna()) == {"1", "3", "5", "fig2"}            # int table keys become strings
    assert len(compare.load_results("standard", notebooks=["02_other"])) == 1
    assert len(compare.load_results("smoke")) == 1


def test_papers_own_notebook_wins_a_duplicated_cell(fake_results):
    # 01_baselines sorts first by name, but a Re-Invoke table's baseline rows must come from the
    # Re-Invoke notebook, whose corpus and settings its method rows share.
    _results(fake_results, "20_reinvoke", [_cell("reinvoke", "1", "toole-multi", "BM25", "ndcg@5", 0.2635)])
    df = compare.compare("standard")
    row = df[(df.paper == "reinvoke") & (df.table == "1") & (df.dataset == "toole-multi") & (df.method == "BM25")]
    assert len(row) == 1
    row = row.iloc[0]
    assert (row.notebook, row.also_in, row.status) == ("20_reinvoke", "01_baselines", "OK")
    # a cell no paper-named notebook produced keeps the first notebook by name
    single = df[(df.dataset == "toole-single") & (df.method == "BM25") & (df.table == "1")].iloc[0]
    assert (single.notebook, single.also_in) == ("01_baselines", "02_other")
    assert "the paper's own notebook shown" in compare.render(df)


def test_compare_statuses(fake_results):
    df = compare.compare("standard")
    assert list(df.columns) == compare.COMPARE_COLUMNS

    def get(paper, table, dataset, method, metric):
        m = ((df.paper == paper) & (df.table == table) & (df.dataset == dataset)
             & (df.method == method) & (df.metric == metric))
        assert m.sum() == 1
        return df[m].iloc[0]

    ok = get("reinvoke", "1", "toole-single", "BM25", "ndcg@5")
    assert ok.status == "OK" and ok["diff"] == pytest.approx(-0.0023) and ok.notebook == "01_baselines"
    assert ok.also_in == "02_other"
    assert get("reinvoke", "1", "toole-multi", "BM25", "ndcg@5").status == "DIFF"
    pct = get("toolrerank", "3", "all-avg", "ToolRerank", "recall@5")
    assert pct.status == "OK" and pct.paper_value == pytest.approx(0.842) and pct.printed == 84.2
    dpr = get("toolrerank", "3", "all-avg", "DPR", "recall@5")
    assert dpr.status == "DIFF" and dpr["diff"] == pytest.approx(0.048)
    assert get("reinvoke", "5", "toole-single", "test", "queries").status == "OK"
    assert get("reinvoke", "1", "toole-multi", "BM-25", "ndcg@5").status == "unmatched"
    assert get("iterative_feedback", "fig2", "toole-single", "test", "words_mean").status == "lost"
    missing = get("reinvoke", "1", "toolbench-i1", "Dense", "ndcg@5")
    assert missing.status == "missing" and pd.isna(missing.ours)

    s = compare.summarize(df)
    n_paper = len(compare.load_paper_numbers())
    assert s == {"reproduced": 5, "ok": 3, "diff": 2, "missing": n_paper - 5, "unmatched": 1, "lost": 1,
                 "ours_only": 1}
    assert get("reinvoke", "1", "toole-multi", "Re-Invoke (dense) [qwen-0.5b]", "ndcg@5").status == "ours only"
    # a tighter tolerance turns the -0.0023 and the +0.002 into DIFFs; the exact count stays OK
    assert compare.summarize(compare.compare("standard", tolerance=0.001))["ok"] == 1


def test_compare_filters(fake_results):
    df = compare.compare("standard", paper="reinvoke", table=1)
    assert set(df.paper) == {"reinvoke"} and set(df.table) == {"1"}
    assert compare.summarize(df) == {"reproduced": 2, "ok": 1, "diff": 1, "missing": 48, "unmatched": 1, "lost": 0,
                                     "ours_only": 1}
    df = compare.compare("smoke", paper="reinvoke", table="1")
    assert compare.summarize(df)["diff"] == 1


def test_cli_text_and_json(fake_results, capsys):
    assert compare.main(["--paper", "reinvoke", "--table", "1"]) == 0
    out = capsys.readouterr().out
    assert "== reinvoke table 1" in out
    assert re.search(r"toole-single\s+BM25\s+ndcg@5\s+0\.3735\s+0\.3712\s+20550\s+OK", out)   # n: its queries
    assert re.search(r"toole-multi\s+BM25\s+ndcg@5\s+0\.2635\s+0\.2000\s+497\s+-0\.0635  \[k1=1\.2\]$", out, re.M)
    assert re.search(r"toole-single\s+BM25\s+ndcg@5\s+0\.3735\s+0\.3712\s+20550\s+OK$", out, re.M)   # no note, no brackets
    assert "BM-25" in out and "match no paper cell" in out
    assert "toolbench-i1" not in out                     # missing cells are only listed with --all
    # --paper lists our own rows (controls) in their table's block, not among the naming slips
    assert re.search(r"toole-multi\s+Re-Invoke \(dense\) \[qwen-0\.5b\]\s+ndcg@5\s+-\s+0\.5000\s+-\s+ours only$", out, re.M)
    assert "our own rows, with no paper counterpart" not in out
    assert out.strip().endswith("2 cells produced, of which 1 within tolerance and 1 outside it; 48 not produced yet, 1 result cells unmatched"
                                ", 1 of our own rows")

    compare.main(["--paper", "toolrerank", "--table", "3"])
    out = capsys.readouterr().out
    assert re.search(r"all-avg\s+DPR\s+recall@5\s+75\.2\s+80\.00\s+-\s+\+4\.80", out)   # no n_queries: "-"; the paper's scale

    compare.main(["--paper", "reinvoke", "--table", "1", "--all"])
    out = capsys.readouterr().out
    assert re.search(r"toolbench-i1\s+Dense\s+ndcg@5\s+0\.5962\s+-\s+-\s+missing", out)
    assert re.search(r"toole-multi\s+Re-Invoke \(dense\) \[qwen-0\.5b\]\s+ndcg@5\s+-\s+0\.5000\s+-\s+ours only$", out, re.M)
    compare.main(["--all"])
    out = capsys.readouterr().out   # without --paper, --all lists our own rows after the tables
    assert "our own rows, with no paper counterpart" in out and "toole-multi/Re-Invoke (dense) [qwen-0.5b]/ndcg@5 = 0.5" in out

    compare.main(["--paper", "reinvoke", "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert payload["summary"]["lost"] == 0
    assert payload["summary"]["reproduced"] == 3
    assert {c["status"] for c in payload["cells"]} == {"OK", "DIFF", "unmatched", "ours only"}


def test_cli_figure_only_cells(fake_results, capsys):
    compare.main([])
    out = capsys.readouterr().out
    assert "words_mean" not in out and out.strip().endswith("1 with no printed paper value, 1 of our own rows (--all lists them)")
    assert "qwen-0.5b" not in out                        # without --paper our own rows are counted, not listed
    compare.main(["--all", "--paper", "iterative_feedback"])
    out = capsys.readouterr().out
    assert "iterative_feedback/fig2/toole-single/test/words_mean = 20.5" in out


def test_cli_no_results(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(paths, "RESULTS", tmp_path / "nothing")
    compare.main([])
    out = capsys.readouterr().out
    n = len(compare.load_paper_numbers())
    assert f"0 cells produced, of which 0 within tolerance and 0 outside it; {n} not produced yet" in out


def test_add_arguments_and_run_as_subcommand(fake_results, capsys):
    import argparse
    parser = argparse.ArgumentParser(prog="toolkit")
    sub = parser.add_subparsers(dest="cmd")
    compare.add_arguments(sub.add_parser("compare"))
    args = parser.parse_args(["compare", "--paper", "reinvoke", "--tolerance", "0.1"])
    assert compare.run(args) == 0
    assert "3 cells produced, of which 3 within tolerance and 0 outside it" in capsys.readouterr().out


def test_bad_results_json_is_named(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "RESULTS", tmp_path)
    (tmp_path / "nb").mkdir()
    (tmp_path / "nb" / "standard.json").write_text(json.dumps({"cells": [_cell("reinvoke", "1", "a", "b", "c", "0.3")]}))
    with pytest.raises(compare.PaperNumbersError, match=r"nb/standard.json: cell #1 .*value must be a number"):
        compare.load_results()


# ---------------------------------------------------------------------------------------------
# paper_value

def test_paper_value_and_key_errors():
    assert compare.paper_value("reinvoke", "1", "toole-single", "BM25", "ndcg@5") == 0.3735
    assert compare.paper_value("toolrerank", 3, "all-avg", "ToolRerank", "recall@5") == 0.842
    assert compare.paper_value("reinvoke", "5", "toolbench-i1", "test", "queries") == 87419
    with pytest.raises(KeyError, match=r"method 'BM-25' not in table 1: did you mean 'BM25'"):
        compare.paper_value("reinvoke", "1", "toole-single", "BM-25", "ndcg@5")
    with pytest.raises(KeyError, match=r"unknown paper 'reinvok'; did you mean 'reinvoke'"):
        compare.paper_value("reinvok", "1", "toole-single", "BM25", "ndcg@5")
    with pytest.raises(KeyError, match=r"has no table '9'"):
        compare.paper_value("reinvoke", "9", "toole-single", "BM25", "ndcg@5")
    with pytest.raises(KeyError, match=r"did you mean 'toolbench-g1-instruction'"):
        compare.paper_value("toolrerank", "3", "I1-Inst", "BM25", "ndcg@5")
    with pytest.raises(KeyError, match=r"metric 'ndcg@1' not in table 1: did you mean 'ndcg@5'"):
        compare.paper_value("reinvoke", "1", "toole-single", "BM25", "ndcg@1")
    with pytest.raises(KeyError, match=r"combination is not printed"):     # each name exists, not together
        compare.paper_value("toolrerank", "s4.2", "seen", "ToolRerank vs Rerank-10", "gold_in_top10")
    with pytest.raises(compare.PaperNumberNotFound) as exc:
        compare.paper_value("reinvoke", "1", "toole-single", "BM-25", "ndcg@5")
    assert str(exc.value).startswith("no paper number reinvoke/1/toole-single/BM-25/ndcg@5")


def test_paper_table():
    t = compare.paper_table("iterative_feedback", 5)
    assert len(t) == 15 and set(t["scale"]) == {"percent", "seconds"}
    with pytest.raises(KeyError):
        compare.paper_table("iterative_feedback", "99")


def test_results_md_is_what_compare_prints(capsys):
    """RESULTS.md is generated (`python -m toolkit compare --markdown > RESULTS.md`), never typed."""
    from toolkit.compare import main
    from toolkit.paths import REPO
    assert main(["--markdown"]) == 0
    assert (REPO / "RESULTS.md").read_text() == capsys.readouterr().out, \
        "RESULTS.md is stale: python -m toolkit compare --markdown > RESULTS.md"


def test_every_paper_has_an_owning_notebook_that_exists():
    from toolkit.compare import load_paper_numbers, owner_of, owners
    from toolkit.paths import NOTEBOOKS
    own = owners()
    for paper, table in set(zip(load_paper_numbers()["paper"], load_paper_numbers()["table"])):
        nb = owner_of(own, paper, table)
        assert nb and (NOTEBOOKS / f"{nb}.py").is_file(), f"{paper} table {table}: no owning notebook ({nb})"


def test_the_owner_wins_when_two_notebooks_record_one_key(tmp_path):
    """01_baselines sorts first by name, but 30_feedback owns the feedback paper's tables."""
    import json

    from toolkit.compare import compare
    cell = {"paper": "iterative_feedback", "table": "2", "dataset": "toolbench-i2", "method": "BM25",
            "metric": "ndcg@1", "n_queries": 230}
    for nb, value in (("01_baselines", 0.50), ("30_feedback", 0.25)):
        (tmp_path / nb).mkdir()
        (tmp_path / nb / "standard.json").write_text(json.dumps({"notebook": nb, "cells": [{**cell, "value": value}]}))
    df = compare(paper="iterative_feedback", table="2", results_dir=tmp_path)
    row = df[(df.dataset == "toolbench-i2") & (df.method == "BM25") & (df.metric == "ndcg@1")].iloc[0]
    assert row.notebook == "30_feedback" and row.ours == 0.25 and row.also_in == "01_baselines"
