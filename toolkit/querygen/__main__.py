"""Fill the query-generation caches (resumable: rerun a command to continue where it stopped).

    python -m toolkit.querygen zeroshot [--profile standard] [--model qwen-1.5b]
    python -m toolkit.querygen sft      [--profile standard]
    python -m toolkit.querygen align    [--profile standard]
    python -m toolkit.querygen ablate   [--tables 3,4,5]     # one alignment iteration per ablation row
    python -m toolkit.querygen size     [--fair]             # CPU hours from the committed caches' rates; no model
    (every command takes --fair: the fair test, toolkit.querygen.config.fair_config)

Sizes, temperatures, models and training settings come from the notebook's own configuration
(:func:`toolkit.querygen.config.config_for`), so what these commands write is what
``40_querygen`` replays. Each command:

1. answers for the dev sample at every temperature of the grid;
2. calibration: Recall@5 per temperature on it, the best one chosen (§4.3);
3. answers for the in-domain and out-of-domain test samples at that temperature, and for the
   paper's four authored requests (Table 6).

``sft`` first fine-tunes the generator (§3.2), exports it to GGUF and samples through llama.cpp.
Answers go to ``data/llm_cache/<namespace>/<model>.jsonl``.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

from toolkit.config import int_at_least
from toolkit.querygen import generation as gen
from toolkit.querygen.config import config_for, fair_config
from toolkit.querygen.data import make_split
from toolkit.querygen.experiment import SFT_NAMESPACE
from toolkit.querygen.runs import (SFT_LOG_KEYS, _client, _log, calibrate_and_generate, earlier_trainings,  # noqa: F401
                                   run_alignment)


def cmd_zeroshot(args, cfg) -> int:
    split = make_split(cfg.split)
    model = args.model or cfg.zero_shot_model
    with _client(model, args.backend, gen.task_for(args.kind).namespace, args.threads, args.parallel) as llm:
        calibrate_and_generate(cfg, split, llm, args.kind)
        _log(f"{llm.stats['generated']} generated, {llm.stats['cached']} cached")
    return 0


def cmd_sft(args, cfg) -> int:
    from toolkit.llm.models import gguf_path
    from toolkit.paths import cache_dir
    from toolkit.querygen import sft
    from toolkit.querygen.export import export_gguf
    split = make_split(cfg.split)
    train = split.train.nested_sample(cfg.sft_train_requests, seed=cfg.sample_seed)
    root = cache_dir() / "querygen" / "models"
    out_dir = root / f"sft-{cfg.sft_tag()}"
    gguf_file = root / f"querygen-sft-{cfg.sft_tag()}.gguf"
    if not gguf_file.is_file():
        base = sft.base_model_dir(cfg.generator_base)
        examples = sft.sft_examples(train, split.corpus, target_words=cfg.sft_target_words)
        _log(f"SFT of {cfg.generator_base} on {len(examples)} training requests -> {out_dir}")
        log = sft.train(base, examples, out_dir, cfg.sft)
        _log(f"trained: {log['seconds']:.0f}s, {log['tokens_per_s']} tokens/s, final loss {log['final_loss']}")
        # what the notebook shows of the run, committed beside its answers (the weights are not)
        from toolkit.llm.client import default_cache_root
        keep = {k: log[k] for k in ("steps", "examples", "tokens", "seconds", "tokens_per_s", "final_loss", "config",
                                    "steps_log") if k in log}
        dest = default_cache_root() / SFT_NAMESPACE / f"querygen-sft-{cfg.sft_tag()}.train.json"
        dest.parent.mkdir(parents=True, exist_ok=True)
        earlier = earlier_trainings(json.loads(dest.read_text()) if dest.is_file() else {}, keep, SFT_LOG_KEYS)
        dest.write_text(json.dumps({**keep, "base": cfg.generator_base, "train_requests": len(examples),
                                    **({"earlier_training": earlier} if earlier else {})}, indent=1))
        lm, _ = sft.load(out_dir)
        t = time.time()
        export_gguf(lm, gguf_path(cfg.generator_base), gguf_file, name=f"querygen-sft-{cfg.sft_tag()}")
        _log(f"exported {gguf_file.name} in {time.time() - t:.0f}s")
        del lm
    with _client(str(gguf_file), "local", SFT_NAMESPACE, args.threads, args.parallel) as llm:
        cal = calibrate_and_generate(cfg, split, llm, namespace=SFT_NAMESPACE)
        _log(f"{llm.stats['generated']} generated, {llm.stats['cached']} cached; calibration {json.dumps(cal['scores'])}")
    return 0


def cmd_align(args, cfg) -> int:
    """Algorithm 1 from the base generator (not from SFT): each iteration's drafts come from the previous
    iteration's model exported to GGUF (``querygen-align-<tag>-it<t>.gguf``: the cache keys on that name);
    after each iteration its test answers (and the authored requests of Table 6) are generated at
    ``align_eval_temperature`` for Figure 4."""
    run_alignment(args, cfg, cfg.align, test_requests=cfg.test_requests)
    return 0


def cmd_ablate(args, cfg) -> int:
    """Tables 3-5 as one alignment iteration per row, each a change of the main run's configuration
    (``TABLE3_SETTINGS`` ...), compared with the main run's first iteration. Rows that change only the
    filter, the reward or the number of drafts reuse the main run's cached drafts and cost one
    fine-tuning epoch and the test answers (40 prints each row's cost); the intent row samples new
    drafts. Each row runs in a process of its own (:mod:`toolkit.querygen.ablation`)."""
    from dataclasses import replace

    from toolkit.querygen.ablation import in_own_process, run_row
    from toolkit.querygen.alignment import ABLATION_TABLES as settings
    tables = [t.strip() for t in args.tables.split(",")]
    bad = [t for t in tables if t not in settings]
    if bad:      # every table named is checked before the first row's hours of work start
        raise SystemExit(f"--tables: unknown table {bad[0]!r}; choose from {', '.join(settings)}")
    for table in tables:
        for name, change in settings[table].items():
            if not change:
                continue                     # the baseline row is the main run's first iteration
            a = replace(cfg.align, **change)
            _log(f"Table {table}, {name}: align tag {a.tag()}")
            code = in_own_process(run_row, args, cfg, a)      # see toolkit.querygen.ablation: memory
            if code != 0:
                raise SystemExit(f"ablate: Table {table} row {name!r} (align tag {a.tag()}) failed with exit code "
                                 f"{code}{' (killed: out of memory?)' if code == -9 else ''}; rerun the command to "
                                 "resume (finished rows and cached drafts are kept)")
    return 0


def cmd_size(args, cfg) -> int:
    """Print the CPU hours ``cfg`` needs, stage by stage (:mod:`toolkit.querygen.sizing`); runs no model."""
    from toolkit.querygen.sizing import format_sizing, sizing
    print(f"sizing of {'fair' if args.fair else args.profile} ({args.profile} profile): SFT tag {cfg.sft_tag()}, "
          f"align tag {cfg.align.tag()}")
    print(format_sizing(sizing(cfg), budget_hours=args.budget))
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m toolkit.querygen", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    for name, help_ in (("zeroshot", "zero-shot answers: dev temperature grid, calibration, test samples"),
                        ("sft", "fine-tune the generator, export it to GGUF, then as zeroshot"),
                        ("align", "alignment by rejection sampling (Algorithm 1), then test answers per iteration"),
                        ("ablate", "Tables 3-5: one alignment iteration per configuration row"),
                        ("size", "CPU hours of the configuration from the committed caches' rates (no model)")):
        c = sub.add_parser(name, help=help_)
        c.add_argument("--profile", default="standard", choices=("smoke", "standard", "paper"))
        c.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                       help="override a config field (a Python literal), e.g. --set test_requests=100")
        c.add_argument("--fair", action="store_true", help="the fair test (config.fair_config)")
        if name == "size":
            c.add_argument("--budget", type=float, default=20.0, help="CPU hours to compare the total with")
        c.add_argument("--backend", default=None)
        c.add_argument("--threads", type=int_at_least(1), default=2)
        c.add_argument("--parallel", type=int_at_least(1), default=None, help="slots (default: the backend's, 1 on 2 threads)")
        if name == "ablate":
            c.add_argument("--tables", default="3,4,5", help="which ablation tables (comma list of 3, 4, 5)")
        if name == "zeroshot":
            c.add_argument("--model", default=None, help="default: the config's zero_shot_model")
            c.add_argument("--kind", default="description", choices=sorted(gen.TASKS))
    args = p.parse_args(argv)
    from toolkit.runner import parse_param
    try:
        cfg = (fair_config if args.fair else config_for)(args.profile, **dict(parse_param(s) for s in args.set))
    except (KeyError, TypeError, ValueError) as e:
        p.error(f"--set: {e.args[0] if isinstance(e, KeyError) and e.args else e}")     # one line, exit code 2
    return {"zeroshot": cmd_zeroshot, "sft": cmd_sft, "align": cmd_align, "ablate": cmd_ablate,
            "size": cmd_size}[args.command](args, cfg)


if __name__ == "__main__":
    sys.exit(main())
