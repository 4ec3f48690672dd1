"""Loaders on the real shared files, the standardization rules, and the error paths."""
import json

import pytest

from toolkit.data import (DataFileError, data_file, list_datasets, load_dataset, load_library,
                          load_official_evalset, load_retrieval_dir, load_teval_corpus, load_tool_json_tree)
from toolkit.data.contract import Document, Query, RetrievalDataset
from toolkit.data.standardize import api_key, change_name, function_name, standardize, standardize_category


@pytest.mark.parametrize("raw,expected", [
    ("TheClique", "theclique"),
    ("Songkick concert", "songkick_concert"),
    ("/v1/nutrition", "v1_nutrition"),
    ("5 Day Forecast", "get_5_day_forecast"),
    ("Go QR code - LINK to QRCODE", "go_qr_code_link_to_qrcode"),
    ("__Hello__  World!!", "hello_world"),
    ("", ""),
])
def test_standardize(raw, expected):
    assert standardize(raw) == expected


def test_change_name_and_category():
    assert change_name("id") == "is_id" and change_name("from") == "is_from" and change_name("ids") == "ids"
    assert standardize_category("Business Software") == "Business_Software"
    assert standardize_category("Video, Images") == "Video_Images"
    assert standardize_category("Data/Media") == "Data_Media"
    assert api_key("Data", "TheClique", "Songkick concert") == "Data/theclique/songkick_concert"
    assert api_key("Tools", "X", "ID") == "Tools/x/is_id"
    assert function_name("weather", "get_5_day_forecast") == "get_5_day_forecast_for_weather"
    assert len(function_name("t" * 50, "a" * 50)) == 64


EXPECTED = {  # queries, documents, qrels — from shared/data/README.md
    "toole-single": (20550, 199, 20563),
    "toole-multi": (497, 199, 994),
    "toolbench-g1-instruction": (163, 16427, 371),
    "toolbench-g1-tool": (158, 16427, 358),
    "toolbench-g1-category": (153, 16427, 328),
    "toolbench-g2-instruction": (106, 16427, 259),   # 261 gold rows, one query lists an API thrice
    "toolbench-g2-category": (124, 16427, 299),      # 301 gold rows, two duplicated
    "toolbench-g3-instruction": (61, 16427, 180),
    "toolbench-all": (765, 16427, 1795),
    "toolbench-official-g2-category": (100, 16427, 252),
    "toolbench-official-g3-instruction": (100, 16427, 286),
    "toollens-train": (16893, 464, 44865),           # 45,035 rows, 170 duplicated
    "toollens-test": (1877, 464, 4987),
    "ultratool": (1000, 436, 2132),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_dataset_sizes(name):
    ds = load_dataset(name)
    s = ds.stats()
    assert (s["queries"], s["documents"], s["qrels"]) == EXPECTED[name]


def test_every_listed_dataset_loads():
    for name in list_datasets():
        assert len(load_dataset(name).queries) > 0


def test_toole_duplicate_labels():
    union, first = load_dataset("toole-single"), load_dataset("toole-single", duplicates="first")
    assert sum(map(len, first.qrels.values())) == 20550  # Re-Invoke's 20,550 pairs
    assert sum(len(r) > 1 for r in union.qrels.values()) == 11  # 10 with two tools, one with four
    assert union.corpus["timeport"].text.startswith("timeport: Begin an exciting journey through time")


def test_toolbench_hierarchy_and_rendering():
    ds = load_dataset("toolbench-g1-instruction")
    q = ds.queries["G1_instruction/588"]
    assert set(ds.qrels[q.qid]) == {"Data/theclique/transfermarkt_search", "Data/theclique/transfermarkt_details"}
    d = ds.corpus["Data/theclique/transfermarkt_search"]
    assert (d.category, d.tool, d.api) == ("Data", "theclique", "transfermarkt_search")
    assert d.text.startswith("Data, theclique, transfermarkt search, ")
    assert ", required_params: [" in d.text and d.text.endswith('return_schema: ""')
    pool = load_dataset("toolbench-g1-instruction", corpus="pool")
    assert len(pool.corpus) < 1000 and set(ds.qrels[q.qid]) <= set(pool.corpus)
    rich = load_dataset("toolbench-g1-instruction", enrich=True)
    assert rich.corpus["Data/theclique/transfermarkt_search"].text.startswith("Data, TheClique, Transfermarkt search")


def test_library_duplicates_are_merged_not_lost():
    lib = load_library()
    assert len(lib) == 16427
    assert sum(d.meta.get("duplicate_rows", 0) for d in lib.values()) == 36


def test_official_evalset_pools():
    for group in ("G1_instruction", "G3_instruction"):
        queries, pools = load_official_evalset(group)
        assert len(queries) == 100 and all(pools.values())
    # the official gold queries' api_lists are their default_evalset pools (shared/data README 2.2)
    gold = load_dataset("toolbench-official-g3-instruction")
    _, pools = load_official_evalset("G3_instruction")
    covered = sum(set(gold.qrels[q]) <= set(pools[q]) for q in gold.queries)
    assert covered >= 99


def test_toollens_groups():
    ds = load_dataset("toollens-train")
    groups = {}
    for q in ds.queries.values():
        groups[q.group] = groups.get(q.group, 0) + 1
    assert groups == {"1-tool": 1676, "2-tool": 3591, "3-tool": 11626}
    assert all(d.meta["api_key"].count("/") == 2 for d in ds.corpus.values())
    lib = load_library()
    assert all(d.meta["api_key"] in lib for d in ds.corpus.values())  # 464/464 map to the library


def test_teval_corpus():
    docs = load_teval_corpus()
    assert len(docs) == 50 and len({d.tool for d in docs.values()}) == 15


def test_release_format_roundtrip(tmp_path):
    """ToolBench's released retrieval format, written from real api_list entries."""
    recs = json.load(open(data_file("toolbench/stabletoolbench/test_instruction/G3_instruction.json")))[:5]
    lines, qrels = ["docid\tdocument_content"], []
    docid = {}
    for r in recs:
        for a in r["api_list"]:
            k = (a["tool_name"], a["api_name"])
            if k not in docid:
                docid[k] = str(len(docid))
                lines.append(docid[k] + "\t" + json.dumps({f: a.get(f) for f in (
                    "category_name", "tool_name", "api_name", "api_description", "required_parameters",
                    "optional_parameters", "template_response")}))
        for t, api in r["relevant APIs"]:
            qrels.append(f"{r['query_id']}\t0\t{docid[(t, api)]}\t1")
    (tmp_path / "corpus.tsv").write_text("\n".join(lines) + "\n")
    (tmp_path / "test.query.txt").write_text("".join(f"{r['query_id']}\t{r['query']}\n" for r in recs))
    (tmp_path / "qrels.test.tsv").write_text("\n".join(qrels) + "\n")
    ds = load_retrieval_dir(tmp_path)
    assert len(ds.queries) == 5 and len(ds.corpus) == len(docid)
    d = next(iter(ds.corpus.values()))
    assert d.meta["api_key"] in load_library()
    (tmp_path / "qrels.test.tsv").write_text("1\t2\n")
    with pytest.raises(ValueError, match=r"qrels.test.tsv:1"):
        load_retrieval_dir(tmp_path)


def test_tool_json_tree(tmp_path):
    (tmp_path / "Data").mkdir()
    (tmp_path / "Data" / "theclique.json").write_text(json.dumps({
        "tool_name": "TheClique", "tool_description": "x",
        "api_list": [{"name": "Songkick concert", "description": "Concert info", "required_parameters": [],
                      "optional_parameters": [], "template_response": {"date": "str"}}]}))
    docs = load_tool_json_tree(tmp_path)
    assert list(docs) == ["Data/theclique/songkick_concert"]
    assert docs["Data/theclique/songkick_concert"].text.endswith('return_schema: {"date": "str"}')
    with pytest.raises(FileNotFoundError, match="toolenv"):
        load_tool_json_tree(tmp_path / "nothing")


def test_missing_and_corrupt_files_name_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLKIT_DATA", str(tmp_path))
    with pytest.raises(DataFileError, match=r"plugin_des.json is missing.*toolkit fetch --only"):
        data_file("toole/plugin_des.json")
    (tmp_path / "toole").mkdir()
    (tmp_path / "toole" / "plugin_des.json").write_text("{}")
    with pytest.raises(DataFileError, match="corrupt"):
        data_file("toole/plugin_des.json")


def test_bad_dataset_name_and_param():
    with pytest.raises(KeyError, match="known datasets"):
        load_dataset("toole-singel")
    with pytest.raises(TypeError, match="no parameter 'corpse'"):
        load_dataset("toolbench-g1-tool", corpse="pool")
    with pytest.raises(ValueError, match="corpus must be"):
        load_dataset("toolbench-g1-tool", corpus="everything")


def test_contract_validation():
    doc = Document("d1", "c", "t", "a", "text")
    with pytest.raises(ValueError, match="not in the corpus"):
        RetrievalDataset("x", {"d1": doc}, {"q": Query("q", "hi")}, {"q": {"d2": 1}})
    with pytest.raises(ValueError, match="no relevant document"):
        RetrievalDataset("x", {"d1": doc}, {"q": Query("q", "hi")}, {})
    ds = RetrievalDataset("x", {"d1": doc}, {f"q{i}": Query(f"q{i}", "hi") for i in range(10)},
                          {f"q{i}": {"d1": 1} for i in range(10)})
    assert ds.sample(3, seed=1).queries.keys() == ds.sample(3, seed=1).queries.keys()
    assert len(ds.sample(3).queries) == 3 and ds.sample(None) is ds
