"""``python -m toolkit.reinvoke --task intents --dataset toole-single --sample 1000 --seed 0``: live LLM
generation for Re-Invoke into the response cache, resumable, over a seeded query sample (the
``python -m toolkit llm generate`` CLI covers whole datasets or their first N items only)."""
from __future__ import annotations

from toolkit.llm.tasks import get_task
from toolkit.reinvoke.generation import DEFAULT_MODEL, generate, sample_items


def main(argv: list[str] | None = None) -> int:
    """``python -m toolkit.reinvoke --task intents --dataset toole-single --sample 1000 --seed 0``"""
    import argparse
    import sys
    import time

    from toolkit.llm.client import get_client
    p = argparse.ArgumentParser(prog="python -m toolkit.reinvoke", description=main.__doc__)
    p.add_argument("--task", required=True, choices=["intents", "synthetic-queries", "hyde"])
    p.add_argument("--dataset", required=True)
    p.add_argument("--sample", type=int, default=None, help="seeded sample of N queries (dataset.sample)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-set", default=None, choices=["smoke", "standard"],
                   help="the queries (or corpus) notebook 20_reinvoke gives the LLM methods under this profile")
    p.add_argument("--n", type=int, default=None, help="samples per item (task default otherwise)")
    p.add_argument("--model", default=DEFAULT_MODEL)
    p.add_argument("--backend", default=None)
    p.add_argument("--cache-dir", default=None)
    p.add_argument("--parallel", type=int, default=None)
    p.add_argument("--threads", type=int, default=None)
    a = p.parse_args(argv)
    t = get_task(a.task)
    if a.eval_set:   # the notebook's own queries / corpus (ToolBench: the pool corpus, not the 16k library)
        from toolkit.reinvoke.config import config_for
        from toolkit.reinvoke.experiment import eval_sets
        ds = eval_sets(config_for(a.eval_set, seed=a.seed), datasets=[a.dataset])[a.dataset].llm
        items = [(q.qid, q.text) for q in ds.queries.values()] if t.over == "queries" else \
            [(d.doc_id, d.text) for d in ds.corpus.values()]
    else:
        items = sample_items(a.dataset, t.over, a.sample, a.seed)
    kw = {k: v for k, v in (("n_parallel", a.parallel), ("n_threads", a.threads)) if v}
    with get_client(a.model, a.backend, namespace=t.namespace, cache_root=a.cache_dir, sampling=t.sampling,
                    **kw) as llm:
        todo = llm.missing(t.prompts_for(x for _, x in items), n=a.n or t.n)
        print(f"[reinvoke] {t.name} on {a.dataset} ({len(items)} items, sample={a.sample}, seed={a.seed}): "
              f"{len(todo)} answers to generate, cache {llm.cache().path}", file=sys.stderr)
        t0 = time.time()
        generate(t, items, llm, n=a.n)
        print(f"[reinvoke] done: {llm.stats['generated']} generated in {time.time() - t0:.0f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
