"""The conditions notebook ``40_querygen`` evaluates, from a :class:`~toolkit.querygen.config.QuerygenConfig`.

A *condition* is (method, test set, utterance appended or not) evaluated on the requests whose
generated queries are cached; what is not cached yet is listed as pending, never filled in.

    cfg = config_for("standard")
    s = setup(cfg)                                   # split, index, dev sample, LLM samples
    zs = zero_shot(cfg, s)                           # calibration + generated queries per test set
    values = evaluate_conditions(cfg, s, {"Zero-Shot": zs.queries})
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

import pandas as pd

from toolkit.data.contract import RetrievalDataset
from toolkit.metrics import evaluate
from toolkit.querygen import generation as gen
from toolkit.querygen.config import QuerygenConfig
from toolkit.querygen.data import QuerygenSplit, make_split
from toolkit.querygen.retrieval import QueryIndex, query_sets
from toolkit.provenance import shown

TEST_SETS = ("querygen-in-domain", "querygen-out-of-domain")


@dataclass
class Setup:
    split: QuerygenSplit
    index: QueryIndex
    dev: RetrievalDataset                      # calibration sample
    tests: dict[str, RetrievalDataset]         # full test sets
    llm_tests: dict[str, RetrievalDataset]     # the LLM methods' samples of them


def setup(cfg: QuerygenConfig, split: QuerygenSplit | None = None) -> Setup:
    split = split or make_split(cfg.split)
    tests = {split.test_in.name: split.test_in, split.test_out.name: split.test_out}
    return Setup(split=split, index=QueryIndex(split.corpus, cfg.encoder),
                 dev=split.dev.nested_sample(cfg.dev_requests, cfg.sample_seed), tests=tests,
                 llm_tests={n: ds.nested_sample(cfg.test_requests, cfg.sample_seed) for n, ds in tests.items()})


@dataclass
class Generated:
    """One LLM method's generated queries: calibration, then per test set ``{qid: [query, ...]}``."""
    method: str
    calibration: dict
    temperature: float | None
    queries: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    pending: list[dict] = field(default_factory=list)
    calibrated: bool = True             # False: the test rows use cfg.uncalibrated_temperature


SFT_NAMESPACE = "querygen_sft"
ALIGN_NAMESPACE = "querygen_align"

# App. D, Table 6: requests the authors wrote without looking at the API pool (quoted from the paper)
AUTHORED_REQUESTS = {
    "authored-1": "Give me a good advice for making coffee",
    "authored-2": "I’m bored and tired of staying home. Literally watched tv all day. Give me some ideas what to do",
    "authored-3": "I’m planning for a small party and need to invite guests, clean the house, and order food. "
                  "Can you help me?",
    "authored-4": "I want to get more healthy, where should I start?",
}


def sft_model_id(cfg: QuerygenConfig) -> str:
    """The cache model id of the SFT generator (its GGUF file name, unique per training configuration)."""
    return f"gguf:querygen-sft-{cfg.sft_tag()}.gguf"


def zero_shot(cfg: QuerygenConfig, s: Setup, kind: str = "description", llm=None) -> Generated:
    """Replay (or generate, with a live client) the zero-shot answers: dev grid, best temperature
    by Recall@5 (§4.3), the test samples at it."""
    llm = llm or gen.client(cfg.profile, cfg.zero_shot_model, kind)
    return calibrated(cfg, s, llm, "Zero-Shot" if kind == "description" else "Zero-Shot (intents)", kind)


def sft(cfg: QuerygenConfig, s: Setup, llm=None) -> Generated:
    """Replay the fine-tuned generator's answers (written by ``python -m toolkit.querygen sft``)."""
    from toolkit.llm.client import client_for_profile
    llm = llm or client_for_profile(cfg.profile, sft_model_id(cfg), namespace=SFT_NAMESPACE)
    return calibrated(cfg, s, llm, "SFT", namespace=SFT_NAMESPACE)


def align_model_id(cfg: QuerygenConfig, iteration: int, align_cfg=None) -> str:
    """The cache model id of alignment iteration ``iteration``'s generator (its GGUF file name);
    ``align_cfg``: another alignment configuration than ``cfg.align`` (an ablation row's)."""
    return f"gguf:querygen-align-{(align_cfg or cfg.align).tag()}-it{iteration}.gguf"


def align_history(cfg: QuerygenConfig, align_cfg=None) -> list[dict]:
    """Per iteration: reward distribution of the drafts, drafts kept, stage timings (written by
    ``python -m toolkit.querygen align`` beside its answers); [] before the first iteration ends.
    ``align_cfg``: another alignment configuration than ``cfg.align`` (an ablation row's).
    A run that resumed with cached drafts measured only the drafts it generated: where the sampling
    model's response cache holds more, the timing comes from its per-answer times (``draft_timing``)."""
    from toolkit.llm.client import default_cache_root
    from toolkit.llm.models import gguf_path
    a = align_cfg or cfg.align
    p = default_cache_root() / ALIGN_NAMESPACE / f"querygen-align-{a.tag()}.history.json"
    st = p.stat() if p.is_file() else None
    history = [dict(r) for r in _read_history(str(p), st.st_size, st.st_mtime_ns)] if st else []
    if st:
        from toolkit import provenance
        provenance.record_input(p, records=len(history), kind="alignment history")
    out = []
    for rec in history:
        t = rec["sampled_from"].rsplit("-it", 1)[1]
        model = f"gguf:{gguf_path(cfg.generator_base, verify=False).name}" if t == "0" else align_model_id(cfg, int(t), a)
        cached = draft_timing(model, a.temperature, a.kind, a.decoding)
        if cached.get("drafts_generated", 0) > (rec.get("drafts_generated") or 0):
            rec = {**rec, **cached}      # a resumed run measured only the drafts it generated itself
        out.append(rec)
    return out


@functools.lru_cache(maxsize=32)
def _read_history(path: str, size: int, mtime_ns: int) -> tuple:
    """A history file's records, read once per content (40 asks for the main run's history once per table)."""
    import json
    try:
        history = json.loads(Path(path).read_text())["history"]
        if not isinstance(history, list):
            raise TypeError("'history' is not a list")
    except (json.JSONDecodeError, KeyError, TypeError) as e:
        raise ValueError(f"{path}: the alignment history is damaged ({type(e).__name__}: {e}); restore it "
                         f"(git checkout -- {path}) or re-run `python -m toolkit.querygen align`") from None
    return tuple(history)


def decoded_with(sampling: Mapping, decoding=None) -> bool:
    """Whether a cached answer's ``sampling`` used ``decoding``'s line stop and penalty (None: the standard's,
    neither; answers cached before the fields existed have neither in their key)."""
    d = decoding or gen.STANDARD_DECODING
    return (sampling.get("max_lines", 0) == d.max_lines
            and round(float(sampling.get("repeat_penalty", 1.0)), 6) == round(float(d.repeat_penalty), 6))


def answer_timing(model_id: str, temperature: float, kind: str = "description", decoding=None) -> dict:
    """The answers in ``model_id``'s alignment cache at ``temperature`` to prompts of ``kind`` (Fig. 2
    or Fig. 5), with the generation seconds and tokens recorded per answer: ``answers``, ``seconds``
    (sum of call times, model load excluded), ``per_s``, ``tokens``; {} when the cache holds none.
    A drafting temperature gives a model's drafts, the evaluation temperature its test answers.
    The file is read once per content (the base model's cache serves every ablation row). Only answers
    decoded with ``decoding`` count (None: the standard's): the base model's cache holds the fair run's drafts too."""
    from toolkit.llm.cache import ResponseCache
    from toolkit.llm.client import default_cache_root
    path = ResponseCache.path_for(default_cache_root(), ALIGN_NAMESPACE, model_id)
    st = path.stat() if path.is_file() else None
    stamp = (st.st_size, st.st_mtime_ns) if st else None
    return dict(_answer_timing(str(path.parent.parent), model_id, stamp, temperature, kind, decoding))


@functools.lru_cache(maxsize=64)
def _answer_timing(root: str, model_id: str, stamp, temperature: float, kind: str, decoding=None) -> tuple:
    from toolkit.llm.cache import ResponseCache, prompt_user_text
    marker = "\x00"
    head = gen.task_for(kind).build(marker).split(marker)[0]      # the prompt up to the request
    ms, ntok = [], 0
    for a in ResponseCache(root, ALIGN_NAMESPACE, model_id, readonly=True).answers():
        if (a.get("sampling") or {}).get("temperature") == temperature and a.get("ms") is not None \
                and decoded_with(a.get("sampling") or {}, decoding) and prompt_user_text(a.get("prompt")).startswith(head):
            ms.append(a["ms"])
            ntok += a.get("ntok") or 0
    if not ms:
        return ()
    seconds = sum(ms) / 1000
    return (("answers", len(ms)), ("seconds", round(seconds, 1)), ("per_s", round(len(ms) / seconds, 3)),
            ("tokens", ntok))


def draft_timing(model_id: str, temperature: float, kind: str = "description", decoding=None) -> dict:
    """:func:`answer_timing` of ``model_id``'s drafts, under the history's keys: ``drafts_generated``,
    ``draft_seconds``, ``drafts_per_s``, ``draft_tokens``. The base model's cache holds the drafts of
    both prompts (the main run's and Table 5's intent row), at the same temperature."""
    t = answer_timing(model_id, temperature, kind, decoding)
    if not t:
        return {}
    return {"drafts_generated": t["answers"], "draft_seconds": t["seconds"], "drafts_per_s": t["per_s"],
            "draft_tokens": t["tokens"], "timing_from": "cache"}


@dataclass
class Alignment:
    """Every alignment iteration's test answers (at ``temperature``) and the training history."""
    history: list[dict]
    temperature: float
    iterations: dict[int, dict[str, dict[str, list[str]]]] = field(default_factory=dict)  # t -> set -> queries
    pending: list[dict] = field(default_factory=list)


def alignment(cfg: QuerygenConfig, s: Setup) -> Alignment:
    """Replay the aligned generators' answers, iteration by iteration; what is missing is pending."""
    from toolkit.llm.client import client_for_profile
    a = Alignment(align_history(cfg), cfg.align_eval_temperature)
    for t in range(1, cfg.align.iterations + 1):
        llm = client_for_profile(cfg.profile, align_model_id(cfg, t), namespace=ALIGN_NAMESPACE)
        per = {}
        for name, ds in s.llm_tests.items():
            got = gen.generate_queries(ds.query_texts(), llm, a.temperature, partial=llm.mode != "live",
                                       namespace=ALIGN_NAMESPACE, decoding=cfg.align.decoding)
            if got:
                per[name] = got
            if len(got) < len(ds.queries):
                a.pending.append({"method": f"Alignment it{t}", "set": name, "cached": len(got),
                                  "needed": len(ds.queries)})
        if per:
            a.iterations[t] = per
    # an iteration with answers but no training record: Figure 4's reward cells for it are pending, with the reason
    have = {int(h["iteration"]) for h in a.history if "iteration" in h}
    for t in sorted(a.iterations):
        if t not in have:
            from toolkit.llm.client import default_cache_root
            p = default_cache_root() / ALIGN_NAMESPACE / f"querygen-align-{cfg.align.tag()}.history.json"
            a.pending.append({"method": f"Alignment it{t} reward (Figure 4)", "set": "training history",
                              "cached": len(a.history), "needed": cfg.align.iterations,
                              "reason": f"{shown(p)} {'lacks this iteration' if p.is_file() else 'is missing'}"})
    return a



def ablation_setup(cfg: QuerygenConfig, s: Setup) -> Setup:
    """``s`` with Tables 3-5's test samples: ``ablation_test_requests`` requests of each test set (the first
    of the same seeded shuffle, so within the LLM samples and the main run's first-iteration answers)."""
    from dataclasses import replace
    return replace(s, llm_tests={n: ds.nested_sample(cfg.ablation_test_requests, cfg.sample_seed)
                                 for n, ds in s.tests.items()})


def ablations(cfg: QuerygenConfig, s: Setup) -> tuple[dict[str, dict[str, dict]], list[dict]]:
    """Tables 3-5 (App. B.2, B.3, C): per table and row, the test answers of a one-iteration alignment
    with that row's configuration (``python -m toolkit.querygen ablate``); the baseline row is the main
    run's first iteration. ``s`` is :func:`ablation_setup`'s. Returns ({table: {row: {test set: queries}}}, pending)."""
    from dataclasses import replace

    from toolkit.llm.client import client_for_profile
    from toolkit.querygen.alignment import ABLATION_TABLES
    out, pending = {}, []
    for table, settings in ABLATION_TABLES.items():
        for row, change in settings.items():
            a = replace(cfg.align, **change)
            llm = client_for_profile(cfg.profile, align_model_id(cfg, 1, a), namespace=ALIGN_NAMESPACE)
            for name, ds in s.llm_tests.items():
                got = gen.generate_queries(ds.query_texts(), llm, cfg.align_eval_temperature, kind=a.kind,
                                           partial=llm.mode != "live", namespace=ALIGN_NAMESPACE, decoding=a.decoding)
                if len(got) == len(ds.queries):     # a row's delta is on the baseline's requests: complete sets only
                    out.setdefault(table, {}).setdefault(row, {})[name] = got
                if len(got) < len(ds.queries):
                    pending.append({"method": f"Table {table}: {row}", "set": name, "cached": len(got),
                                    "needed": len(ds.queries), "why": "python -m toolkit.querygen ablate"})
    return out, pending


def ablation_histories(cfg: QuerygenConfig) -> dict[str, dict[str, dict]]:
    """Tables 3-5: each row's one-iteration history record (drafts kept, their rewards, fine-tuning
    time), ``{table: {row: record}}``; the baseline rows are the main run's first iteration; rows
    not run yet are left out."""
    from dataclasses import replace

    from toolkit.querygen.alignment import ABLATION_TABLES
    out: dict[str, dict[str, dict]] = {}
    for table, settings in ABLATION_TABLES.items():
        for row, change in settings.items():
            a = replace(cfg.align, **change)
            h = align_history(cfg, a)
            if h:
                # the row's test answers: its model's answers at the evaluation temperature, timed per answer
                answered = answer_timing(align_model_id(cfg, 1, a), cfg.align_eval_temperature, a.kind, a.decoding)
                out.setdefault(table, {})[row] = {**h[0], "test_answers": answered.get("answers"),
                                                  "test_answer_seconds": answered.get("seconds")}
    return out


def authored_queries(cfg: QuerygenConfig, s: Setup, zs: Generated, ft: Generated, align_iteration: int | None,
                     top: int = 3) -> tuple[list[dict], list[dict]]:
    """Table 6: each generator's queries for the authored requests (at the temperature its test rows
    use) and the ``top`` APIs their interleaved retrieval ranks first; (rows, pending)."""
    from toolkit.llm.client import client_for_profile
    specs = [("Zero-Shot", gen.client(cfg.profile, cfg.zero_shot_model), zs.temperature, None, cfg.decoding),
             ("SFT", client_for_profile(cfg.profile, sft_model_id(cfg), namespace=SFT_NAMESPACE), ft.temperature,
              SFT_NAMESPACE, cfg.decoding)]
    if align_iteration is not None:
        specs.append((f"Alignment it{align_iteration}",
                      client_for_profile(cfg.profile, align_model_id(cfg, align_iteration), namespace=ALIGN_NAMESPACE),
                      cfg.align_eval_temperature, ALIGN_NAMESPACE, cfg.align.decoding))
    rows, pending = [], []
    for method, llm, temp, ns, decoding in specs:
        got = {} if temp is None else gen.generate_queries(AUTHORED_REQUESTS, llm, temp, partial=llm.mode != "live",
                                                           namespace=ns, decoding=decoding)
        if len(got) < len(AUTHORED_REQUESTS):
            pending.append({"method": method, "set": "authored requests (Table 6)", "cached": len(got),
                            "needed": len(AUTHORED_REQUESTS)})
        if not got:
            continue
        run = s.index.run(query_sets(got, {q: AUTHORED_REQUESTS[q] for q in got}, cfg.append_utterance), k=top)
        for q, queries in got.items():
            ranked = sorted(run.get(q, {}).items(), key=lambda kv: -kv[1])[:top]
            rows.append({"request": AUTHORED_REQUESTS[q], "method": method, "temperature": temp,
                         "generated queries": "\n".join(queries), "top APIs": "\n".join(d for d, _ in ranked)})
    return rows, pending


def calibrated(cfg: QuerygenConfig, s: Setup, llm, method: str, kind: str = "description",
               namespace: str | None = None) -> Generated:
    """One generator's answers: calibration on the dev sample, then the test samples at the best
    temperature; whatever the cache lacks is listed in ``pending``."""
    live = llm.mode == "live"
    cal = gen.calibrate(s.index, s.dev, llm, cfg.temperatures, kind=kind, k=cfg.list_size, partial=not live,
                        namespace=namespace, decoding=cfg.decoding)
    g = Generated(method, cal, cal["best"])
    for t, n in cal["n"].items():
        if n < len(s.dev.queries):
            g.pending.append({"method": method, "set": f"dev T={t}", "cached": n, "needed": len(s.dev.queries)})
    if any(n < len(s.dev.queries) for n in cal["n"].values()):
        # calibration is not final until every temperature is scored on every dev request; meanwhile the
        # test rows may use the configured fallback temperature, labelled as such
        g.temperature, g.calibrated = cfg.uncalibrated_temperature, False
        if g.temperature is None:
            for name, ds in s.llm_tests.items():
                g.pending.append({"method": method, "set": name, "cached": 0, "needed": len(ds.queries),
                                  "why": "calibration incomplete"})
            return g
    for name, ds in s.llm_tests.items():
        got = gen.generate_queries(ds.query_texts(), llm, g.temperature, kind=kind, partial=not live,
                                   namespace=namespace, decoding=cfg.decoding)
        g.queries[name] = got
        if len(got) < len(ds.queries):
            g.pending.append({"method": method, "set": name, "cached": len(got), "needed": len(ds.queries)})
    return g


def generation_cost(namespace: str, model_id: str, decoding=None) -> dict:
    """Answers, completion tokens and summed call seconds in one response-cache file (drafts/s, tokens/s),
    of the answers decoded with ``decoding`` (None: the standard's; the zero-shot file holds both)."""
    from toolkit.llm.cache import ResponseCache
    from toolkit.llm.client import default_cache_root
    c = ResponseCache(default_cache_root(), namespace, model_id, readonly=True)
    ans = [a for a in c.answers() if decoded_with(a.get("sampling") or {}, decoding)]
    sec = sum(a.get("ms") or 0 for a in ans) / 1000
    tok = sum(a.get("ntok") or 0 for a in ans)
    return {"answers": len(ans), "completion tokens": tok, "call seconds": round(sec, 1),
            "answers/s": round(len(ans) / sec, 3) if sec else None, "tokens/s": round(tok / sec, 1) if sec else None}


def sft_train_log(cfg: QuerygenConfig) -> dict | None:
    """The SFT run's training log committed beside its answers (loss per step, tokens/s, wall time)."""
    import json

    from toolkit.llm.client import default_cache_root
    p = default_cache_root() / SFT_NAMESPACE / f"querygen-sft-{cfg.sft_tag()}.train.json"
    if not p.is_file():
        return None
    from toolkit import provenance
    provenance.record_input(p, kind="SFT training log")
    return json.loads(p.read_text())


def evaluate_queries(cfg: QuerygenConfig, s: Setup, ds: RetrievalDataset, generated: Mapping[str, list[str]] | None,
                     append_utterance: bool, dataset: str = "", method: str = "") -> dict[str, dict[str, float]]:
    """Per-query metrics ``{metric: {qid: value}}`` on ``ds``'s requests that ``generated`` covers
    (all of them for the utterance baseline, ``generated=None``); with a ``method`` name the run is saved
    (:func:`toolkit.runs.keep`) under ``dataset``."""
    texts = ds.query_texts()
    if generated is not None:
        texts = {q: t for q, t in texts.items() if q in generated}
    sets = query_sets(generated or {}, texts, append_utterance if generated is not None else True)
    run = s.index.run(sets, k=cfg.list_size)
    qrels = {q: ds.qrels[q] for q in texts}
    if method:
        from toolkit.runs import keep
        keep(dataset or ds.name, method, run, qrels)
    return evaluate(run, qrels, cfg.metrics(), per_query=True)


def evaluate_conditions(cfg: QuerygenConfig, s: Setup, methods: Mapping[str, Mapping[str, Mapping[str, list[str]]]]
                        ) -> pd.DataFrame:
    """Long table (dataset, method, utterance, sample, metric, value, n, per_query): the utterance
    baseline on each full test set and on the LLM sample, every method with and without the
    utterance; ``per_query`` is ``{qid: value}`` (for paired significance tests)."""
    rows = []

    def add(dataset, method, utt, sample, per_q):
        for metric, vals in per_q.items():
            rows.append({"dataset": dataset, "method": method, "utterance": utt, "sample": sample, "metric": metric,
                         "value": sum(vals.values()) / len(vals) if vals else float("nan"), "n": len(vals),
                         "per_query": vals})

    def only(per_q, qids):
        # a request's retrieval does not depend on the others', so the baseline is retrieved once per set
        return {m: {q: v for q, v in vals.items() if q in qids} for m, vals in per_q.items()}

    for name, ds in s.tests.items():
        utterance = evaluate_queries(cfg, s, ds, None, True, name, "Utterance")
        add(name, "Utterance", True, "all", utterance)
        add(name, "Utterance", True, "llm", only(utterance, s.llm_tests[name].queries))
        for method, per_set in methods.items():
            got = per_set.get(name)
            if not got:
                continue
            for utt in (True, False):
                add(name, method, utt, "llm", evaluate_queries(cfg, s, s.llm_tests[name], got, utt, name,
                                                               method + ("" if utt else " (-utt)")))
                if utt and len(got) < len(s.llm_tests[name].queries):
                    # the utterance baseline on exactly the requests this method covers so far
                    add(name, f"Utterance (same {len(got)} requests as {method})", True, "llm", only(utterance, got))
    return pd.DataFrame(rows)
