"""Command line for LLM generation (wired by the lead as ``python -m toolkit llm ...``; until then
``python -m toolkit.llm.cli ...``).

    python -m toolkit.llm.cli generate --prompt intents --dataset toole-multi --limit 50 --model qwen-1.5b
    python -m toolkit.llm.cli generate --prompt intents --dataset toole-multi --backend replay
    python -m toolkit.llm.cli stats
    python -m toolkit.llm.cli compact
    python -m toolkit.llm.cli models

``generate`` is resumable: answers already in the cache are skipped, so rerunning after an
interruption only computes what is missing.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from toolkit.config import int_at_least
from toolkit.llm import models as _models
from toolkit.llm.base import LLMError
from toolkit.llm.client import BACKENDS, default_cache_root, get_client
from toolkit.llm.tasks import TASKS, dataset_items, get_task


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="llm_command", metavar="{generate,stats,compact,models}")
    sub.required = True

    g = sub.add_parser("generate", help="run an LLM task over a dataset, cached and resumable")
    g.add_argument("--prompt", required=True, choices=sorted(TASKS), help="task / prompt template")
    g.add_argument("--dataset", default="toole-multi", help="dataset name (toolkit.data.load_dataset)")
    g.add_argument("--limit", type=int_at_least(1), default=None, help="first N items only")
    g.add_argument("--offset", type=int_at_least(0), default=0, help="skip the first N items")
    g.add_argument("--model", default=None, help=f"model alias, .gguf path, HF dir or served name "
                   f"(default: $TOOLKIT_LLM_MODEL or {_models.DEFAULT_MODEL})")
    g.add_argument("--backend", default=None, choices=list(BACKENDS) + ["auto"],
                   help="default: $TOOLKIT_LLM_BACKEND or auto")
    g.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint (or $TOOLKIT_LLM_BASE_URL); "
                   "the API key is read from $TOOLKIT_LLM_API_KEY / $OPENAI_API_KEY only")
    g.add_argument("--n", type=int_at_least(1), default=None, help="samples per item (task default otherwise)")
    g.add_argument("--temperature", type=float, default=None)
    g.add_argument("--top-p", type=float, default=None)
    g.add_argument("--top-k", type=int, default=None)
    g.add_argument("--max-tokens", type=int, default=None)
    g.add_argument("--seed", type=int, default=None)
    g.add_argument("--namespace", default=None, help="cache namespace (task default otherwise)")
    g.add_argument("--cache-dir", default=None, help=f"cache root (default: $TOOLKIT_LLM_CACHE or {default_cache_root()})")
    g.add_argument("--parallel", type=int, default=None, help="local: parallel sequences (slots; default 1 below 4 threads, else 4); "
                   "openai: concurrent requests (default 4)")
    g.add_argument("--threads", type=int, default=None, help="local: CPU threads (default: $TOOLKIT_LLM_THREADS, else the cores not busy)")
    g.add_argument("--no-prompt-cache", action="store_true", help="local: do not reuse the KV cache of shared prefixes")
    g.add_argument("--out", default=None, help="also write parsed answers as JSONL {id, text, answers, parsed}")
    g.add_argument("--quiet", action="store_true", help="no progress bar")

    s = sub.add_parser("stats", help="summarize the response caches")
    s.add_argument("--cache-dir", default=None)

    k = sub.add_parser("compact", help="rewrite cache files with shared prompt prefixes stored once "
                       "(never while a generation is writing to them)")
    k.add_argument("--cache-dir", default=None)
    k.add_argument("files", nargs="*", help="<namespace>/<model>.jsonl paths under the cache dir (default: all)")

    sub.add_parser("models", help="list the local GGUF models (licence, size, sha256)")


def _backend_kwargs(args: argparse.Namespace, backend: str | None, model: str | None) -> dict:
    from toolkit.llm.client import select_backend
    name = select_backend(model, backend)
    kw: dict = {}
    if name == "local":
        if args.parallel:
            kw["n_parallel"] = args.parallel
        if args.threads:
            kw["n_threads"] = args.threads
        if args.no_prompt_cache:
            kw["prompt_cache"] = False
    elif name == "openai":
        if args.base_url:
            kw["base_url"] = args.base_url
        if args.parallel:
            kw["concurrency"] = args.parallel
    return kw


def cmd_generate(args: argparse.Namespace) -> int:
    task = get_task(args.prompt)
    items = dataset_items(args.dataset, task.over)[args.offset:]
    if args.limit is not None:
        items = items[: args.limit]
    sampling = task.sampling.with_(temperature=args.temperature, top_p=args.top_p, top_k=args.top_k,
                                   max_tokens=args.max_tokens, seed=args.seed)
    n = args.n or task.n
    client = get_client(args.model, args.backend, namespace=args.namespace or task.namespace,
                        cache_root=args.cache_dir, sampling=sampling, progress=not args.quiet,
                        **_backend_kwargs(args, args.backend, args.model))
    prompts = task.prompts_for(t for _, t in items)
    with client:
        todo = client.missing(prompts, n=n)
        print(f"[llm] task={task.name} dataset={args.dataset} items={len(items)} n={n} model={client.model_id} "
              f"backend={client.backend.name} mode={client.mode}", file=sys.stderr)
        print(f"[llm] sampling={sampling.key()} ({task.sampling_note})", file=sys.stderr)
        print(f"[llm] cache={client.cache().path}: {len(items) * n - len(todo)} cached, {len(todo)} to generate",
              file=sys.stderr)
        t0 = time.time()
        answers = client.generate(prompts, n=n, desc=f"{task.name} [{client.model_id}]")
        dt = time.time() - t0
    parsed = [[task.parse(a) for a in per] for per in answers]
    empty = sum(1 for per in parsed for p in per if not p)
    print(f"[llm] done: {client.stats['generated']} generated in {dt:.0f}s, {client.stats['cached']} from cache; "
          f"{empty} answers parse to nothing", file=sys.stderr)
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(out, "w") as f:
            for (iid, text), per, pp in zip(items, answers, parsed):
                f.write(json.dumps({"id": iid, "text": text, "answers": per, "parsed": pp}, ensure_ascii=False) + "\n")
        print(f"[llm] wrote {out}", file=sys.stderr)
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    from toolkit.llm.cache import ResponseCache
    root = Path(args.cache_dir) if args.cache_dir else default_cache_root()
    files = sorted(root.glob("*/*.jsonl"))
    if not files:
        print(f"no caches under {root}")
        return 0
    for f in files:
        c = ResponseCache(root, f.parent.name, f.stem, readonly=True)
        s = c.stats()
        print(f"{f.relative_to(root)}: {s['answers']} answers, {s['prompts']} prompts, {s['configs']} configs, "
              f"{s['bytes'] / 1e6:.2f} MB, {s['generation_seconds']:.0f} s summed over calls (parallel calls overlap)"
              + (f"; {len(s['damaged_lines'])} damaged lines skipped" if s["damaged_lines"] else ""))
        for where in s["damaged_lines"]:
            print(f"  damaged: {where}")
    return 0


def cmd_compact(args: argparse.Namespace) -> int:
    from toolkit.llm.cache import ResponseCache
    root = Path(args.cache_dir) if args.cache_dir else default_cache_root()
    files = [root / f for f in args.files] if args.files else sorted(root.glob("*/*.jsonl"))
    for f in files:
        r = ResponseCache(root, f.parent.name, f.stem).compact()
        print(f"{f.relative_to(root)}: {r['answers']} answers, {r['bytes_before']} -> {r['bytes_after']} bytes")
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    for row in _models.describe():
        print(json.dumps(row))
    return 0


def run(args: argparse.Namespace) -> int:
    try:
        return {"generate": cmd_generate, "stats": cmd_stats, "compact": cmd_compact,
                "models": cmd_models}[args.llm_command](args)
    except LLMError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m toolkit.llm.cli", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
