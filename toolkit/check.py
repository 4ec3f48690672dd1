"""Regression check on our own numbers, pyserini-2CR style: ``python -m toolkit check``.

Each notebook's expected values live in ``data/expected/<notebook>/<profile>.yaml`` — one entry per
result cell (paper, table, dataset, method, metric, value) — written by ``check --write`` from a run
and reviewed in the diff like code. ``check`` re-reads ``results/<notebook>/<profile>.json`` (or, with
``--run``, re-runs the notebooks first) and prints OK or FAIL per cell; it exits non-zero when a value
drifts beyond the tolerance, a cell disappears, or a new cell has no expected value yet.

    python -m toolkit check --profile smoke              # CI, after the smoke runs
    python -m toolkit check --profile standard --notebook 20_reinvoke
    python -m toolkit check --profile smoke --write      # accept the current values (review the diff!)
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import yaml

from .config import finite_at_least
from .paths import PROJECT_DATA, results_dir
from .results import PROFILES

EXPECTED = PROJECT_DATA / "expected"
KEY = ("paper", "table", "dataset", "method", "metric")


def _key(c: dict) -> tuple:
    return tuple("" if c.get(k) is None else str(c[k]) for k in KEY)


def results_path(notebook: str, profile: str, root: Path | None = None) -> Path:
    return (root or results_dir()) / notebook / f"{profile}.json"


def results_doc(notebook: str, profile: str, root: Path | None = None) -> dict:
    """``results/<notebook>/<profile>.json`` as a dict; a missing, damaged or malformed file is an error naming it
    and the fix (re-run the notebook, or restore the committed file)."""
    path = results_path(notebook, profile, root)
    if not path.is_file():
        raise FileNotFoundError(f"no {profile} run of {notebook}: {path} is missing "
                                f"(python -m toolkit run {notebook} --profile {profile})")
    fix = f"re-run it (python -m toolkit run {notebook} --profile {profile}) or restore it (git checkout -- {path})"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: not JSON ({e}); {fix}") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: a results file is a JSON object, this one is a {type(doc).__name__}; {fix}")
    if not isinstance(doc.get("cells", []), list):
        raise ValueError(f"{path}: 'cells' must be a list, got {type(doc['cells']).__name__}; {fix}")
    for i, c in enumerate(doc.get("cells", []), 1):
        if not isinstance(c, dict) or any(k not in c for k in (*KEY, "value")):
            raise ValueError(f"{path}: cell #{i} needs {', '.join(KEY)} and value, got {str(c)[:80]}; {fix}")
        v = c["value"]
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise ValueError(f"{path}: cell #{i} ({' / '.join(str(c[k]) for k in KEY)}) has value {v!r}, not a "
                             f"number or null; {fix}")
    return doc


def _value(c: dict) -> float:
    """A cell's value; null (how :meth:`toolkit.results.Recorder.save` writes NaN, strict JSON) is NaN."""
    return float("nan") if c["value"] is None else float(c["value"])


def result_cells(notebook: str, profile: str, root: Path | None = None) -> dict[tuple, float]:
    """``{key: value}`` of the results file's cells (the first of a duplicated key, as ``compare`` reads it;
    :func:`check` reports the duplicate)."""
    out: dict[tuple, float] = {}
    for c in results_doc(notebook, profile, root).get("cells", []):
        out.setdefault(_key(c), _value(c))
    return out


def _cells_by_key(doc: dict) -> tuple[dict[tuple, dict], list[tuple]]:
    """(first cell of each key, keys that appear more than once)."""
    first, dups = {}, []
    for c in doc.get("cells", []):
        k = _key(c)
        if k in first:
            dups.append(k)
        else:
            first[k] = c
    return first, dups


def expected_path(notebook: str, profile: str) -> Path:
    return EXPECTED / notebook / f"{profile}.yaml"


def write_expected(notebook: str, profile: str, root: Path | None = None) -> Path:
    """Write ``data/expected/<notebook>/<profile>.yaml`` from the results: every cell's value, and the committed
    inputs the run recorded (``inputs``: a later run must record them too). Refused, naming the problem, when the
    results cannot be trusted: a duplicated cell, an INPUT problem (:func:`input_problems`) or a ``.failed`` marker
    (the results file is then the previous good run's, not the last run's)."""
    doc = results_doc(notebook, profile, root)
    path = results_path(notebook, profile, root)
    marker = path.with_suffix(".failed")
    why = ([f"the last {profile} run failed ({marker})"] if marker.is_file() else []) + \
        [f"cell {' / '.join(k)} appears more than once" for k in _cells_by_key(doc)[1]] + \
        input_problems(notebook, profile, root, expected=False)
    if why:
        raise ValueError(f"{notebook} ({profile}): expected values not written from {path}: " + "; ".join(why)
                         + f"; fix it and re-run the notebook (python -m toolkit run {notebook} --profile {profile})")
    rows = [dict(zip(KEY, k), value=round(v, 10)) for k, v in result_cells(notebook, profile, root).items()]
    inputs = sorted(f"{r['path']}#{r['field']}" if r.get("field") else r["path"] for r in doc.get("inputs") or [])
    path = expected_path(notebook, profile)
    path.parent.mkdir(parents=True, exist_ok=True)
    head = (f"# Expected values of {notebook} ({profile} profile), written by `python -m toolkit check --profile "
            f"{profile} --write`.\n# Review changes to this file like code: each one is a number our run moved.\n")
    path.write_text(head + yaml.safe_dump({"notebook": notebook, "profile": profile, "inputs": inputs, "cells": rows},
                                          sort_keys=False, allow_unicode=True, width=200))
    return path


def _expected_doc(notebook: str, profile: str) -> tuple[Path, dict]:
    path = expected_path(notebook, profile)
    if not path.is_file():
        raise FileNotFoundError(f"no expected values {path}; write them with "
                                f"`python -m toolkit check --profile {profile} --notebook {notebook} --write`")
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as e:
        raise ValueError(f"{path}: not valid YAML ({str(e).splitlines()[0]}); restore it (git checkout -- {path}) or "
                         f"rewrite it with --write") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("cells", []), list):
        raise ValueError(f"{path}: expected a mapping with a 'cells' list")
    if not isinstance(doc.get("inputs", []), list) or not all(isinstance(x, str) for x in doc.get("inputs", [])):
        raise ValueError(f"{path}: 'inputs' must be a list of paths (data/...), got {doc.get('inputs')!r}")
    return path, doc


def read_expected(notebook: str, profile: str) -> dict[tuple, float]:
    path, doc = _expected_doc(notebook, profile)
    out, where = {}, {}
    for i, c in enumerate(doc.get("cells", []), 1):
        if not isinstance(c, dict) or "value" not in c:
            raise ValueError(f"{path}: cell #{i} needs {', '.join(KEY)} and value")
        v = c["value"]
        label = " / ".join(str(c.get(k, "")) for k in KEY)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError(f"{path}: cell #{i} ({label}) has value {v!r}, "
                             "not a number (write .nan for a value the run cannot compute)")
        k = _key(c)
        if k in out:
            # two copies of one cell: the last would win in silence, whichever the reviewer read
            raise ValueError(f"{path}: cell #{i} ({label}) repeats cell #{where[k]}; keep one of them")
        out[k], where[k] = float(v), i
    return out


def expected_inputs(notebook: str, profile: str) -> list[str]:
    """The committed inputs (``path`` or ``path#field``) the run that wrote the expected values recorded."""
    return list(_expected_doc(notebook, profile)[1].get("inputs", []))


def is_timing(key: tuple, cell: dict | None = None) -> bool:
    """A wall-clock measurement of the run: it describes the machine and its load, not the method, so it is checked
    for presence and a finite value >= 0, not against the expected number. The results cell says so (``"timing"``,
    :meth:`toolkit.results.Recorder.add`): seconds replayed from a committed input are a result, checked exactly;
    a cell that does not say is a timing when its metric is named ``*seconds*``."""
    if cell is not None and "timing" in cell:
        return bool(cell["timing"])
    return "seconds" in key[KEY.index("metric")]


def check(notebook: str, profile: str, tolerance: float = 1e-6, root: Path | None = None) -> list[tuple]:
    """``[(status, key, expected, ours)]`` with status OK, FAIL (drift; for a timing: not a finite value
    >= 0), MISSING (expected, not produced), NEW (produced, not expected) or DUPLICATE (a key the results file
    holds twice: ``compare`` would show one copy and the check validate another)."""
    exp = read_expected(notebook, profile)
    cells, dups = _cells_by_key(results_doc(notebook, profile, root))
    ours = {k: _value(c) for k, c in cells.items()}
    out = []
    for k, e in exp.items():
        if k not in ours:
            out.append(("MISSING", k, e, None))
            continue
        o = ours[k]
        if is_timing(k, cells[k]):
            same = math.isfinite(o) and o >= 0
        else:
            same = (math.isnan(e) and math.isnan(o)) or abs(o - e) <= tolerance
        out.append(("OK" if same else "FAIL", k, e, o))
    out += [("NEW", k, None, v) for k, v in ours.items() if k not in exp]
    out += [("DUPLICATE", k, None, ours[k]) for k in dict.fromkeys(dups)]
    return out


def input_problems(notebook: str, profile: str, root: Path | None = None, expected: bool = True) -> list[str]:
    """:func:`toolkit.provenance.problems` of the inputs and LLM clients ``results/<notebook>/<profile>.json``
    recorded, and what it failed to record: no ``inputs`` field at all (every run writes one), or (``expected``)
    an input the expected values' run recorded (``inputs`` of the expected YAML) that this run did not: a notebook
    that replays committed files must name them, else a run that read none of them passes."""
    from .provenance import problems
    doc = results_doc(notebook, profile, root)
    path = results_path(notebook, profile, root)
    if "inputs" not in doc or not isinstance(doc["inputs"], list):
        return [f"{path}: no 'inputs' list (the committed files the run read); re-run the notebook "
                f"(python -m toolkit run {notebook} --profile {profile})"]
    bad = [r for r in doc["inputs"] if not isinstance(r, dict) or not isinstance(r.get("path"), str)]
    if bad:
        return [f"{path}: 'inputs' holds {str(bad[0])[:60]}, not a recorded input; re-run the notebook"]
    out = problems(doc["inputs"], doc.get("llm"))
    if expected and expected_path(notebook, profile).is_file():
        have = {f"{r['path']}#{r['field']}" if r.get("field") else r["path"] for r in doc["inputs"]}
        lost = [x for x in expected_inputs(notebook, profile) if x not in have]
        if lost:
            out.append(f"{path}: the run did not record {len(lost)} input(s) the expected values rest on "
                       f"({expected_path(notebook, profile)}), first {lost[0]}; re-run the notebook (an emptied "
                       "cache directory or TOOLKIT_LLM_CACHE?), or, if it no longer reads them, rewrite the expected "
                       "values with --write")
    return out


def notebooks_with_expected(profile: str) -> list[str]:
    return sorted(p.parent.name for p in EXPECTED.glob(f"*/{profile}.yaml"))


def main(argv: list[str] | None = None, stream=None) -> int:
    p = argparse.ArgumentParser(prog="python -m toolkit check", description=__doc__.split("\n\n")[0])
    add_arguments(p)
    return run(p.parse_args(argv), stream)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", default="smoke", choices=PROFILES)
    p.add_argument("--notebook", action="append", dest="notebooks", metavar="NAME",
                   help="only this notebook (repeatable; default: every notebook with expected values)")
    p.add_argument("--tolerance", type=finite_at_least(0), default=1e-6, help="absolute tolerance (default 1e-6)")
    p.add_argument("--write", action="store_true", help="write the expected values from the current results")
    p.add_argument("--run", action="store_true", help="re-run the notebooks first (python -m toolkit run)")
    p.add_argument("--quiet", action="store_true", help="print only the cells that are not OK")


def run(args, stream=None) -> int:
    stream = stream or sys.stdout
    if args.tolerance < 0:
        raise ValueError("--tolerance must be >= 0")
    for nb in args.notebooks or []:
        # a notebook is a plain name: "../results/01_baselines" would read and write outside results/ and expected/
        if not nb or "/" in nb or "\\" in nb or nb.startswith("."):
            raise ValueError(f"--notebook {nb!r} is not a notebook name (e.g. 01_baselines)")
    with_results = sorted(p.parent.name for p in results_dir().glob(f"*/{args.profile}.json"))
    names = args.notebooks or (with_results if args.write else notebooks_with_expected(args.profile))
    # a run with no expected values is not checked: say so instead of skipping it in silence
    unchecked = [] if args.notebooks or args.write else [nb for nb in with_results if nb not in names]
    if not names:
        raise FileNotFoundError(f"nothing to check: no data/expected/*/{args.profile}.yaml (use --write)")
    if args.run:
        from .runner import run as run_notebooks
        if run_notebooks(names, args.profile, stream=stream):
            return 1
    if args.write:
        failed = 0
        for nb in names:
            try:
                print(f"wrote {write_expected(nb, args.profile)}", file=stream)
            except (ValueError, FileNotFoundError) as e:
                print(f"{'REFUSED':<8}{nb}: {e}", file=stream)
                failed += 1
        return 1 if failed else 0
    bad = 0
    for nb in names:
        try:     # one damaged or missing results file is reported by name; the other notebooks are still checked
            rows = check(nb, args.profile, args.tolerance)
            inputs = input_problems(nb, args.profile)
        except (ValueError, FileNotFoundError, OSError) as e:
            print(f"{'ERROR':<8}{nb}: {e}", file=stream)
            bad += 1
            continue
        nbad = sum(s != "OK" for s, *_ in rows)
        # the committed inputs the run read (sha256) and its LLM backends: a number is only as good as what it read
        for msg in inputs:
            print(f"{'INPUT':<8}{nb}: {msg}", file=stream)
            nbad += 1
        marker = results_dir() / nb / f"{args.profile}.failed"
        if marker.is_file():      # the cells above are the previous good run's, not the last run's
            print(f"{'FAILED':<8}{nb}: the last {args.profile} run failed ({marker}: "
                  f"{marker.read_text().strip()}); re-run it", file=stream)
            nbad += 1
        bad += nbad
        for status, key, e, o in rows:
            if status == "OK" and args.quiet:
                continue
            label = " / ".join(k for k in key if k)
            detail = ("  appears more than once in the results; compare shows the first copy: re-run the notebook"
                      if status == "DUPLICATE" else "" if status == "OK" else
                      f"  expected {e}, got {o}" + (f" (diff {o - e:+.3g})" if status == "FAIL" else ""))
            print(f"{status:<8}{nb}: {label}{detail}", file=stream)
        print(f"{nb} ({args.profile}): {len(rows) - nbad} OK, {nbad} not OK", file=stream)
    for nb in unchecked:
        print(f"{'NOEXPECT':<8}{nb}: results/{nb}/{args.profile}.json has no expected values "
              f"({expected_path(nb, args.profile)}); write them with --write --notebook {nb}", file=stream)
        bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
