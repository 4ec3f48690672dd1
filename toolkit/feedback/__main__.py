"""The feedback experiment's long stages, each resumable (rerun to continue) and cached:

    python -m toolkit.feedback warmup          [--profile standard]              # ToolRetriever
    python -m toolkit.feedback train-feedback  [--profile standard]              # offline feedback, training
    python -m toolkit.feedback train           [--profile standard] [--condition '4:w/o warm-up']
    python -m toolkit.feedback test            [--profile standard] --group I2 [--condition '7:Ours (dim=512)']
    python -m toolkit.feedback toolretriever   [--profile standard] --group I1
    python -m toolkit.feedback controls        [--profile standard] [--group I2]  # the controls' traces, no LLM
    python -m toolkit.feedback toolretriever-loop [--profile standard] --group I2  # the LLM's loop, warm-up retriever
    python -m toolkit.feedback all             [--profile standard]              # every trace notebook 30 needs
    python -m toolkit.feedback status          [--profile standard]              # planned / traced per stage
    python -m toolkit.feedback <stage> --fair  ...                               # the fair LLM step
    python -m toolkit.feedback toolretriever-loop --fair --llm qwen-0.5b --group I2 --n 60   # another LLM, a sample

A stage runs the stages it depends on first (cached ones return at once). Sizes, models and settings come
from the notebook's configuration (``toolkit.feedback.config``), so what these commands write is what
``30_feedback`` reads: traces in ``data/feedback_traces/`` and LLM answers in ``data/llm_cache/feedback/``
(both committed), models in ``cache_dir()/models/feedback/`` (never committed; a model that an earlier commit kept in
``data/models/feedback/`` is restored from the git history when a stage needs it:
:func:`toolkit.feedback.stages.restore_from_history`). See
:mod:`toolkit.feedback.experiment`.
"""
from __future__ import annotations

import argparse
import sys

from toolkit.feedback import experiment as X
from toolkit.feedback import stages
from toolkit.config import int_at_least
from toolkit.feedback.config import PROFILE_NAMES, config_for, fair_config


def parse_condition(cfg, text: str | None):
    """``'<table>:<row label>'`` (a row of Tables 4, 6 or 7) -> that row's configuration; None -> ``cfg``."""
    if not text:
        return cfg
    table, _, label = text.partition(":")
    if table not in X.CONDITIONS or label not in X.CONDITIONS[table]:
        known = "; ".join(f"'{t}:{lab}'" for t, rows in X.CONDITIONS.items() for lab in rows)
        raise SystemExit(f"--condition {text!r} is not a row of Tables 4, 6 or 7; known: {known}")
    return X.condition(cfg, table, label)


def run_all(cfg, run=None) -> None:
    """Every trace the notebook needs, in :func:`missing_commands`' order: the ToolRetriever runs (no LLM), the
    loop on ToolRetriever on I2, the training feedback, the main run's test groups, their controls, the Tables 4
    and 7 conditions, Table 6's mpnet (its warm-up's ToolRetriever run on I2, then its loop), then the loop on
    ToolRetriever on the other groups.

    Each missing trace is written by its own child process (its stage's command), one after another, so the
    memory of one stage is returned before the next starts: one process that had loaded the LLM, the corpus
    embeddings and two trained models held ~15 GB, and mpnet's training on top of that passed 24 GB and was
    killed. ``run``: how a command is run (``subprocess.run`` with ``check=True``; a stub in the tests)."""
    import shlex
    import subprocess
    run = run or (lambda argv: subprocess.run(argv, check=True))
    for cmd in missing_commands(cfg):
        print(f"[feedback] all: {cmd}", file=sys.stderr, flush=True)
        run([sys.executable, *shlex.split(cmd)[1:]])       # "python -m toolkit.feedback ..." with this interpreter
    from toolkit.feedback.collect import collect
    _, pending, _ = collect(cfg, X.test_datasets(cfg))
    print(f"pending after `all`: {len(pending)}", file=sys.stderr)


def missing_commands(cfg) -> list[str]:
    """The commands that write the traces still missing or incomplete, in the order ``all`` runs them (the fair step's
    order of what each row tells a reader): the ToolRetriever runs (no LLM); the LLM's loop on ToolRetriever on I2
    (the fair LLM step, no feedback training); the stages in :func:`~toolkit.feedback.experiment.llm_stages`' order
    up to the Tables 4, 6, 7 conditions; each group's controls (no LLM: the matched-budget fine-tune and the oracle);
    the conditions, where one with another base encoder (Table 6's mpnet: its own warm-up, ~5x slower to train and
    encode than MiniLM, hours on this CPU) comes after the others, its warm-up's ToolRetriever run (no LLM) before
    its loop; last, the loop on ToolRetriever on the other groups. The conditions come before that loop because
    they carry claims the notebook judges (Tables 4, 6, 7), while the loop beyond I2 only repeats a control that
    I2 already gives (the decomposition's loop part is Ours against Ours at T = 0)."""
    from toolkit.feedback import controls as C
    from toolkit.feedback.config import with_fair_feedback
    tests = X.test_datasets(cfg)
    fair = with_fair_feedback(cfg)
    groups = (*X.GROUPS, *X.OUT_OF_DOMAIN)
    out = [X.command("toolretriever", cfg, g) for g in groups if not X.toolretriever_trace_path(cfg, g).is_file()]

    def loop(g) -> list[str]:
        done = X.trace_complete(C.toolretriever_loop_trace_path(fair, g, cfg.sample_size(g)), X.llm_sample(cfg, tests, g))
        return [] if done else [X.command("toolretriever-loop", fair, g)]
    out += loop(X.ABLATION_GROUP)
    # a condition with its own warm-up (Table 6's other base encoder; MiniLM again under smoke) goes last: stable
    stages_ = sorted(X.llm_stages(cfg, tests),
                     key=lambda s: s.cfg.base != cfg.base or bool(s.condition and s.condition[0] in X.WARMUP_ROWS))
    main = [s for s in stages_ if not s.condition]
    for stage in main:
        if not X.trace_complete(stage.path, stage.qids):
            out.append(stage.command)
    for stage in main:
        if stage.group is None:
            continue
        n = cfg.sample_size(stage.group)
        paths = [C.same_steps_trace_path(cfg, stage.group, n),
                 *(C.oracle_trace_path(cfg, stage.group, n, r) for r in C.RETRIEVERS)]
        if not all(X.trace_complete(p, stage.qids) for p in paths):
            out.append(C.command(cfg, stage.group))
    for stage in (s for s in stages_ if s.condition):
        if stage.condition[0] in X.WARMUP_ROWS and not X.toolretriever_trace_path(stage.cfg, stage.group).is_file():
            out.append(X.command("toolretriever", stage.cfg, stage.group, *stage.condition))
        if not X.trace_complete(stage.path, stage.qids):
            out.append(stage.command)
    return out + [c for g in groups if g != X.ABLATION_GROUP for c in loop(g)]


def print_status(cfg) -> None:
    """The plan's progress from the committed traces (no model): instructions planned and traced per stage, the
    generation hours so far, and the plan's upper bound from the recorded benchmark."""
    from toolkit.feedback import budget as B
    tests = X.test_datasets(cfg)
    progress = B.progress(cfg, tests, loop_controls=True)
    print(f"30_feedback ({cfg.profile}): LLM {cfg.llm}, {cfg.llm_slots or 1} slot(s)")
    problems = progress.pop("problem") if "problem" in progress else progress.planned.map(lambda _: "")
    print(progress.to_string())
    for stage, msg in problems[problems != ""].items():
        print(f"DAMAGED {stage}: {msg}")
    if (problems != "").any():
        raise SystemExit(f"{int((problems != '').sum())} stage(s) have damaged traces (above); restore or regenerate them")
    left = (progress.planned - progress.traced).clip(lower=0).to_dict()
    at = B.left_at_measured_rate(progress)
    left_n, rate = at["left"], at["s per instruction"]
    done = progress[progress["wall h"] > 0]
    if left_n == 0:
        print(f"nothing left: all {int(progress.planned.sum()):,} planned instructions are traced"
              + (f", {done['wall h'].sum():.1f} h of generation at {rate:.0f} s per instruction" if rate else ""))
        return
    rec = B.bench_record(B.load_bench(), cfg)
    if rec is not None:
        s = rec["variants"]["chat"]["seconds per round"]
        print(f"left: {left_n:,} instructions, <= {B.plan_hours(left, cfg.training.rounds, s):.1f} h at "
              f"{s} s per round (benchmark of {rec['measured']})")
    if rate is not None:
        print(f"measured so far: {rate:.0f} s per instruction over {int(done.traced.sum()):,} traced -> "
              f"~{at['hours']:.1f} h for the {left_n:,} left at that rate (the traces' wall time: a run "
              f"killed mid-chunk loses that chunk's time, and cached answers are served free, so a lower bound)")


def main(argv: list[str] | None = None) -> int:
    import logging
    logging.basicConfig(level=logging.INFO, format="[feedback] %(message)s", stream=sys.stderr)
    p = argparse.ArgumentParser(prog="python -m toolkit.feedback", description=__doc__.split("\n\n")[0])
    p.add_argument("stage", choices=("warmup", "train-feedback", "train", "test", "toolretriever", "toolretriever-loop", "controls", "all", "status"))
    p.add_argument("--profile", default="standard", choices=PROFILE_NAMES)
    p.add_argument("--group", default=None, help="test / toolretriever: I1 | I2 | I3 | UltraTool")
    p.add_argument("--fair", action="store_true",
                   help="the fair LLM step (toolkit.feedback.config.fair_config: paper wording, caps that hold "
                        "the answers, unchanged = N/A); its traces have their own names")
    p.add_argument("--condition", default=None, help="a row of Tables 4, 6, 7, e.g. '4:w/o warm-up'")
    p.add_argument("--llm", default=None, help="the feedback LLM instead of the profile's (a name of toolkit.llm: "
                   "qwen-0.5b, qwen-1.5b, a local GGUF path, or a model of an OpenAI-compatible server with "
                   "TOOLKIT_LLM_BACKEND=openai); its traces have their own names")
    p.add_argument("--n", type=int_at_least(1), default=None,
                   help="toolretriever-loop: the group's nested sample of N instructions (default: the profile's)")
    p.add_argument("--chunk", type=int_at_least(1), default=20,
                   help="toolretriever-loop: instructions per trace write (a killed run loses at most one chunk)")
    p.add_argument("--slots", type=int_at_least(1), default=None,
                   help="llama.cpp slots (instructions whose rounds decode together) instead of the profile's "
                        "llm_slots; scripts/bench_llm_slots.py measures which is fastest (not part of a trace's name)")
    args = p.parse_args(argv)
    over = {"llm": args.llm} if args.llm else {}
    if args.slots is not None:
        over["llm_slots"] = args.slots
    cfg = parse_condition(fair_config(args.profile, **over) if args.fair else config_for(args.profile, **over),
                          args.condition)
    for flag, value, default in (("--n", args.n, None), ("--chunk", args.chunk, 20)):
        if value != default and args.stage != "toolretriever-loop":
            p.error(f"{flag} is for toolretriever-loop, not {args.stage}")
    groups = (*X.GROUPS, *X.OUT_OF_DOMAIN)
    if args.group is not None and args.group not in groups:     # a typo is an error for every stage, status too
        p.error(f"--group {args.group!r} is not a group; groups: {', '.join(groups)} (All is the union of I1-I3)")
    if args.group is not None and args.stage not in ("test", "toolretriever", "toolretriever-loop", "controls"):
        p.error(f"--group is for test and toolretriever, not {args.stage} (status lists every group)")
    if args.stage in ("test", "toolretriever", "toolretriever-loop"):
        if args.group not in groups:
            p.error(f"{args.stage} needs --group, one of {', '.join(groups)} (All is the union of I1-I3)")
    try:
        return _run_stage(args, cfg)
    except stages.HistoryUnavailable as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def _run_stage(args, cfg) -> int:
    if args.stage == "status":
        print_status(cfg)
    elif args.stage == "warmup":
        stages.warmup(cfg)
    elif args.stage == "train-feedback":
        stages.train_feedback(cfg)
    elif args.stage == "train":
        stages.train(cfg)
    elif args.stage == "test":
        n = cfg.ablation_requests if args.condition else cfg.sample_size(args.group)
        stages.test(cfg, args.group, n)
    elif args.stage == "toolretriever":
        stages.toolretriever(cfg, args.group)
    elif args.stage == "toolretriever-loop":
        from toolkit.feedback import controls
        controls.toolretriever_loop_test(cfg, args.group, n=args.n, chunk=args.chunk)
    elif args.stage == "controls":
        from toolkit.feedback import controls
        controls.run_all(cfg, [args.group] if args.group else None)
    else:
        run_all(cfg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
