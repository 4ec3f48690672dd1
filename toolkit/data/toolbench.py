"""ToolBench in every form we meet it.

- the API library (``toolbench/library/apis.jsonl``, 16,463 APIs, standardized names);
- instruction-format query files (StableToolBench groups, DRAFT, official gold):
  ``[{query, query_id, api_list, "relevant APIs"}]``;
- the official default_evalset (query text + candidate pools, no gold for four groups);
- ToolBench's released retrieval format (``corpus.tsv``, ``*.query.txt``, ``qrels.*.tsv``) and the
  original tool JSON tree (``toolenv/tools/<Category>/<tool>.json``), for users who have the full
  release (the ``paper`` profile).

Documents render as ToolBench's retriever rendered ``corpus.tsv`` rows
(``process_retrieval_ducoment`` in ToolBench): ``"<category>, <tool>, <api>, <description>,
required_params: <json>, optional_params: <json>, return_schema: <json>"``.
Every document id is ``<category>/<tool>/<api>`` in ToolBench's standardized form
(:mod:`toolkit.data.standardize`).
"""
from __future__ import annotations

import csv
import json
from functools import lru_cache
from pathlib import Path

from .contract import Document, Qrels, Query, RetrievalDataset
from .sources import data_file
from .standardize import api_key, change_name, function_name, standardize, standardize_category

LIBRARY = "toolbench/library/apis.jsonl"
STABLE_GROUPS = ("G1_instruction", "G1_tool", "G1_category", "G2_instruction", "G2_category", "G3_instruction")
# The paper's names for the six groups (ToolRerank, feedback paper).
GROUP_ALIASES = {"G1_instruction": "I1-Inst", "G1_tool": "I1-Tool", "G1_category": "I1-Cat",
                 "G2_instruction": "I2-Inst", "G2_category": "I2-Cat", "G3_instruction": "I3-Inst"}


def render_document(category: str, tool: str, api: str, description: str | None,
                    required: list | None, optional: list | None, template_response=None) -> str:
    """ToolBench's retrieval document text (see module docstring)."""
    return (f"{category or ''}, {tool or ''}, {api or ''}, {description or ''}"
            f", required_params: {json.dumps(required if required is not None else '')}"
            f", optional_params: {json.dumps(optional if optional is not None else '')}"
            f", return_schema: {json.dumps(template_response if template_response is not None else '')}")


def _humanize(name: str) -> str:
    return name.replace("_", " ")


@lru_cache(maxsize=4)
def load_library(humanize_names: bool = True) -> dict[str, Document]:
    """The ToolBench API library as documents keyed ``<category>/<tool>/<api>``.

    ``humanize_names`` renders standardized names with spaces (``songkick_concert`` ->
    ``songkick concert``), closer to the display names ToolBench's corpus.tsv had. 30 keys occur
    twice in the library (one ``api.py`` defining a function twice); the first definition is
    kept, and the number of merged rows is in ``meta['duplicate_rows']`` of the kept document.
    """
    path = data_file(LIBRARY)
    docs: dict[str, Document] = {}
    dups: dict[str, int] = {}
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            try:
                r = json.loads(line)
                key = f"{r['category']}/{r['tool']}/{r['api']}"
            except (json.JSONDecodeError, KeyError) as e:
                raise ValueError(f"{path}:{lineno}: not a library record ({e}); the file must hold one JSON "
                                 f"object per line with category, tool, api, description") from e
            if key in docs:
                dups[key] = dups.get(key, 0) + 1
                continue
            show = _humanize if humanize_names else (lambda s: s)
            text = render_document(show(r["category"]), show(r["tool"]), show(r["api"]), r.get("description"),
                                   r.get("required_parameters"), r.get("optional_parameters"))
            docs[key] = Document(key, r["category"], r["tool"], r["api"], text,
                                 {"description": r.get("description") or "", "source": "library",
                                  "required_parameters": r.get("required_parameters"),
                                  "optional_parameters": r.get("optional_parameters")})
    for key, n in dups.items():
        docs[key].meta["duplicate_rows"] = n
    return docs


# ---------------------------------------------------------------------------------------------
# instruction format
def read_instruction_file(path: str | Path) -> list[dict]:
    path = Path(path)
    with open(path, encoding="utf-8") as f:
        try:
            data = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not valid JSON ({e})") from e
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of ToolBench instruction records")
    for i, r in enumerate(data):
        for field in ("query", "query_id", "api_list", "relevant APIs"):
            if field not in r:
                raise ValueError(f"{path}: record {i} has no field {field!r}; instruction-format records need "
                                 f"query, query_id, api_list and 'relevant APIs'")
    return data


def instruction_queries(records: list[dict], group: str, source: str = "") -> tuple[dict[str, Query], Qrels, dict]:
    """Queries, qrels and the candidate pools (api_list) of instruction-format records.

    Query ids are ``<group>/<query_id>`` (ids repeat across groups). Gold ``[tool_name, api_name]``
    pairs map to document ids through the api_list entry that names them (for its category);
    a gold pair absent from the api_list raises, naming the query.
    """
    queries, qrels, pools = {}, {}, {}
    for r in records:
        qid = f"{group}/{r['query_id']}"
        if qid in queries:
            raise ValueError(f"{source or group}: query_id {r['query_id']} occurs twice")
        cat_of = {}
        pool = []
        for a in r["api_list"]:
            key = api_key(a["category_name"], a["tool_name"], a["api_name"])
            cat_of[(a["tool_name"], a["api_name"])] = key
            pool.append(key)
        rel = {}
        if len({tuple(x) for x in r["relevant APIs"]}) < len(r["relevant APIs"]):
            pools.setdefault("__duplicate_gold__", []).append(qid)  # the source lists a gold API twice
        for tool_name, api_name in r["relevant APIs"]:
            key = cat_of.get((tool_name, api_name))
            if key is None:
                raise ValueError(f"{source or group}: query {r['query_id']} names gold API "
                                 f"{tool_name!r}/{api_name!r} that is not in its api_list")
            rel[key] = 1
        queries[qid] = Query(qid, r["query"], group)
        qrels[qid] = rel
        pools[qid] = pool
    return queries, qrels, pools


def api_list_documents(records: list[dict]) -> dict[str, Document]:
    """Documents built from api_list entries (display names, template_response) — richer than the
    library for the APIs the query files mention."""
    docs = {}
    for r in records:
        for a in r["api_list"]:
            key = api_key(a["category_name"], a["tool_name"], a["api_name"])
            if key not in docs:
                cat, tool, api = key.split("/")
                docs[key] = Document(key, cat, tool, api, render_document(
                    a["category_name"], a["tool_name"], a["api_name"], a.get("api_description"),
                    a.get("required_parameters"), a.get("optional_parameters"), a.get("template_response")),
                    {"description": a.get("api_description") or "", "source": "api_list"})
    return docs


INSTRUCTION_FILES = {
    **{f"stable/{g}": f"toolbench/stabletoolbench/test_instruction/{g}.json" for g in STABLE_GROUPS},
    "draft/G2_category": "toolbench/draft/G2.json",
    "draft/G3_instruction": "toolbench/draft/G3.json",
    "official/G2_category": "toolbench/official_test/gold/i2_cat.json",
    "official/G3_instruction": "toolbench/official_test/gold/i3_inst.json",
}


def load_toolbench(files: list[str], name: str, corpus: str = "library", enrich: bool = False,
                   humanize_names: bool = True) -> RetrievalDataset:
    """A ToolBench retrieval dataset from instruction files (keys of :data:`INSTRUCTION_FILES`).

    corpus: ``library`` — the whole 16,463-API library (the only full corpus available; the
    per-group corpus.tsv files are not public); ``pool`` — only the APIs in the queries' api_lists
    (the candidate pools, a much easier task). ``enrich`` replaces the library text of APIs that
    occur in an api_list by the richer api_list rendering (display names, return schema); off by
    default because it would make exactly the gold documents look different from the rest.
    """
    if corpus not in ("library", "pool"):
        raise ValueError(f"corpus must be 'library' or 'pool', got {corpus!r}")
    queries, qrels, records = {}, {}, []
    dup_gold = 0
    for key in files:
        if key not in INSTRUCTION_FILES:
            raise KeyError(f"unknown ToolBench file {key!r}; known: {sorted(INSTRUCTION_FILES)}")
        recs = read_instruction_file(data_file(INSTRUCTION_FILES[key]))
        q, r, pools = instruction_queries(recs, key.split("/")[1], source=INSTRUCTION_FILES[key])
        dup_gold += len(pools.get("__duplicate_gold__", []))
        queries.update(q)
        qrels.update(r)
        records += recs
    library = load_library(humanize_names)
    rich = api_list_documents(records)
    missing = [k for k in rich if k not in library]
    if missing:
        raise ValueError(f"{len(missing)} api_list APIs are not in the library (first: {missing[0]}); "
                         f"check {LIBRARY}")
    if corpus == "library":
        docs = dict(library)
    else:
        docs = {k: library[k] for k in rich}
    if enrich:
        docs.update({k: v for k, v in rich.items() if k in docs})
    return RetrievalDataset(name, docs, queries, qrels,
                            description=f"ToolBench {', '.join(files)}; corpus={corpus} ({len(docs)} APIs); "
                                        f"{dup_gold} queries list a gold API twice (counted once)")


# ---------------------------------------------------------------------------------------------
# official default_evalset: query text and candidate pools
def load_official_evalset(group: str) -> tuple[dict[str, Query], dict[str, list[str]]]:
    """The official 100 test queries of a group and their candidate pools as library doc ids.

    Candidate names are ToolBench function names ``<api>_for_<tool>`` cut to 64 characters; they
    map to the library by exact name, then without the ``get_`` that ``standardize`` puts before
    a leading digit, then without a ``_v2``/``_v3`` suffix that run added to two colliding tool
    names. A name that maps to several library APIs (tool names shared across categories) keeps
    all of them; one that maps to none raises.
    """
    if group not in STABLE_GROUPS:
        raise KeyError(f"unknown group {group!r}; groups: {STABLE_GROUPS}")
    path = data_file(f"toolbench/official_test/default_evalset/{group}.json")
    ids = json.load(open(data_file(f"toolbench/official_test/test_query_ids/{group}_test_query_ids.json")))
    data = json.load(open(path, encoding="utf-8"))
    if set(ids) != set(data):
        raise ValueError(f"{path}: its query ids differ from the official test_query_ids list")
    index = _function_index()
    queries, pools = {}, {}
    for qid, r in data.items():
        key = f"{group}/{qid}"
        queries[key] = Query(key, r["query"], group)
        pool = []
        for t in r["available_tools"]:
            if t["name"] == "Finish":
                continue
            found = _match_function(t["name"], index)
            if not found:
                raise ValueError(f"{path}: query {qid}: candidate {t['name']!r} matches no library API")
            pool += found
        pools[key] = pool
    return queries, pools


@lru_cache(maxsize=1)
def _function_index() -> dict[str, list[str]]:
    index: dict[str, list[str]] = {}
    for key, d in load_library().items():
        names = {function_name(d.tool, d.api)}
        if d.api.startswith("get_") and d.api[4:5].isdigit():
            names.add(function_name(d.tool, d.api[4:]))
        for n in names:
            index.setdefault(n, []).append(key)
    return index


def _match_function(name: str, index: dict[str, list[str]]) -> list[str]:
    if name in index:
        return index[name]
    for suffix in ("_v2", "_v3"):
        if name.endswith(suffix) and name[: -len(suffix)] in index:
            return index[name[: -len(suffix)]]
    return []


# ---------------------------------------------------------------------------------------------
# ToolBench's released retrieval format and original tool JSON (paper profile)
def load_retrieval_dir(path: str | Path, split: str = "test", name: str | None = None) -> RetrievalDataset:
    """ToolBench's ``data/retrieval/G{1,2,3}/``: ``corpus.tsv`` (header ``docid	document_content``,
    content a JSON object), ``<split>.query.txt`` (``qid	query``, no header) and
    ``qrels.<split>.tsv`` (``qid	0	docid	label``, no header), as ToolBench's retriever reads them."""
    path = Path(path)
    files = {"corpus": path / "corpus.tsv", "queries": path / f"{split}.query.txt",
             "qrels": path / f"qrels.{split}.tsv"}
    for what, p in files.items():
        if not p.is_file():
            raise FileNotFoundError(f"ToolBench retrieval {what} file {p} is missing; it comes from ToolBench's "
                                    f"data release (data/retrieval/G*/), which is not public in git")
    csv.field_size_limit(1 << 30)
    docs = {}
    with open(files["corpus"], encoding="utf-8", newline="") as f:
        reader = csv.reader(f, delimiter="\t")
        header = next(reader)
        if header[:2] != ["docid", "document_content"]:
            raise ValueError(f"{files['corpus']}: header must be 'docid<TAB>document_content', got {header}")
        for lineno, row in enumerate(reader, 2):
            try:
                d = json.loads(row[1])
            except (IndexError, json.JSONDecodeError) as e:
                raise ValueError(f"{files['corpus']}:{lineno}: document_content is not a JSON object ({e})") from e
            key = api_key(d.get("category_name", ""), d.get("tool_name", ""), d.get("api_name", ""))
            cat, tool, api = key.split("/")
            docs[str(row[0])] = Document(str(row[0]), cat, tool, api, render_document(
                d.get("category_name"), d.get("tool_name"), d.get("api_name"), d.get("api_description"),
                d.get("required_parameters", ""), d.get("optional_parameters", ""), d.get("template_response", "")),
                {"api_key": key})
    queries = {}
    with open(files["queries"], encoding="utf-8", newline="") as f:
        for lineno, row in enumerate(csv.reader(f, delimiter="\t"), 1):
            if len(row) < 2:
                raise ValueError(f"{files['queries']}:{lineno}: expected 'qid<TAB>query'")
            queries[row[0]] = Query(row[0], row[1], path.name)
    qrels: Qrels = {}
    with open(files["qrels"], encoding="utf-8", newline="") as f:
        for lineno, row in enumerate(csv.reader(f, delimiter="\t"), 1):
            if len(row) != 4 or not row[3].strip().lstrip("-").isdigit():
                raise ValueError(f"{files['qrels']}:{lineno}: expected 'qid<TAB>0<TAB>docid<TAB>label' with an integer "
                                 f"label, got {row!r} (a truncated or damaged file?)")
            if int(row[3]) > 0:
                qrels.setdefault(row[0], {})[row[2]] = int(row[3])
    without = [q for q in queries if q not in qrels]
    if without:
        # queries with no relevant document cannot be evaluated: drop them, but say how many
        import warnings
        warnings.warn(f"{files['queries']}: {len(without)} of {len(queries)} queries have no relevant document in "
                      f"{files['qrels'].name} and are dropped (first: {without[0]!r})", RuntimeWarning, stacklevel=2)
        print(f"[data] {path.name}/{split}: dropped {len(without)} of {len(queries)} queries without qrels")
    queries = {q: v for q, v in queries.items() if q in qrels}
    return RetrievalDataset(name or f"toolbench-{path.name}-{split}", docs, queries, qrels,
                            description=f"ToolBench release format from {path}")


def load_tool_json_tree(root: str | Path) -> dict[str, Document]:
    """Documents from ToolBench's original tool JSON tree ``<root>/<Category>/<tool>.json``
    (``{tool_name, tool_description, api_list: [{name, description, required_parameters,
    optional_parameters, template_response?}]}``), rendered with their display names."""
    root = Path(root)
    files = sorted(root.glob("*/*.json"))
    if not files:
        raise FileNotFoundError(f"no <Category>/<tool>.json files under {root}; point this at ToolBench's "
                                f"data/toolenv/tools/")
    docs = {}
    for p in files:
        try:
            tool = json.load(open(p, encoding="utf-8"))
            api_list = tool["api_list"]
            tool_name = tool.get("tool_name") or tool.get("name") or p.stem
        except (json.JSONDecodeError, KeyError) as e:
            raise ValueError(f"{p}: not a ToolBench tool JSON ({e}); it needs tool_name and api_list") from e
        category = p.parent.name
        for a in api_list:
            key = f"{standardize_category(category)}/{standardize(tool_name)}/{change_name(standardize(a['name']))}"
            if key in docs:
                continue
            cat, t, api = key.split("/")
            docs[key] = Document(key, cat, t, api, render_document(
                category, tool_name, a["name"], a.get("description"), a.get("required_parameters", ""),
                a.get("optional_parameters", ""), a.get("template_response", "")),
                {"description": a.get("description") or "", "tool_description": tool.get("tool_description", ""),
                 "source": str(p)})
    return docs
