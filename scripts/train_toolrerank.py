"""Train ToolRerank's three models for a profile and pre-score the evaluation sets, in the background.

    nohup nice -n 5 env PYTHONPATH=. python scripts/train_toolrerank.py --profile standard \
        > /tmp/toolrerank_standard.log 2>&1 &

Runs exactly what notebook 10_toolrerank runs before its tables — the same configuration object
(``toolkit.toolrerank.config``: split, Setup, evaluation sizes) and cache directories — so the notebook
afterwards only loads the models and the reranker's scores. ``--set name=value`` overrides a field of
the configuration or of its training Setup, as ``-p name=value`` does for the notebook.
Resumable: rerun the same command after a kill. Stages can run in parallel processes:
``--stages dual_encoder`` and ``--stages classifier`` together, then ``--stages reranker``, then
``--prescore toollens --tag a`` and ``--prescore transfer --tag b`` together.

``--draw SEED`` instead trains one held-out draw of the profile (``toolkit.toolrerank.draws``: the split
drawn with SEED, the profile's ``draw_setup``), evaluates it and writes its score cache, which the
notebook replays; two draws can run side by side with ``--set threads=1``. ``--variant NAME`` likewise
trains one reranker variant (``toolkit.toolrerank.variants``: the main split and DPR, the profile's
``variant_setup``). ``--export-dpr`` writes the trained DPR's vectors for the
whole of ToolLens into the committed score cache (``toolkit.toolrerank.dpr_vectors``): a variant, the alone scores or
a retrained reranker on this split then run on a fresh machine without retraining the DPR. ``--alone`` scores the profile's ``alone_queries`` per subset against the whole library
with the DPR and the reranker (of the main configuration, or of ``--variant``) and writes the committed
file notebook 10's reranker-alone table replays (``toolkit.toolrerank.alone``). ``--budget`` trains the budget
control (``toolkit.toolrerank.budget``: the main reranker retrained with the profile's ``budget_setup``, e.g. on every
training query) and scores the main run's dev and test samples with it into its committed score cache; run
``--set ce_queries=0`` (the standard ``budget_setup``) first to train and pre-score it resumably, then ``--budget``.

``--strong`` is the reranker trained to strength (``toolkit.toolrerank.strong``, issue 82): ``--plan`` prints pairs,
steps per epoch, the measured pairs/s and the hours per seed; ``--bench SECONDS`` measures pairs/s before and after
length bucketing + compact rendering in one run (results/bench/toolrerank_strong.json); otherwise it trains (or
continues from data/checkpoints/) ``--strong-config NAME`` with ``--seed`` (each of the configuration's seeds when
omitted), ``--max-steps`` bounding this call so a session can stop and the next continue.
"""
from __future__ import annotations

import argparse
import json
import time

from toolkit.config import int_at_least
from toolkit.runner import parse_param
from toolkit.toolrerank.config import PROFILE_NAMES, config_for
from toolkit.toolrerank.experiment import eval_sets, prescore, toollens_split, train_all, transfer_sets


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", default="standard", choices=PROFILE_NAMES)
    ap.add_argument("--stages", default="dual_encoder,reranker,classifier")
    ap.add_argument("--prescore", default="toollens,transfer", help="toollens, transfer, both or none")
    ap.add_argument("--only", default="", help="comma list of set names to pre-score (dev, I1-Inst, ..., toolbench-g1-tool)")
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                    help="override a configuration or Setup field, e.g. --set ce_rounds=2 --set subset_queries=None")
    ap.add_argument("--tag", default="", help="suffix of this process's score file (parallel runs)")
    ap.add_argument("--draw", type=int_at_least(0), default=None, metavar="SEED",
                    help="train and score one held-out draw (its own split and score cache) instead")
    ap.add_argument("--variant", default=None, metavar="NAME",
                    help="train and score one reranker variant (toolkit.toolrerank.variants.VARIANTS) instead")
    ap.add_argument("--alone", action="store_true",
                    help="score alone_queries per subset against the whole library (DPR and reranker) and save them")
    ap.add_argument("--headtohead", action="store_true",
                    help="score notebook 50's common set (I1/I2/I3 over the library, UltraTool) with this profile's "
                         "models and save it (toolkit.toolrerank.headtohead); notebook 10's score cache must exist")
    ap.add_argument("--budget", action="store_true",
                    help="train and score the budget control (toolkit.toolrerank.budget: the main reranker retrained "
                         "with the profile's budget_setup) on the main run's samples and write its score cache")
    ap.add_argument("--export-dpr", action="store_true",
                    help="after training, write the DPR's vectors of every ToolLens text to data/score_cache/toolrerank "
                         "(toolkit.toolrerank.dpr_vectors), so later runs on this split need no DPR weights")
    ap.add_argument("--fair", action="store_true",
                    help="issue 50's fields (toolkit.toolrerank.config.FAIR_STANDARD) under the --set overrides; the "
                         "standard profile holds them already since issue 50")
    ap.add_argument("--first-run", action="store_true",
                    help="the first standard runs' configuration (toolkit.toolrerank.config.first_run_config) "
                         "instead of the standard profile")
    ap.add_argument("--strong", action="store_true",
                    help="the reranker trained to strength (toolkit.toolrerank.strong): train, --plan or --bench")
    ap.add_argument("--strong-config", default="strong", help="a name of toolkit.toolrerank.strong.STRONG_VARIANTS")
    ap.add_argument("--seed", type=int_at_least(0), default=None, help="--strong: one seed (default: all three)")
    ap.add_argument("--max-steps", type=int_at_least(1), default=None, help="--strong: stop this call after this step")
    ap.add_argument("--plan", action="store_true", help="--strong: print the plan (pairs, steps, pairs/s, hours)")
    ap.add_argument("--bench", type=float, default=None, metavar="SECONDS",
                    help="--strong: pairs/s before and after bucketing + compact rendering, SECONDS each")
    args = ap.parse_args()
    from toolkit.toolrerank.config import FAIR_STANDARD, first_run_config
    if args.first_run and (args.profile != "standard" or args.fair):
        raise SystemExit("--first-run is the first standard runs' configuration: use it with --profile standard, "
                         "without --fair")
    over = {**(FAIR_STANDARD if args.fair else {}), **dict(parse_param(x) for x in args.set)}
    cfg = first_run_config(**over) if args.first_run else config_for(args.profile, **over)
    if args.alone:
        run_alone(cfg, args.variant)
        return
    if args.strong:
        run_strong(cfg, args)
        return
    if args.plan or args.bench is not None:
        raise SystemExit("--plan and --bench belong to --strong: add --strong")
    if args.headtohead:
        from toolkit.methods.benchmark import benchmark_sets
        from toolkit.methods.benchmark import config_for as headtohead_config
        from toolkit.toolrerank import headtohead
        headtohead.best_config(cfg)          # fails early, naming the command, when notebook 10 has not run
        sets = benchmark_sets(headtohead_config(args.profile))
        t0 = time.time()
        path = headtohead.score(cfg, sets, log=lambda m: print(m, flush=True))
        print("done", path, f"{time.time() - t0:.0f} s", flush=True)
        return
    if args.budget:
        from toolkit.toolrerank.budget import pairs_of, run_budget
        t0 = time.time()
        run = run_budget(cfg, train_missing=True, log=lambda m: print(m, flush=True))
        print("done", json.dumps({"budget_setup": cfg.budget_setup, "replayed": run.draw.replayed,
                                  "train_pairs": pairs_of(run.draw.training), "recall": run.draw.recall,
                                  "wall_s": round(time.time() - t0, 1)}), flush=True)
        return
    if args.variant is not None:
        from toolkit.toolrerank.variants import run_variant
        t0 = time.time()
        d = run_variant(cfg, args.variant, train_missing=True, log=lambda m: print(m, flush=True))
        print("done", json.dumps({"variant": args.variant, "replayed": d.replayed, "recall": d.recall,
                                  "dev": (d.training.get("reranker") or {}).get("best_dev"),
                                  "wall_s": round(time.time() - t0, 1)}), flush=True)
        return
    if args.draw is not None:
        from toolkit.toolrerank.draws import run_draw
        t0 = time.time()
        d = run_draw(cfg, args.draw, train_missing=True, log=lambda m: print(m, flush=True))
        print("done", json.dumps({"seed": d.seed, "replayed": d.replayed, "coverage": d.coverage, "recall": d.recall,
                                  "wall_s": round(time.time() - t0, 1)}), flush=True)
        return
    setup = cfg.setup
    t0 = time.time()
    split = toollens_split(setup)
    print(json.dumps(split.summary()), flush=True)
    stages = [s for s in args.stages.split(",") if s]
    models = train_all(split, setup, log=lambda m: print(m, flush=True), stages=stages)
    print(json.dumps(models.stats, indent=1), flush=True)
    if args.export_dpr:
        from toolkit.toolrerank import dpr_vectors
        t = time.time()
        out = dpr_vectors.export(models.dual_encoder)
        print(f"exported {out} ({dpr_vectors.meta(models.root)['texts']} texts, {time.time() - t:.0f} s)", flush=True)
    timings = {"train_wall_s": round(time.time() - t0, 1), "stats": models.stats}
    which = [s for s in args.prescore.split(",") if s and s != "none"]
    if which:
        sets = {}
        if "toollens" in which:
            sets.update(eval_sets(split, cfg.subset_queries, cfg.dev_queries, seed=cfg.eval_seed))
        if "transfer" in which:
            sets.update(transfer_sets(cfg.transfer_queries, corpus=cfg.transfer_corpus, seed=cfg.eval_seed,
                                         sample_pools_only=args.profile == "smoke"))
        if args.only:
            sets = {k: v for k, v in sets.items() if k in args.only.split(",")}
        timings["prescore_s"] = prescore(sets, models, setup, log=lambda m: print(m, flush=True), tag=args.tag)
    timings["total_wall_s"] = round(time.time() - t0, 1)
    name = f"timings-{'-'.join(stages) or 'none'}-{'-'.join(which) or 'none'}.json"
    (models.root / name).write_text(json.dumps(timings, indent=1) + "\n")
    print("done", json.dumps(timings), flush=True)


def run_strong(cfg, args) -> None:
    from toolkit.toolrerank import strong
    if args.plan:
        p = strong.plan_for(cfg, args.strong_config)
        for k, v in p.items():
            print(f"{k:>26}: {v}")
        if p["pairs/s (measured)"] is None:
            print(f"{'':>26}  pairs/s not measured yet: python scripts/train_toolrerank.py --profile {cfg.profile} "
                  f"--strong --bench 150")
        return
    if args.bench is not None:
        print("done", json.dumps(strong.bench(cfg, args.bench, log=lambda m: print(m, flush=True))), flush=True)
        return
    seeds = [args.seed] if args.seed is not None else list(strong.strong_config(args.strong_config).seeds)
    for seed in seeds:
        rec = strong.train_seed(cfg, args.strong_config, seed, args.max_steps, log=lambda m: print(m, flush=True))
        print("done", json.dumps({k: v for k, v in rec.items() if k != "curve"}), flush=True)


def run_alone(cfg, variant: str | None) -> None:
    from toolkit.toolrerank import alone
    from toolkit.toolrerank.variants import slug, variant_config
    if not cfg.alone_queries and cfg.alone_queries is not None:
        raise SystemExit(f"--alone: the {cfg.profile} profile's alone_queries is 0; pass --set alone_queries=30")
    run_cfg = variant_config(cfg, variant) if variant else cfg
    split = toollens_split(run_cfg.setup)
    path = alone.path_for(run_cfg, split, slug(variant) if variant else "")
    if path.is_file():
        print(f"{path} exists: nothing to do", flush=True)
        return
    t0 = time.time()
    models = train_all(split, run_cfg.setup, log=lambda m: print(m, flush=True))
    ids, samples, scores = alone.compute(split, models, run_cfg.setup, run_cfg.alone_queries, run_cfg.eval_seed,
                                         run_cfg.alone_library,
                                         log=lambda m: print(m, flush=True))
    alone.save(path, ids, samples, scores, {"variant": variant or "main", "training": models.stats,
                                            "seconds": round(time.time() - t0, 1)})
    print("done", path, flush=True)


if __name__ == "__main__":
    main()
