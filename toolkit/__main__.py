"""``python -m toolkit <command>`` — run notebooks, evaluate a retriever, list data, compare with the papers.

  run NOTEBOOK|all --profile smoke|standard|paper [-p name=value ...]
  evaluate --dataset toole-single --retriever bm25 --metrics ndcg@1,ndcg@5,recall@5 [--json]
  strip-notebooks          remove outputs from notebooks/*.ipynb (executed copies live in results/)
  datasets                 every dataset with its query and document counts
  compare                  paper value, ours and the difference for every reproduced cell
  check                    our own numbers against data/expected/<nb>/<profile>.yaml (OK/FAIL per cell)
  fetch [--only NAME ...]  download the raw data files (sha256-checked) into the data directory
  verify                   check every raw data file against data/SOURCES.json, and the committed caches and traces
  llm generate ...         fill the LLM response caches (see toolkit.llm.cli)
  paper-dry [NB ...]       the paper profile at toy scale on CPU, stand-ins named in the results (toolkit.paper_dry)
  paper-plan [--markdown]  the paper profile's work per notebook: training examples, LLM calls, tokens
  embeddings verify|commit the committed float16 embeddings a fresh clone replays (see toolkit.retrieval.embedding_cache)
  runs [--notebook NB] [--profile P] [--json]   the saved TREC runs and per-query metrics (see toolkit.runs)
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from toolkit.config import int_at_least


def _cmd_run(args) -> int:
    from .runner import parse_param, run
    params = dict(parse_param(p) for p in args.param)
    failed = run(args.notebooks, args.profile, params)
    return 1 if failed else 0


def _cmd_strip(args) -> int:
    from .notebook import strip, strip_text
    from .paths import NOTEBOOKS
    if args.stdin:                                # git's clean filter: notebook JSON in, stripped JSON out
        sys.stdout.write(strip_text(sys.stdin.read()))
        return 0
    paths = args.paths or sorted(NOTEBOOKS.glob("[0-9]*.ipynb"))
    bad = 0
    for path in paths:
        try:       # a damaged notebook is named with the fix; the others are still stripped
            print(f"{path}: {'stripped' if strip(path) else 'clean'}")
        except Exception as e:     # nbformat raises its own validation and JSON errors, OSError for a missing file
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            print(f"error: {path}: not a readable notebook ({type(e).__name__}: {first}); restore it "
                  f"(git checkout -- {path}) or re-pair it from its .py (jupytext --sync)", file=sys.stderr)
            bad += 1
    return 1 if bad else 0


def _cmd_evaluate(args) -> int:
    from .data import load_dataset
    from .metrics import check_depth, evaluate
    from .retrieval import build_retriever, retrieve
    check_depth(args.metrics, args.k)              # before loading data or retrieving anything
    from .runner import parse_param
    # built before the data is loaded, so a bad -r name=value fails at once
    retriever = build_retriever(args.retriever, **dict(parse_param(p) for p in args.retriever_param))
    ds = load_dataset(args.dataset, **({"corpus": args.corpus} if args.corpus else {}))
    if args.limit:
        ds = ds.sample(args.limit, seed=args.seed)
    t = time.time()
    run = retrieve(ds, retriever, k=args.k)
    scores = evaluate(run, ds.qrels, args.metrics)
    seconds = time.time() - t
    if args.json:
        print(json.dumps(scores))
    else:
        print(f"{ds.name}: {len(ds.queries)} queries, {len(ds.corpus)} documents, retriever {args.retriever} "
              f"({seconds:.1f}s)")
        for name, value in scores.items():
            print(f"  {name:<12} {value:.4f}")
    return 0


def _cmd_datasets(args) -> int:
    from .data import list_datasets, load_dataset
    rows = []
    for name, desc in list_datasets().items():
        s = load_dataset(name).stats()
        rows.append((name, s["queries"], s["documents"], round(s["relevant_per_query"], 2), desc))
    if args.json:
        print(json.dumps([dict(zip(("dataset", "queries", "documents", "relevant_per_query", "description"), r))
                          for r in rows], indent=1))
        return 0
    print(f"{'dataset':<36}{'queries':>9}{'documents':>11}{'rel/q':>7}  description")
    for name, nq, nd, rel, desc in rows:
        print(f"{name:<36}{nq:>9}{nd:>11}{rel:>7}  {desc}")
    return 0


def _cmd_fetch(args) -> int:
    from .data import fetch
    skipped: list[str] = []
    for p in fetch(args.only or None, force=args.force, skipped=skipped):
        print(f"ok  {p}")
    for msg in skipped:
        print(f"skipped  {msg}")
    return 0


def _cmd_verify(args) -> int:
    from .committed import verify_committed
    from .data import verify_all
    bad = 0
    if not args.committed:
        status = verify_all()
        for name, s in status.items():
            if s != "ok" or args.verbose:
                print(f"{s:<8} {name}")
        bad += sum(s != "ok" for s in status.values())
        print(f"{len(status) - sum(s != 'ok' for s in status.values())}/{len(status)} raw data files ok")
    # the committed caches, traces and score caches the standard profile replays
    status = verify_committed()
    for path, s in status.items():
        if s != "ok" or args.verbose:
            print(f"{'ok' if s == 'ok' else 'BAD':<8} {path}" + ("" if s == "ok" else f": {s}"))
    nbad = sum(s != "ok" for s in status.values())
    print(f"{len(status) - nbad}/{len(status)} committed caches, traces and score caches ok")
    return 1 if bad + nbad else 0


def _cmd_embeddings(args) -> int:
    from toolkit.retrieval.embedding_cache import COMMITTED, commit_logged, verify_committed_embeddings
    if args.action == "commit":
        if not args.log:
            print("embeddings commit needs --log DIR (the TOOLKIT_EMBEDDING_LOG of a run)", file=sys.stderr)
            return 2
        for name, n in commit_logged(Path(args.log), partial=args.partial).items():
            print(f"{n:>7,} vectors added  {name}")
    status = verify_committed_embeddings()
    for path, s in status.items():
        if s != "ok":
            print(f"BAD      {path}: {s}")
    size = sum(f.stat().st_size for f in COMMITTED.glob("*/*.npy"))
    print(f"{sum(s == 'ok' for s in status.values())}/{len(status)} committed embedding files ok "
          f"({size / 1e6:.1f} MB)")
    return 0 if all(s == "ok" for s in status.values()) else 1


def _cmd_runs(args) -> int:
    from .paths import portable
    from .runs import list_runs
    rows = [r for r in list_runs() if (not args.notebook or r["notebook"].startswith(args.notebook))
            and (not args.profile or r["profile"] == args.profile)]
    if args.json:
        print(json.dumps([{**r, "path": portable(r["path"])} for r in rows], indent=1))
        return 0
    if not rows:
        print("no saved runs (a notebook run writes them: python -m toolkit run <nb> --profile standard)")
        return 0
    print(f"{'notebook':<15}{'profile':<10}{'dataset':<28}{'method':<40}{'queries':>8}{'ndcg@5':>8}  run file")
    for r in rows:
        nd = r["means"].get("ndcg@5")
        print(f"{r['notebook']:<15}{r['profile']:<10}{r['dataset'][:27]:<28}{r['method'][:39]:<40}{r['queries']:>8}"
              f"{'' if nd is None else f'{nd:.4f}':>8}  {portable(r['path'])}")
    size = sum(r["bytes"] for r in rows)
    print(f"{len(rows)} runs, {size / 1e6:.1f} MB (runs and per-query metrics, gzip)")


def _cmd_paper_dry(args) -> int:
    from .paper_dry import dry_run
    return 1 if dry_run(args.notebooks or None, Path(args.out) if args.out else None) else 0


def _cmd_paper_plan(args) -> int:
    from .paper_plan import plan, render
    rows = plan()
    print(json.dumps(rows, indent=1) if args.json else render(rows, markdown=args.markdown))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m toolkit", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("run", help="execute notebooks with papermill")
    p.add_argument("notebooks", nargs="+", help="notebook names (e.g. 01_baselines or 01) or 'all'")
    p.add_argument("--profile", default="smoke", choices=["smoke", "standard", "paper"])
    p.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE",
                   help="notebook parameter (checked against its parameters cell)")
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser("strip-notebooks", help="remove outputs from notebooks/*.ipynb, set the project's kernel")
    p.add_argument("paths", nargs="*", help="notebooks (default: notebooks/[0-9]*.ipynb)")
    p.add_argument("--stdin", action="store_true", help="read one notebook on stdin, write it stripped to stdout "
                   "(the git clean filter make env installs)")
    p.set_defaults(func=_cmd_strip)

    p = sub.add_parser("evaluate", help="evaluate a retriever on a dataset")
    p.add_argument("--dataset", required=True)
    p.add_argument("--retriever", required=True, help="bm25, bm25-rank, minilm, mpnet, dense:<model>")
    p.add_argument("--metrics", default="ndcg@1,ndcg@5,recall@5")
    p.add_argument("--k", type=int_at_least(1), default=100, help="retrieval depth (>= the largest metric cut-off)")
    p.add_argument("--corpus", choices=["library", "pool"], help="ToolBench datasets: corpus to search")
    p.add_argument("--limit", type=int_at_least(1), help="evaluate on a seeded sample of this many queries")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("-r", "--retriever-param", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--json", action="store_true", help="print a JSON object of metric means")
    p.set_defaults(func=_cmd_evaluate)

    p = sub.add_parser("datasets", help="list datasets with query and document counts")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_datasets)

    p = sub.add_parser("fetch", help="download raw data files into the data directory")
    p.add_argument("--only", nargs="*", help="manifest names (keys of data/SOURCES.json)")
    p.add_argument("--force", action="store_true")
    p.set_defaults(func=_cmd_fetch)

    p = sub.add_parser("verify", help="check raw data files against their sha256")
    p.add_argument("-v", "--verbose", action="store_true")
    p.add_argument("--committed", action="store_true", help="only the committed caches, traces and score caches")
    p.set_defaults(func=_cmd_verify)

    p = sub.add_parser("embeddings", help="the committed float16 embedding layer: verify, or commit a logged run's")
    p.add_argument("action", choices=["verify", "commit"])
    p.add_argument("--log", help="commit: the TOOLKIT_EMBEDDING_LOG directory of a run")
    p.add_argument("--partial", action="store_true",
                   help="commit: the logged vectors encoded so far (a run still encoding; commit again when it ends)")
    p.set_defaults(func=_cmd_embeddings)

    p = sub.add_parser("runs", help="list the saved TREC runs (results/<nb>/runs/<profile>/)")
    p.add_argument("--notebook", help="only this notebook (a prefix: 01, 20_reinvoke)")
    p.add_argument("--profile", choices=["smoke", "standard", "paper"])
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_runs)

    p = sub.add_parser("paper-dry", help="every notebook under --profile paper at toy scale, local stand-ins, a real "
                       "llama.cpp server on 127.0.0.1 (toolkit.paper)")
    p.add_argument("notebooks", nargs="*", help="notebook names (default: all)")
    p.add_argument("--out", help="results directory (default: a scratch directory under the cache)")
    p.set_defaults(func=_cmd_paper_dry)

    p = sub.add_parser("paper-plan", help="the paper profile's work per notebook (training examples, LLM calls, "
                       "tokens), counted from its configuration and the data (toolkit.paper_plan)")
    p.add_argument("--markdown", action="store_true", help="a Markdown table (the README's)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_paper_plan)

    from . import check, compare
    from .llm import cli as llm_cli
    p = sub.add_parser("compare", help="paper vs ours for every reproduced cell")
    compare.add_arguments(p)
    p.set_defaults(func=compare.run)

    p = sub.add_parser("check", help="our own numbers against data/expected/: OK/FAIL per cell")
    check.add_arguments(p)
    p.set_defaults(func=check.run)

    p = sub.add_parser("llm", help="LLM generation into the response caches")
    llm_cli.add_arguments(p)
    p.set_defaults(func=llm_cli.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from .runner import RunInterrupted
    try:
        return args.func(args) or 0
    except RunInterrupted as e:
        print(f"interrupted: {e}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print(f"interrupted: python -m toolkit {args.command} stopped by Ctrl-C", file=sys.stderr)
        return 130
    except (KeyError, ValueError, TypeError, FileNotFoundError, NotADirectoryError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else e
        print(f"error: {msg}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # the reader stopped early (`check | head`): not an error of ours; keep Python from reporting it at exit
        import os
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
