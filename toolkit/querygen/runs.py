"""The resumable runs behind ``python -m toolkit.querygen`` (and its ablation rows, each in a process of its own):
zero-shot or fine-tuned answers with the temperature calibrated on dev, and Algorithm 1's alignment iterations with
their test answers. The command line (:mod:`toolkit.querygen.__main__`) only parses arguments and calls these."""
from __future__ import annotations

import json
import sys
import time

from toolkit.llm.client import get_client
from toolkit.querygen import generation as gen
from toolkit.querygen.data import make_split
from toolkit.querygen.experiment import AUTHORED_REQUESTS
from toolkit.querygen.retrieval import QueryIndex


def _log(msg: str) -> None:
    print(f"[querygen] {msg}", file=sys.stderr, flush=True)


def calibrate_and_generate(cfg, split, llm, kind: str = "description", namespace: str | None = None) -> dict:
    """Steps 1-3 above with a live client; returns the calibration."""
    dev = split.dev.nested_sample(cfg.dev_requests, seed=cfg.sample_seed)
    t0 = time.time()
    for t in cfg.temperatures:
        gen.generate_queries(dev.query_texts(), llm, t, kind=kind, desc=f"dev T={t}", namespace=namespace,
                             decoding=cfg.decoding)
        _log(f"dev T={t}: {len(dev.queries)} requests done ({time.time() - t0:.0f}s)")
    index = QueryIndex(split.corpus, cfg.encoder)
    cal = gen.calibrate(index, dev, llm, cfg.temperatures, kind=kind, k=cfg.list_size, namespace=namespace,
                        decoding=cfg.decoding)
    _log(f"calibration {gen.CALIBRATION_METRIC} on {len(dev.queries)} dev requests: "
         f"{ {t: round(v, 4) for t, v in cal['scores'].items()} } -> T={cal['best']}")
    for ds in (split.test_in, split.test_out):
        sample = ds.nested_sample(cfg.test_requests, seed=cfg.sample_seed)
        gen.generate_queries(sample.query_texts(), llm, cal["best"], kind=kind, desc=f"{ds.name} T={cal['best']}",
                             namespace=namespace, decoding=cfg.decoding)
        _log(f"{sample.name}: done ({time.time() - t0:.0f}s)")
    gen.generate_queries(AUTHORED_REQUESTS, llm, cal["best"], kind=kind, desc="authored requests (Table 6)",
                         namespace=namespace, decoding=cfg.decoding)
    return cal


def _client(model: str, backend: str | None, namespace: str, threads: int | None, parallel: int | None):
    kw = {k: v for k, v in (("n_threads", threads), ("n_parallel", parallel)) if v is not None}
    return get_client(model, backend, namespace=namespace, **kw)


def run_alignment(args, cfg, a, test_requests: int | None, stop_after: int | None = None) -> list[dict]:
    """Algorithm 1 with alignment configuration ``a`` (resumable), test answers after each iteration on
    ``test_requests`` requests per test set (nested sample; None: all)."""
    from dataclasses import asdict

    from toolkit.llm.models import gguf_path
    from toolkit.paths import cache_dir
    from toolkit.querygen import sft
    from toolkit.querygen.alignment import align
    from toolkit.querygen.experiment import ALIGN_NAMESPACE
    from toolkit.querygen.export import export_gguf
    split = make_split(cfg.split)
    # fresh requests: the whole training split goes in, each iteration takes its own slice (iteration_requests)
    train = split.train if a.fresh_requests else split.train.nested_sample(a.train_size, seed=cfg.sample_seed)
    root = cache_dir() / "querygen" / "models"
    work = root / f"align-{a.tag()}"
    base = sft.base_model_dir(cfg.generator_base)
    index = QueryIndex(split.corpus, cfg.encoder)

    def gguf_for(model_dir, model_id):
        if str(model_dir) == str(base):
            return gguf_path(cfg.generator_base)          # iteration 0 samples from the shipped base GGUF
        out = root / f"{model_id}.gguf"
        if not out.is_file():
            lm, _ = sft.load(model_dir)
            export_gguf(lm, gguf_path(cfg.generator_base), out, name=model_id)
        return out

    def make_client(model_dir, model_id):
        return _client(str(gguf_for(model_dir, model_id)), "local", ALIGN_NAMESPACE, args.threads, args.parallel)

    def train_fn(model_dir, examples, out_dir):
        log = sft.train(model_dir, examples, out_dir, cfg.sft)
        _log(f"{out_dir.name}: {len(examples)} kept drafts, {log['seconds']:.0f}s, {log['tokens_per_s']} tokens/s")
        return log

    from toolkit.llm.client import default_cache_root
    dest = default_cache_root() / ALIGN_NAMESPACE / f"querygen-align-{a.tag()}.history.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    before = json.loads(dest.read_text())["history"] if dest.is_file() else []   # read once: each write below
                                                                                   # holds only this run's iterations so far

    def on_iteration(history, model_dir, model_id):
        # the history first (committed as it grows), then this iteration's test answers (Figure 4)
        dest.write_text(json.dumps({"config": asdict(a), "history": _keep_measured(before, history)}, indent=1))
        with make_client(model_dir, model_id) as llm:
            for ds in (split.test_in, split.test_out):
                sample = ds.nested_sample(test_requests, seed=cfg.sample_seed)
                gen.generate_queries(sample.query_texts(), llm, cfg.align_eval_temperature, kind=a.kind,
                                     namespace=ALIGN_NAMESPACE, desc=f"{model_id} {ds.name}", decoding=a.decoding)
            gen.generate_queries(AUTHORED_REQUESTS, llm, cfg.align_eval_temperature, kind=a.kind,
                                 namespace=ALIGN_NAMESPACE, decoding=a.decoding)
        _log(f"{model_id}: test answers done")

    history = align(base, train, index, a, work, make_client, train_fn, restrict=split.in_domain_docs, log=_log,
                    on_iteration=on_iteration, stop_after=stop_after)
    _log(f"alignment history -> {dest}")
    return history


SFT_LOG_KEYS = ("seconds", "tokens_per_s", "final_loss")
ALIGN_LOG_KEYS = ("train_seconds", "train_tokens_per_s", "train_final_loss")


def earlier_trainings(prev: dict, new: dict, keys: tuple[str, ...]) -> list[dict]:
    """``prev``'s earlier trainings, plus ``prev``'s own when ``new`` is another training of the same
    model (``keys``: seconds, tokens/s, final loss; the last names the loss): a model whose files were
    lost and was trained again. Its answers cached before then came from the earlier model."""
    earlier = list(prev.get("earlier_training", []))
    if keys[-1] in prev and any(prev.get(k) != new.get(k) for k in keys):
        earlier.append({k: prev[k] for k in keys if k in prev})
    return earlier


def _keep_measured(before: list[dict], history: list[dict]) -> list[dict]:
    """``history`` with what an earlier run (``before``, the history file as the command found it)
    measured and this run did not: its draft timings where this run replayed the drafts from the
    cache, and, where this run trained an iteration again (its model files were gone, e.g. on a new
    machine), the earlier training's log under ``earlier_training`` - the cached drafts and test
    answers of that iteration come from the earlier model, so the notebook must be able to say so."""
    old = {r["iteration"]: r for r in before}
    out = []
    for rec in history:
        prev = old.get(rec["iteration"], {})
        # at an equal count the drafts are the same cached ones: keep the first run's timing (a replay
        # re-derives it from the cache, rounded again)
        if "draft_seconds" in prev and prev.get("drafts_generated", 0) >= rec.get("drafts_generated", 0):
            rec = {**rec, **{k: prev[k] for k in ("drafts_generated", "draft_seconds", "drafts_per_s") if k in prev}}
        earlier = earlier_trainings(prev, rec, ALIGN_LOG_KEYS)
        if earlier:
            rec = {**rec, "earlier_training": earlier}
        out.append(rec)
    return out
