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


def result_cells(notebook: str, profile: str, root: Path | None = None) -> dict[tuple, float]:
    path = (root or results_dir()) / notebook / f"{profile}.json"
    if not path.is_file():
        raise FileNotFoundError(f"no {profile} run of {notebook}: {path} is missing "
                                f"(python -m toolkit run {notebook} --profile {profile})")
    doc = json.loads(path.read_text(encoding="utf-8"))
    return {_key(c): float(c["value"]) for c in doc.get("cells", [])}


def expected_path(notebook: str, profile: str) -> Path:
    return EXPECTED / notebook / f"{profile}.yaml"


def write_expected(notebook: str, profile: str, root: Path | None = None) -> Path:
    cells = result_cells(notebook, profile, root)
    rows = [dict(zip(KEY, k), value=round(v, 10)) for k, v in cells.items()]
    path = expected_path(notebook, profile)
    path.parent.mkdir(parents=True, exist_ok=True)
    head = (f"# Expected values of {notebook} ({profile} profile), written by `python -m toolkit check --profile "
            f"{profile} --write`.\n# Review changes to this file like code: each one is a number our run moved.\n")
    path.write_text(head + yaml.safe_dump({"notebook": notebook, "profile": profile, "cells": rows},
                                          sort_keys=False, allow_unicode=True, width=200))
    return path


def read_expected(notebook: str, profile: str) -> dict[tuple, float]:
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
    out = {}
    for i, c in enumerate(doc.get("cells", []), 1):
        if not isinstance(c, dict) or "value" not in c:
            raise ValueError(f"{path}: cell #{i} needs {', '.join(KEY)} and value")
        v = c["value"]
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError(f"{path}: cell #{i} ({' / '.join(str(c.get(k, '')) for k in KEY)}) has value {v!r}, "
                             "not a number (write .nan for a value the run cannot compute)")
        out[_key(c)] = float(v)
    return out


def is_timing(key: tuple) -> bool:
    """A wall-clock measurement (metric named ``*seconds*``): it describes the machine and its load, not the
    method, so it is checked for presence and a finite value >= 0, not against the expected number."""
    return "seconds" in key[KEY.index("metric")]


def check(notebook: str, profile: str, tolerance: float = 1e-6, root: Path | None = None) -> list[tuple]:
    """``[(status, key, expected, ours)]`` with status OK, FAIL (drift; for a timing: not a finite value
    >= 0), MISSING (expected, not produced) or NEW (produced, not expected)."""
    exp, ours = read_expected(notebook, profile), result_cells(notebook, profile, root)
    out = []
    for k, e in exp.items():
        if k not in ours:
            out.append(("MISSING", k, e, None))
            continue
        o = ours[k]
        if is_timing(k):
            same = math.isfinite(o) and o >= 0
        else:
            same = (math.isnan(e) and math.isnan(o)) or abs(o - e) <= tolerance
        out.append(("OK" if same else "FAIL", k, e, o))
    out += [("NEW", k, None, v) for k, v in ours.items() if k not in exp]
    return out


def input_problems(notebook: str, profile: str, root: Path | None = None) -> list[str]:
    """:func:`toolkit.provenance.problems` of the inputs and LLM clients ``results/<notebook>/<profile>.json``
    recorded (a run from before inputs were recorded has none to verify)."""
    from .provenance import problems
    path = (root or results_dir()) / notebook / f"{profile}.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    return problems(doc.get("inputs"), doc.get("llm"))


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
        for nb in names:
            print(f"wrote {write_expected(nb, args.profile)}", file=stream)
        return 0
    bad = 0
    for nb in names:
        rows = check(nb, args.profile, args.tolerance)
        nbad = sum(s != "OK" for s, *_ in rows)
        # the committed inputs the run read (sha256) and its LLM backends: a number is only as good as what it read
        for msg in input_problems(nb, args.profile):
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
            detail = "" if status == "OK" else (f"  expected {e}, got {o}" + (f" (diff {o - e:+.3g})" if status == "FAIL"
                                                                                else ""))
            print(f"{status:<8}{nb}: {label}{detail}", file=stream)
        print(f"{nb} ({args.profile}): {len(rows) - nbad} OK, {nbad} not OK", file=stream)
    for nb in unchecked:
        print(f"{'NOEXPECT':<8}{nb}: results/{nb}/{args.profile}.json has no expected values "
              f"({expected_path(nb, args.profile)}); write them with --write --notebook {nb}", file=stream)
        bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
