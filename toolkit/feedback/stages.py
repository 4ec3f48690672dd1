"""The feedback experiment's long stages (module docstring of :mod:`toolkit.feedback.experiment`),
each cached and resumable; ``python -m toolkit.feedback`` runs them in the background, the smoke
profile's notebook runs them itself (echo LLM, a few training steps).

Models live in ``cache_dir()/models/feedback/`` and are never committed; what the notebook needs from them
is in the committed traces and their ``.meta.json`` (training statistics, LLM seconds). Earlier commits kept
the models that committed traces were continued with in ``data/models/feedback/`` (some rounded to float16
shards, :mod:`toolkit.weights`); they leave the tree, and :func:`restore_from_history` gives a stage
those very weights back from the git history, so a fresh machine continues a trace without retraining into
weights that need not be bit-identical (:func:`check_same_retriever` guards both cases)."""
from __future__ import annotations

import time
from pathlib import Path

from toolkit.feedback import experiment as X
from toolkit.provenance import shown


def _log(msg: str) -> None:
    """A stage's progress line, logged at INFO on ``toolkit.feedback``: ``python -m toolkit.feedback`` prints it
    (stderr); a notebook, which configures no logging, does not (notebook 30 says what its stages wrote)."""
    import logging
    logging.getLogger("toolkit.feedback").info(msg)


def models_dir() -> Path:
    from toolkit.paths import cache_dir
    return cache_dir() / "models" / "feedback"


KEPT_DIR = X.TRACE_DIR.parent / "models" / "feedback"     # models earlier commits kept (leaving the tree)


def llm_client(cfg):
    """The feedback LLM: live (cache first, then the model); smoke's echo answers go to a cache outside the repo."""
    from toolkit.llm.client import get_client
    from toolkit.paths import cache_dir
    root = cache_dir() / "llm_cache_smoke" if cfg.llm_backend == "echo" else None
    slots = {} if cfg.llm_slots is None else {"n_parallel": cfg.llm_slots}
    return get_client(cfg.llm, cfg.llm_backend, namespace="feedback", cache_root=root, mode="live", **slots)


def dense_search(model_path: Path | str, corpus, depth: int = X.DEPTH):
    """``{qid: text} -> run`` with the dense model at ``model_path`` over ``corpus`` (indexed once)."""
    from toolkit.retrieval import DenseRetriever
    r = DenseRetriever(f"{model_path}", show_progress=len(corpus) > 2000)
    ids = list(corpus)
    r.index(ids, [corpus[d].text for d in ids])
    return lambda queries: r.search(dict(queries), k=depth)


def warmup(cfg) -> tuple[Path, dict]:
    """ToolRetriever: the dual encoder on ToolLens train (original instructions, in-batch negatives)."""
    from toolkit.feedback.data import training_set
    from toolkit.feedback.training import CHECKPOINT_EVERY
    from toolkit.retrieval.dual_encoder import positive_pairs, train_dual_encoder
    import random
    if kept := _kept(X.warmup_id(cfg)):
        return kept
    t = cfg.training
    pairs = positive_pairs(training_set("train"), cfg.warmup_pos, t.seed)
    if cfg.warmup_pairs is not None and cfg.warmup_pairs < len(pairs):
        pairs = random.Random(t.seed).sample(pairs, cfg.warmup_pairs)
    path, stats = train_dual_encoder(pairs,
                                     models_dir() / X.warmup_id(cfg), base=cfg.base, epochs=t.epochs,
                                     batch_size=t.batch_size, lr=t.lr, warmup_steps=t.warmup_steps,
                                     max_seq_length=t.max_seq_length, max_steps=cfg.warmup_max_steps, seed=t.seed,
                                     log=_log, min_batch=t.min_batch_size,
                                     checkpoint_every=CHECKPOINT_EVERY)
    return path, stats


def _kept(name: str) -> tuple[Path, dict] | None:
    """The kept copy of model ``name`` (model path, training stats) if it is complete, else None: in the tree
    (``KEPT_DIR/<name>``), else restored from the git history once it has left the tree
    (:func:`restore_from_history`). A copy kept in float16 (:func:`toolkit.weights.store_float16`) is restored to
    float32 in the cache first, once; its stats then say ``"weights": "float16-rounded"``."""
    from toolkit import weights
    from toolkit.training import trained
    if not (kept := trained(KEPT_DIR / name) or trained(history_dir() / name) or restore_from_history(name)):
        return None
    path, stats = kept
    if weights.is_stored_float16(path):
        return weights.restore_float32(path, models_dir() / name / "kept-float32"), {**stats, "weights": "float16-rounded"}
    return kept


def history_dir() -> Path:
    """Where :func:`restore_from_history` puts the kept models that have left the tree."""
    return models_dir().parent / "feedback-from-history"


class HistoryUnavailable(RuntimeError):
    """A kept model left the tree and this copy cannot look it up in the git history (a shallow clone, no ``git``,
    an exported tarball): retraining it would take hours, so the stage stops and says how to get the history."""


# set to 1 to train a model anew when its kept copy cannot be restored from the history (hours for standard)
RETRAIN_VARIABLE = "TOOLKIT_RETRAIN"


def _git(*args: str, **kw):
    """``git -C <repo> args`` (captured, not checked); None when no ``git`` is on PATH."""
    import subprocess
    from toolkit.paths import REPO
    try:
        return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, check=False, **kw)
    except FileNotFoundError:
        return None


def history_missing() -> str | None:
    """Why this copy's git history cannot be searched for a model that left the tree, or None when it can: no
    ``git`` on PATH, not a git clone (an exported tarball), or a shallow clone (the commits that kept the models are
    not here)."""
    r = _git("rev-parse", "--is-shallow-repository", text=True)
    if r is None:
        return "no `git` is on PATH"
    if r.returncode != 0:
        return "this copy is not a git clone (no history)"
    if r.stdout.strip() == "true":
        return "this clone is shallow (its history lacks the commits that kept the models)"
    return None


def _no_history(name: str, why: str) -> None:
    """A model whose kept copy the history cannot be asked for: a smoke model (seconds) or ``TOOLKIT_RETRAIN=1``
    trains, said in a log line; anything else raises :class:`HistoryUnavailable` with the fix."""
    import os
    if name.startswith("smoke-") or os.environ.get(RETRAIN_VARIABLE) == "1":
        _log(f"{name}: {why}; the kept copy cannot be looked up in the git history: training it")
        return
    raise HistoryUnavailable(f"{name}: {why}, so its kept weights cannot be restored from the git history; run "
                             "`git fetch --unshallow` in a shallow clone (or install git / clone the repository with "
                             f"its history), then re-run; to train it anew instead (hours on CPU) set "
                             f"{RETRAIN_VARIABLE}=1")


def restore_from_history(name: str) -> tuple[Path, dict] | None:
    """Model weights leave the tree (no weights in a clone's working tree), not the history: the
    parent of the commit that deleted ``data/models/feedback/<name>`` still holds them, bit for bit. Extract
    that copy (:func:`extract_from_history`) into ``history_dir()/<name>`` and return it as :func:`_kept` does; None
    (with a log line saying why) when the history never held it, so the stage trains it. When the history cannot be
    searched (:func:`history_missing`: a shallow clone, no ``git``) a smoke model trains (seconds) and any other raises
    :class:`HistoryUnavailable` naming ``git fetch --unshallow`` (retraining would take hours)."""
    from toolkit import paths
    from toolkit.training import trained
    if not KEPT_DIR.is_relative_to(paths.REPO):          # kept outside the repository: no history holds it
        _log(f"{name}: the kept-model directory {KEPT_DIR} is outside the repository, no history holds it: training it")
        return None
    if why := history_missing():
        _no_history(name, why)
        return None
    got = extract_from_history(KEPT_DIR, name, history_dir())
    if got is None:
        _log(f"{name}: the git history never kept it ({KEPT_DIR.relative_to(paths.REPO).as_posix()}/{name}): "
             "training it")
        return None
    return trained(got[0])


def extract_from_history(kept_dir: Path, name: str, dest_root: Path) -> tuple[Path, str] | None:
    """The folder ``kept_dir/<name>`` as the parent of the commit that deleted it held it (``git archive``), written
    to ``dest_root/<name>`` through a temporary folder: (that folder, the deleting commit), or None when ``kept_dir``
    is outside the repository, git is not here, or the history never deleted it. Also the checkpoint store's
    (:func:`toolkit.checkpoints.restore_from_history`)."""
    import io
    import shutil
    import tarfile

    from toolkit import paths
    kept_dir, dest_root = Path(kept_dir), Path(dest_root)
    if not kept_dir.is_relative_to(paths.REPO):          # kept outside the repository: no history holds it
        return None
    rel = f"{kept_dir.relative_to(paths.REPO).as_posix()}/{name}"
    log = _git("log", "--diff-filter=D", "-1", "--format=%H", "--", rel, text=True)
    commit = log.stdout.strip() if log is not None and log.returncode == 0 else ""
    if not commit:
        return None
    tar = _git("archive", "--format=tar", f"{commit}^", rel)
    if tar is None or tar.returncode != 0:
        err = "no git" if tar is None else tar.stderr.decode(errors="replace").strip()
        raise RuntimeError(f"git archive {commit}^ {rel} failed ({err}): the history names the model but cannot give "
                           f"it back")
    tmp = dest_root / f"{name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    with tarfile.open(fileobj=io.BytesIO(tar.stdout)) as t:
        t.extractall(tmp, filter="data")
    dest = dest_root / name
    shutil.rmtree(dest, ignore_errors=True)
    (tmp / rel).replace(dest)
    shutil.rmtree(tmp, ignore_errors=True)
    _log(f"{name}: restored from the git history ({commit[:10]}^, the commit before it left the tree) -> {dest}")
    return dest, commit


def iterate_to_file(queries: dict[str, str], search, corpus, llm, out: Path, meta: dict, chunk: int = 20,
                    prefix: bool = True, **loop_kw) -> dict:
    """:func:`toolkit.feedback.loop.iterate` over ``queries`` in chunks of ``chunk`` instructions, each chunk
    through every round, the trace file rewritten after each: a killed run keeps its finished instructions
    (committable, and listed as "n of N" by the notebook) and a rerun continues after them. The loop is
    per instruction (greedy LLM, independent retrieval), so chunking does not change any trace."""
    from tqdm.auto import tqdm

    from toolkit.feedback.loop import iterate, llm_slots
    done = X.load_traces(out, skip_damaged=True) if out.is_file() else {}   # a damaged line: traced again, alone
    done = {q: done[q] for q in queries if q in done}
    check_same_retriever(done, search, out, meta, prefix)
    prior_wall = X.load_meta(out).get("wall_s", 0.0) if done else 0.0
    todo = [q for q in queries if q not in done]
    meta = {**meta, "llm_slots": llm_slots(llm)}
    t0 = time.perf_counter()
    bar = tqdm(total=len(queries), initial=len(done), desc=f"feedback {meta.get('stage', '')} {meta.get('group', '')}",
               unit="instr")
    for i in range(0, len(todo), chunk):
        part = {q: queries[q] for q in todo[i:i + chunk]}
        done.update(iterate(part, search, corpus, llm, progress=False, prefix=prefix, **loop_kw))
        ordered = {q: done[q] for q in queries if q in done}
        X.save_traces(ordered, out, {**meta, "complete": len(ordered) == len(queries), "instructions": len(ordered),
                                     "wall_s": round(prior_wall + time.perf_counter() - t0, 1)})
        bar.update(len(part))
        stopped1 = sum(1 for tr in ordered.values() if tr.feedback and len(tr.instructions) == 1)
        asked = sum(1 for tr in ordered.values() if tr.feedback)
        bar.set_postfix_str(f"N/A at round 1 this run: {stopped1}/{asked}")
    bar.close()
    return {q: done[q] for q in queries}


def check_same_retriever(done: dict, search, out: Path, meta: dict, prefix: bool = True, n: int = 20, k: int = 10,
                         tol: float = 1e-4) -> None:
    """A trace is continued only by the retriever that made it. A fresh machine retrains a model that is not
    kept (:func:`restore_from_history`), and retrained weights can differ (another library or CPU, an inexact resume):
    two retrievers would be mixed in one trace. Round 0 of the first ``n`` finished instructions is searched
    again: each of their recorded top-``k`` tools must come back with its score within ``tol`` (the traces keep
    6 decimals). The query is the one the loop searched: under the "Iteration 0" prefix when ``prefix``."""
    from toolkit.feedback.loop import iteration_prefix
    check = list(done)[:n]
    if not check:
        return
    now = search({q: iteration_prefix(done[q].instructions[0], 0, prefix) for q in check})
    diffs = [(q, d, s, now.get(q, {}).get(d)) for q in check for d, s in list(done[q].runs[0].items())[:k]]
    bad = [x for x in diffs if x[3] is None or abs(x[3] - x[2]) > tol]
    if not bad:
        worst = max(abs(got - then) for _, _, then, got in diffs)
        _log(f"{out.name}: round 0 of {len(check)} traced instructions reproduced (max |score change| {worst:.1e})")
        return
    q, d, then, got = bad[0]
    who = meta.get("retriever") or meta.get("model") or "the retriever"
    raise RuntimeError(
        f"{out}: {who} does not reproduce the instructions already traced: round 0 of "
        f"{len({x[0] for x in bad})} of {len(check)} checked instructions differs (e.g. {q}: {d} scored {then} "
        f"in the trace, {'not in the top ' + str(len(now.get(q, {}))) if got is None else round(got, 6)} now). "
        f"The model was retrained and is not the one that made the trace. Restore that model (it is restored from the git history when an earlier commit "
        f"kept it in {KEPT_DIR}; else into {models_dir()}), or move {out.name} (and its .meta.json) aside to trace every instruction with this one.")


def check_warmup_made_toolretriever(cfg, model_path: Path | str, n: int = 20, k: int = 10) -> None:
    """Ours starts from the retriever the tables report as ToolRetriever (§4.3), so before iteration-aware training
    starts from the warm-up ``model_path``, every committed ToolRetriever trace of this warm-up id must be one it
    made: a warm-up retrained on another machine need not be bit-identical (mpnet's, with the same seed and pairs,
    ended at loss 1.2677 on one machine and 1.2705 on another; the I2 trace of the latter was re-made in ff29c16).
    :func:`check_same_retriever` on round 0 of the first ``n`` instructions, with only their recorded top-``k``
    tools indexed (a dense score does not depend on the rest of the corpus), a few hundred texts instead
    of the library."""
    tests = None
    for group in (*X.GROUPS, *X.OUT_OF_DOMAIN):
        out = X.toolretriever_trace_path(cfg, group)
        if not out.is_file():
            continue
        tests = tests or X.test_datasets(cfg)
        done = dict(list(X.load_traces(out).items())[:n])
        corpus = tests[group].corpus
        docs = {d: corpus[d] for tr in done.values() for d in list(tr.runs[0])[:k]}
        check_same_retriever(done, dense_search(model_path, docs, depth=len(docs)), out, X.load_meta(out), prefix=False,
                             n=n, k=k)


def train_feedback(cfg, llm=None) -> Path:
    """Offline feedback on ``train_feedback_requests`` training instructions with the main warm-up retriever."""
    from toolkit.feedback.data import training_set
    out = X.train_trace_path(cfg)
    train = training_set("train").nested_sample(cfg.train_feedback_requests, cfg.sample_seed)
    if X.trace_complete(out, train.queries):
        return out
    if cfg.train_trace_retriever and cfg.train_trace_retriever != X.warmup_id(cfg):
        raise FileNotFoundError(f"{out} is missing or incomplete: a Table 4/6/7 condition trains on the main run's "
                                f"offline feedback; produce it first (python -m toolkit.feedback train-feedback "
                                f"--profile {cfg.profile})")
    path, stats = warmup(cfg)
    llm = llm or llm_client(cfg)
    traces = iterate_to_file(train.query_texts(), dense_search(path, train.corpus), train.corpus, llm, out,
                             {"stage": "train-feedback", "retriever": X.warmup_id(cfg), "warmup_stats": stats,
                              "llm": cfg.llm}, rounds=cfg.training.rounds, cfg=cfg.feedback, prefix=False)
    _log(f"{len(traces)} training traces -> {shown(out)}")
    return out


def train(cfg, llm=None) -> tuple[Path, dict]:
    """Iteration-aware training (Eqs. 5-6) on the training trace, from the warm-up model or the base encoder."""
    from toolkit.feedback.data import training_set
    from toolkit.feedback.training import feedback_examples, train_iteration_aware
    from toolkit.training import trained
    if kept := _kept(X.model_id(cfg)):
        return kept
    out_dir = models_dir() / X.model_id(cfg)
    if done := trained(out_dir):    # a resumed test trace: no examples to build, no warm-up to check again
        return done
    trace = train_feedback(cfg, llm)
    train_ds = training_set("train")
    examples = feedback_examples(X.load_traces(trace), train_ds.qrels, train_ds.corpus, cfg.training)
    start = warmup(cfg)[0] if cfg.training.warmup else cfg.base
    if cfg.training.warmup:
        check_warmup_made_toolretriever(cfg, start)
    return train_iteration_aware(examples, out_dir, str(start), cfg.training, log=_log, max_steps=cfg.warmup_max_steps)


def test(cfg, group: str, n: int | None, llm=None) -> Path:
    """The inference loop (§4.4) on ``n`` queries of ``group`` (nested sample) with the trained model."""
    from toolkit.feedback.loop import iterate
    ds = X.test_datasets(cfg)[group].nested_sample(n, cfg.sample_seed)
    out = X.test_trace_path(cfg, group, n)
    if X.trace_complete(out, ds.queries):
        return out
    model, stats = train(cfg, llm)
    llm = llm or llm_client(cfg)
    traces = iterate_to_file(ds.query_texts(), dense_search(model, ds.corpus), ds.corpus, llm, out,
                             {"stage": "test", "group": group, "n": len(ds.queries), "model": X.model_id(cfg),
                              "training_stats": stats, "llm": cfg.llm},
                             rounds=cfg.training.rounds, cfg=cfg.feedback, prefix=cfg.training.prefix)
    _log(f"{len(traces)} {group} traces -> {shown(out)}")
    return out


def toolretriever(cfg, group: str) -> Path:
    """The warm-up model's top-``DEPTH`` on the whole group (``baseline_queries`` of it): Tables 2/3's
    ToolRetriever row, no LLM."""
    from toolkit.feedback.loop import iterate
    ds = X.test_datasets(cfg)[group].nested_sample(cfg.baseline_queries, cfg.sample_seed)
    out = X.toolretriever_trace_path(cfg, group)
    if out.is_file():
        return out
    model, stats = warmup(cfg)
    traces = iterate(ds.query_texts(), dense_search(model, ds.corpus), ds.corpus, llm=None, rounds=0, prefix=False,
                     progress=False)
    X.save_traces(traces, out, {"stage": "toolretriever", "group": group, "model": X.warmup_id(cfg),
                                "warmup_stats": stats})
    return out


def run_stage(stage: "X.LLMStage", llm=None) -> Path:
    """Write one LLM trace of :func:`toolkit.feedback.experiment.llm_stages`: the offline feedback, or a test group's
    sample (the main configuration's, or a Table 4/6/7 condition's)."""
    if stage.group is None:
        return train_feedback(stage.cfg, llm)
    return test(stage.cfg, stage.group, stage.n, llm)
