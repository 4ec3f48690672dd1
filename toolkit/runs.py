"""Our runs, saved: a TREC run file and the per-query metrics of every (method, dataset) a notebook evaluates.

A run is written as ``results/<notebook>/runs/<profile>/<dataset>/<method>.trec.gz`` in the six-column TREC format
that trec_eval, pytrec_eval, ranx, pyserini and BEIR read (``qid Q0 doc_id rank score tag``; the top
:data:`DEPTH` documents per query in the order the metrics rank them, :func:`toolkit.metrics.rank`), beside
``<method>.metrics.tsv.gz`` (``qid metric value``: the per-query values the notebook's tables average) and one
``runs.json`` per profile listing every file with its dataset, method, query count, tie rule and metric means.
gzip with a zero timestamp, so re-running an unchanged notebook rewrites the same bytes.

The evaluation points every notebook already calls (:func:`toolkit.experiment.evaluate_grid`, the Re-Invoke
conditions, ToolRerank's tables, the feedback baselines, the head-to-head benchmark) hand their runs to
:func:`keep`; the notebook's :class:`toolkit.results.Recorder` collects them and writes them when it saves its
results (never for a run whose results are not saved). Outside a notebook (no Recorder) :func:`keep` does nothing.

>>> from toolkit.runs import read_run, list_runs
>>> run = read_run("results/01_baselines/runs/standard/toole-single/BM25.trec.gz")   # {qid: {doc_id: score}}
>>> import pytrec_eval; pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.5"}).evaluate(run)

``python -m toolkit runs`` lists what is saved. Depth: the top :data:`DEPTH` (30) documents per query, the top
:data:`DEPTH_LARGE` (20) in a run of more than :data:`LARGE` queries; scores are written as their float32 value
(9 significant digits), the precision trec_eval compares them at, so the saved run ranks exactly as the evaluated one.
"""
from __future__ import annotations

import gzip
import io
import json
import re
import shutil
from pathlib import Path
from typing import Iterable, Mapping

import numpy as np

from .paths import results_dir

DEPTH = 30                                    # documents kept per query (every table's cut-off is <= 11;
                                              # 100 made the standard runs 121 MB) ...
LARGE, DEPTH_LARGE = 2_000, 20                # ... and in a run of more queries (ToolE's 20,550): twice the deepest
                                              # table cut-off (10), so a run stays a few MB
METRICS = ("ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10", "recall@5", "recall@10", "recall@100")
_ACTIVE: list = []                            # the Recorder of the running notebook (at most one)


def slug(name: str) -> str:
    """A file name for a method or dataset name: letters, digits, ``.+-_=@`` kept, every other run of
    characters one ``_`` (``"BM25 + DPR"`` -> ``"BM25_+_DPR"``)."""
    s = re.sub(r"[^A-Za-z0-9.+\-_=@]+", "_", str(name)).strip("_.")
    return s or "_"


def activate(recorder) -> None:
    """Make ``recorder`` the one :func:`keep` hands runs to (a notebook's Recorder does this when created)."""
    _ACTIVE[:] = [recorder]


def keep(dataset: str, method: str, run: Mapping[str, Mapping[str, float]], qrels: Mapping, *,
         ties: str = "trec", metrics: Iterable[str] = METRICS) -> None:
    """Hand one evaluated run to the active Recorder (no-op without one). ``ties`` is the rule its tables used;
    the per-query ``metrics`` are computed with it over the qrels' queries, from the full run (before the
    cut to :data:`DEPTH`, which no metric at a cut-off <= 100 sees)."""
    if not _ACTIVE:
        return
    rec = _ACTIVE[0]
    store = rec.__dict__.setdefault("_runs", {})
    key = (str(dataset), str(method))
    new = {"run": run, "qrels": {q: qrels[q] for q in qrels}, "ties": ties, "metrics": tuple(metrics)}
    old = store.get(key)
    if old is not None and _same(old, new):
        return                                # one run behind several tables
    if old is not None:                       # another run under the same name: keep both, numbered
        i = 2
        while (key[0], f"{key[1]} ({i})") in store:
            i += 1
        key = (key[0], f"{key[1]} ({i})")
    store[key] = new


def _same(a: dict, b: dict) -> bool:
    if a["ties"] != b["ties"] or a["qrels"].keys() != b["qrels"].keys():
        return False
    return all(dict(a["run"].get(q) or {}) == dict(b["run"].get(q) or {}) for q in set(a["run"]) | set(b["run"]))


def _gzip_bytes(text: str) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, filename="") as f:
        f.write(text.encode())
    return buf.getvalue()


def depth_for(n_queries: int) -> int:
    return DEPTH if n_queries <= LARGE else DEPTH_LARGE


def score_text(score: float) -> str:
    """A score as its float32 value, 9 significant digits (which round-trip a float32): ``0.5`` -> ``"0.5"``."""
    return format(float(np.float32(score)), ".9g")


def trec_lines(run: Mapping[str, Mapping[str, float]], tag: str, depth: int = DEPTH) -> list[str]:
    """``qid Q0 doc_id rank score tag`` lines, the first ``depth`` documents of each query in
    :func:`toolkit.metrics.rank`'s order (trec_eval's), scores by :func:`score_text`."""
    from .metrics import rank
    out = []
    tag = slug(tag)
    for qid in run:
        scores = run[qid] or {}
        for i, doc in enumerate(rank(scores, depth), 1):
            if any(c.isspace() for c in f"{qid}{doc}"):
                raise ValueError(f"run {tag!r}: query {qid!r} / document {doc!r} contains whitespace, which the "
                                 "TREC run format cannot hold; rename the ids")
            out.append(f"{qid} Q0 {doc} {i} {score_text(scores[doc])} {tag}")
    return out


def write(recorder) -> list[Path]:
    """Write the runs ``recorder`` collected under ``results/<notebook>/runs/<profile>/`` (the profile's old
    runs leave first, so a method that is gone leaves the tree) and return the files written."""
    from .metrics import evaluate
    store = recorder.__dict__.get("_runs") or {}
    root = runs_dir(recorder.notebook, recorder.profile)
    if root.exists():
        shutil.rmtree(root)
    if not store:
        return []
    root.mkdir(parents=True)
    index, written, used = [], [], set()
    for (dataset, method), item in store.items():
        base = Path(slug(dataset)) / slug(method)
        n = 2
        while base in used:                   # two names with one slug
            base = Path(slug(dataset)) / f"{slug(method)}-{n}"
            n += 1
        used.add(base)
        (root / base.parent).mkdir(parents=True, exist_ok=True)
        run_path, pq_path = root / f"{base}.trec.gz", root / f"{base}.metrics.tsv.gz"
        depth = depth_for(len(item["qrels"]))
        run_path.write_bytes(_gzip_bytes("\n".join(trec_lines(item["run"], method, depth)) + "\n"))
        pq = evaluate(item["run"], item["qrels"], list(item["metrics"]), per_query=True, ties=item["ties"])
        rows = ["qid\tmetric\tvalue"] + [f"{q}\t{m}\t{v!r}" for m, vals in pq.items() for q, v in vals.items()]
        pq_path.write_bytes(_gzip_bytes("\n".join(rows) + "\n"))
        index.append({"dataset": dataset, "method": method, "run": str(base) + ".trec.gz",
                      "per_query": str(base) + ".metrics.tsv.gz", "queries": len(item["qrels"]), "depth": depth,
                      "ties": item["ties"], "means": {m: sum(v.values()) / len(v) for m, v in pq.items() if v}})
        written += [run_path, pq_path]
    (root / "runs.json").write_text(json.dumps({"notebook": recorder.notebook, "profile": recorder.profile,
                                                "runs": index}, indent=1) + "\n")
    return written


def runs_dir(notebook: str, profile: str) -> Path:
    return results_dir() / notebook / "runs" / profile


def read_run(path) -> dict[str, dict[str, float]]:
    """A TREC run file (gzip or plain) as ``{qid: {doc_id: score}}``."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    run: dict[str, dict[str, float]] = {}
    with opener(path, "rt") as f:
        for n, line in enumerate(f, 1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 6:
                raise ValueError(f"{path}:{n}: a TREC run line has 6 fields (qid Q0 doc_id rank score tag), "
                                 f"got {len(parts)}")
            run.setdefault(parts[0], {})[parts[2]] = float(parts[4])
    return run


def read_per_query(path) -> dict[str, dict[str, float]]:
    """A saved per-query metrics file as ``{metric: {qid: value}}``."""
    out: dict[str, dict[str, float]] = {}
    with gzip.open(path, "rt") as f:
        next(f)
        for line in f:
            q, m, v = line.rstrip("\n").split("\t")
            out.setdefault(m, {})[q] = float(v)
    return out


def list_runs(root: Path | None = None) -> list[dict]:
    """Every saved run: the ``runs.json`` entries of every notebook and profile, with ``notebook``, ``profile``,
    ``path`` (of the run file) and ``bytes`` added."""
    root = root or results_dir()
    out = []
    for idx in sorted(root.glob("*/runs/*/runs.json")):
        meta = json.loads(idx.read_text())
        for r in meta["runs"]:
            p = idx.parent / r["run"]
            out.append({"notebook": meta["notebook"], "profile": meta["profile"], **r, "path": p,
                        "bytes": (p.stat().st_size if p.exists() else 0)
                        + ((idx.parent / r["per_query"]).stat().st_size if (idx.parent / r["per_query"]).exists() else 0)})
    return out
