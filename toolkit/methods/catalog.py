"""The suite's methods behind the one interface (:mod:`toolkit.methods.base`). Each wraps its paper's package, and
reimplements nothing:

- ``BM25`` and ``Dense`` (MiniLM, mpnet): :func:`toolkit.retrieval.build_retriever`, as notebook 01 runs them;
- ``ToolLensDPR``: the dual encoder fine-tuned on ToolLens train (the feedback paper's ToolRetriever warm-up),
  replayed from its committed retrieval traces (``data/feedback_traces/standard-toolretriever-*``);
- ``IterativeFeedback``: the feedback loop's test traces under the fair LLM step (``data/feedback_traces/standard-test-*``
  of ``toolkit.feedback.config.fair_config``), its last round;
- ``ReinvokeIntents``: Re-Invoke's intent extractor with multi-view ranking (:func:`toolkit.reinvoke.reinvoke_run`)
  on the committed intents (``data/llm_cache/reinvoke_intents``), the documents not expanded;
- ``ToolRerank``: notebook 10's standard models replayed from the head-to-head score cache
  (:mod:`toolkit.toolrerank.headtohead`; pending until ``scripts/train_toolrerank.py --headtohead`` wrote it);
- ``QueryGeneration``: zero-shot LLM query generation with mpnet and interleaving (:mod:`toolkit.querygen`), its
  answers for these queries in ``data/llm_cache/headtohead_querygen`` (generated with ``TOOLKIT_LLM_BACKEND=local``);
- pending: Re-Invoke with document expansion (the library's 16,427 APIs have no synthetic queries): its command
  and cost.

Costs not measured in the run come from the records the caches keep: a trace's meta (training seconds), the LLM
cache (milliseconds and completion tokens per answer), and ``results/bench/`` (encoder and reranker speeds).
"""
from __future__ import annotations

import time
from functools import lru_cache
from pathlib import Path
from typing import Mapping

import numpy as np

from toolkit.data.contract import Run
from dataclasses import replace

from toolkit.methods.base import Cost, Method, MethodPending, Pending
from toolkit.paths import REPO, portable

# torch encoding speed on this class of machine (2 cores): results/bench/encoders.txt (2026-11-29, library
# documents, batch 32; MiniLM at max length 256, mpnet at 384)
ENCODER_DOCS_PER_SECOND = {"minilm": 23.0, "mpnet": 1.6}
# ToolRerank's cross-encoder (MiniLM) scores 24.4 pairs/s: results/bench/toolrerank_bases.json
RERANKER_PAIRS_PER_SECOND = 24.4
LABELS = ("I1", "I2", "I3", "UltraTool")     # the feedback loop's sets, whose samples are the common query set


def _feedback_cfg(kind: str = "toolretriever"):
    """The feedback notebook's standard configuration whose traces a replayed method reads: the loop (``test``) at
    its best, the fair LLM step (answers not cut at a cap, the paper's refinement wording; it beats the capped
    run on every set); the warm-up DPR (``toolretriever``) is the same in both."""
    from toolkit.feedback.config import config_for, fair_config
    return fair_config("standard") if kind == "test" else config_for("standard")


# --- off-the-shelf retrievers ------------------------------------------------------------------------

def uncached(model: str, texts: list[str]) -> int:
    """How many distinct ``texts`` neither this machine's embedding cache nor the committed layer holds."""
    from toolkit.retrieval.embedding_cache import committed_store, store_for, text_keys
    if not texts:
        return 0
    keys = np.unique(text_keys(list(texts)))
    hit = store_for(model).lookup(keys)[0]
    committed = committed_store(model)
    if committed is not None:
        hit |= committed.lookup(keys)[0]
    return int((~hit).sum())


def encoder_ms(model: str, texts: list[str]) -> float:
    """Milliseconds per text of encoding ``texts`` with the model itself (no cache): what a query or document costs
    when its vector is not already stored."""
    from toolkit.retrieval.models import load_encoder
    enc = load_encoder(model)
    enc.encode(texts[:1], show_progress_bar=False)          # warm-up call: kernels, tokenizer
    t = time.perf_counter()
    enc.encode(list(texts), batch_size=32, normalize_embeddings=True, show_progress_bar=False)
    return (time.perf_counter() - t) * 1000 / max(len(texts), 1)


class BM25(Method):
    """bm25s Okapi BM25, k1 = 1.5, b = 0.75, notebook 01's standard setting."""
    name, cheap = "BM25", True

    def offline(self, corpus) -> None:
        from toolkit.baselines import PROFILES
        from toolkit.retrieval import build_retriever
        self.retriever = build_retriever("bm25", **PROFILES["standard"].bm25_params())
        self.retriever.index(list(corpus), [d.text for d in corpus.values()])

    def online(self, queries) -> Run:
        return self.retriever.search(dict(queries), k=100)


class Dense(Method):
    """An off-the-shelf sentence encoder, exact inner-product search. The vectors come from the embedding cache;
    with ``encode_missing=False`` (the standard profile) a corpus whose vectors are not stored makes the method
    pending with the encoding time it would take, instead of spending it inside the run. ``timing_texts``: how many
    queries are encoded again without the cache to time the encoder online (0: not timed, only the search)."""
    cheap = True

    def __init__(self, model: str = "minilm", encode_missing: bool = False, timing_texts: int = 8):
        super().__init__()
        self.model, self.encode_missing, self.timing_texts = model, encode_missing, timing_texts
        self.name = {"minilm": "Dense MiniLM", "mpnet": "Dense mpnet"}.get(model, f"Dense {model}")

    def offline(self, corpus) -> None:
        from toolkit.retrieval import DenseRetriever
        texts = [d.text for d in corpus.values()]
        missing = uncached(self.model, texts)
        rate = ENCODER_DOCS_PER_SECOND.get(self.model)
        if missing and not self.encode_missing:
            raise MethodPending(Pending(
                f"{missing:,} of {len(texts):,} document vectors of {self.model} are not committed",
                "python -m toolkit run 50_headtohead --profile standard -p encode_missing=True, then "
                "python -m toolkit embeddings commit --log <TOOLKIT_EMBEDDING_LOG dir>",
                Cost(index_seconds=missing / rate if rate else None),
                f"encoding at {rate} documents/s (results/bench/encoders.txt)" if rate else "encoder speed unmeasured"))
        t = time.perf_counter()
        self.retriever = DenseRetriever(self.model, show_progress=False).index(list(corpus), texts)
        took = time.perf_counter() - t
        # the index's cost is encoding every document; the run reads stored vectors, so it is taken at the
        # encoder's benchmarked speed (measured here only when the vectors were encoded in this run)
        index_s = len(texts) / rate if rate and not missing else took
        self.cost = Cost(index_seconds=index_s,
                         note=f"index: {len(texts):,} documents at {rate} documents/s (results/bench/encoders.txt)"
                              if rate and not missing else "index: encoded in this run")
        self._query_ms: list[float] = []

    def online(self, queries) -> Run:
        t = time.perf_counter()
        run = self.retriever.search(dict(queries), k=100)
        search_ms = (time.perf_counter() - t) * 1000 / max(len(queries), 1)
        if self.timing_texts:
            search_ms += encoder_ms(self.model, list(queries.values())[:self.timing_texts])
        self._query_ms.append(search_ms)
        self.cost = Cost(index_seconds=self.cost.index_seconds, ms_per_query=float(np.mean(self._query_ms)),
                         note=self.cost.note)
        return run


# --- replayed from the feedback traces ---------------------------------------------------------------

@lru_cache(maxsize=None)
def _traces(kind: str) -> tuple[dict, dict]:
    """(traces by qid over the four sets, meta by set) of the standard ``kind`` traces: ``toolretriever`` (the
    warm-up DPR's retrieval of whole groups) or ``test`` (the loop on the LLM samples). A missing file is absent."""
    from toolkit.feedback.experiment import load_meta, load_traces, test_trace_path, toolretriever_trace_path
    cfg = _feedback_cfg(kind)
    out, meta = {}, {}
    for label in LABELS:
        path = (toolretriever_trace_path(cfg, label) if kind == "toolretriever"
                else test_trace_path(cfg, label, cfg.sample_size(label)))
        if not path.is_file():
            continue
        got = load_traces(path)
        clash = set(got) & set(out)
        if clash:
            raise ValueError(f"{path.name}: qids also in another set's trace (e.g. {sorted(clash)[0]!r})")
        out.update(got)
        meta[label] = load_meta(path)
    return out, meta


class _Replay(Method):
    kind = ""          # the trace kind
    stage = ""         # the feedback stage that writes it

    def _pending(self, qids) -> Pending:
        from toolkit.feedback.experiment import command
        return Pending(f"{len(qids)} queries (e.g. {sorted(qids)[0]!r}) are in no committed {self.kind} trace",
                       " / ".join(command(self.stage, _feedback_cfg(self.kind), g) for g in LABELS), self.cost)

    def traces_for(self, queries) -> dict:
        traces, _ = _traces(self.kind)
        missing = [q for q in queries if q not in traces]
        if missing:
            raise MethodPending(self._pending(missing))
        return {q: traces[q] for q in queries}


class ToolLensDPR(_Replay):
    """The MiniLM dual encoder fine-tuned on ToolLens train (in-batch negatives; the feedback paper's
    ToolRetriever), its top 30 replayed from the committed traces. Online it is a MiniLM bi-encoder over the same
    corpus: it searches as fast as Dense MiniLM."""
    name, kind, stage = "DPR (ToolLens)", "toolretriever", "toolretriever"

    def __init__(self):
        super().__init__()
        _, meta = _traces(self.kind)
        warm = next((m.get("warmup_stats") for m in meta.values() if m.get("warmup_stats")), {}) or {}
        self.cost = Cost(training_minutes=warm.get("seconds", 0.0) / 60, ms_as=("Dense MiniLM", 1.0),
                         index_seconds=None,
                         note=f"training: {warm.get('pairs', 0):,} ToolLens pairs, {warm.get('seconds', 0) / 60:.0f} min "
                              "(trace meta); online as Dense MiniLM")

    def offline(self, corpus) -> None:
        self.cost = replace(self.cost, index_seconds=len(corpus) / ENCODER_DOCS_PER_SECOND["minilm"])

    def online(self, queries) -> Run:
        from toolkit.feedback.loop import run_at
        return run_at(self.traces_for(queries), 0)


class IterativeFeedback(_Replay):
    """The feedback loop (Xu et al. 2024): the iteration-aware retriever (warm-up, then trained on the LLM's offline
    feedback) and up to three rounds of LLM feedback per query, its last round's list replayed from the committed
    test traces. Online: the rounds' LLM seconds from the trace (4 llama.cpp slots decoding together) and one
    MiniLM retrieval per round."""
    name, kind, stage = "Iterative feedback", "test", "test"

    def __init__(self):
        super().__init__()
        from toolkit.feedback.experiment import load_traces, train_trace_path
        _, meta = _traces(self.kind)
        train = next((m.get("training_stats") for m in meta.values() if m.get("training_stats")), {}) or {}
        warm_meta = next((m.get("warmup_stats") for m in _traces("toolretriever")[1].values()
                          if m.get("warmup_stats")), {}) or {}
        path = train_trace_path(_feedback_cfg(self.kind))
        offline = load_traces(path) if path.is_file() else {}
        offline_llm = sum(sum(t.seconds) for t in offline.values())
        self.cost = Cost(llm_seconds=offline_llm, llm_tokens=None,
                         training_minutes=(warm_meta.get("seconds", 0.0) + train.get("seconds", 0.0)) / 60,
                         llm_tokens_per_query=None, ms_as=("Dense MiniLM", 1.0),
                         note=f"fair LLM step; LLM tokens not recorded in the traces; offline LLM: the "
                              f"feedback on {len(offline):,} training instructions; training: warm-up + "
                              f"iteration-aware training (trace meta)")

    def offline(self, corpus) -> None:
        self.cost = replace(self.cost, index_seconds=len(corpus) / ENCODER_DOCS_PER_SECOND["minilm"])

    def online(self, queries) -> Run:
        from toolkit.feedback.loop import final_run
        traces = self.traces_for(queries)
        rounds = float(np.mean([len(t.runs) for t in traces.values()]))
        llm = float(np.mean([sum(t.seconds) for t in traces.values()]))
        self.cost = replace(self.cost, llm_seconds_per_query=llm, ms_as=("Dense MiniLM", rounds))
        return final_run(traces)


# --- Re-Invoke -------------------------------------------------------------------------------------

def cached_completion_tokens(task_name: str, texts: list[str], model: str = "qwen-1.5b") -> float:
    """Mean completion tokens per text of the cached answers of a Re-Invoke task (sample 0)."""
    from toolkit.llm.base import as_messages
    from toolkit.llm.tasks import get_task
    from toolkit.reinvoke import generation as G
    task = get_task(task_name)
    cache = G.client(task_name, "standard", model=model).cache(task.namespace)
    cache.refresh()
    key = task.sampling.key()
    tok = [a.meta.get("ntok") or 0 for p in task.prompts_for(texts)
           if (a := cache.get("chat", as_messages(p), key, 0)) is not None]
    return float(np.mean(tok)) if tok else 0.0


def task_rate(task_name: str, model: str = "qwen-1.5b") -> tuple[float, int]:
    """(mean seconds per answer, answers) of a task's committed cache: :func:`toolkit.reinvoke.experiment.generation_time`."""
    from toolkit.reinvoke.experiment import generation_time
    row = generation_time(model, (task_name,)).iloc[0]
    return (row["call time (s)"] / row["answers"] if row["answers"] else float("nan")), int(row["answers"])


class ReinvokeIntents(Method):
    """Re-Invoke's intent extractor (Qwen 1.5B, greedy; the committed answers) and multi-view ranking over MiniLM
    (Algorithm 2), without document expansion -- Table 3(A)'s "intent extractor" row, the part of Re-Invoke the
    committed caches cover over the whole library."""
    name = "Re-Invoke (intents only)"

    def offline(self, corpus) -> None:
        from toolkit.data.contract import RetrievalDataset
        from toolkit.reinvoke.pipeline import build_index
        ds = RetrievalDataset("corpus", dict(corpus), {}, {})
        self.index = build_index(ds, "dense", None)
        self.cost = Cost(index_seconds=len(corpus) / ENCODER_DOCS_PER_SECOND["minilm"], ms_as=("Dense MiniLM", 1.0))

    def online(self, queries) -> Run:
        from toolkit.reinvoke import generation as G
        from toolkit.reinvoke.pipeline import run_from_intents
        got = G.intents(dict(queries), G.client("intents", "standard"), partial=True)
        missing = [q for q in queries if q not in got]
        if missing:
            sec, n = task_rate("intents")
            raise MethodPending(Pending(
                f"{len(missing)} of {len(queries)} queries have no cached intents",
                "python -m toolkit llm generate --prompt intents --dataset <ultratool|toolbench-i1|...> --model qwen-1.5b",
                Cost(llm_seconds=sec * len(missing)),
                f"{sec:.1f} s per answer, the mean of the {n:,} cached intent answers"))
        # seconds from the whole intent cache, as reinvoke_pending's estimate: the answers of one set were written
        # at whatever load the machine had then (one head-to-head set's were written beside another generation), so a
        # per-set mean measures that load, not the method
        sec, _ = task_rate("intents")
        tok = cached_completion_tokens("intents", list(queries.values()))
        self.cost = Cost(index_seconds=self.cost.index_seconds, llm_seconds_per_query=sec, llm_tokens_per_query=tok,
                         ms_as=("Dense MiniLM", float(np.mean([len(v) for v in got.values()]))))
        return run_from_intents(self.index, {q: got[q] for q in queries}, k=100)


# --- query generation ------------------------------------------------------------------------------

QUERYGEN_RESULTS = REPO / "results" / "40_querygen" / "standard.json"
# the head-to-head's own answers (the same prompt and sampling as notebook 40's): appending to notebook 40's cache
# would change that notebook's inputs
QUERYGEN_NAMESPACE = "headtohead_querygen"
# Decoding of those answers. The prompt asks for at most 5 descriptions (lines) and the parser keeps 5, so ending the
# answer at its 5th line (the fair test's line stop) changes no parsed query, only the cost. At notebook 40's 160-token
# cap, 4 of the first 70 answers at T = 0.6 ended at the cap (5.7 %: a description cut mid-line); 256 tokens leave
# room for five 20-word lines.
QUERYGEN_MAX_TOKENS = 256


def querygen_temperature(path: Path | None = None) -> float:
    """The zero-shot temperature notebook 40's standard run calibrated on its dev requests by Recall@5 (§4.3),
    recorded as an input of this run (the field alone: notebook 40's re-run changes its timings, not this)."""
    from toolkit import provenance
    return float(provenance.read_json_field(
        path or QUERYGEN_RESULTS, "calibration.Zero-Shot.best", kind="notebook 40 run (calibrated temperature)",
        fix="the query-generation method takes its temperature from notebook 40's standard run; run "
            "python -m toolkit run 40_querygen --profile standard"))


class QueryGeneration(Method):
    """LLM query generation (Kachuee et al. 2025), zero-shot: Qwen 1.5B writes up to 5 API descriptions for the
    request (Fig. 2 prompt, top_p 0.9, top_k 10, notebook 40's calibrated temperature; the answer ends at its 5th
    line or :data:`QUERYGEN_MAX_TOKENS`), each one and the request
    itself (appended last, App. B.1) retrieve with mpnet, and the lists are interleaved (§4.2; notebook 40's own
    :class:`~toolkit.querygen.retrieval.QueryIndex`). SFT and alignment, notebook 40's trained generators, are not
    here: their GGUF models are not committed and retraining them is hours on this CPU. The answers replay from
    ``data/llm_cache/headtohead_querygen``; with ``TOOLKIT_LLM_BACKEND=local`` the missing ones are generated."""
    name = "Query generation"

    def __init__(self, encode_missing: bool = False, model: str = "qwen-1.5b"):
        super().__init__()
        self.encode_missing, self.model = encode_missing, model
        self.temperature = querygen_temperature()

    def offline(self, corpus) -> None:
        from toolkit.querygen.retrieval import QueryIndex
        missing = uncached("mpnet", [d.text for d in corpus.values()])
        rate = ENCODER_DOCS_PER_SECOND["mpnet"]
        if missing and not self.encode_missing:
            raise MethodPending(Pending(
                f"{missing:,} of {len(corpus):,} document vectors of mpnet (its retriever) are not committed",
                "python -m toolkit run 50_headtohead --profile standard -p encode_missing=True, then "
                "python -m toolkit embeddings commit --log <TOOLKIT_EMBEDDING_LOG dir>",
                Cost(index_seconds=missing / rate), f"encoding at {rate} documents/s (results/bench/encoders.txt)"))
        self.index = QueryIndex(corpus, "mpnet")
        self.cost = Cost(index_seconds=len(corpus) / rate, ms_as=("Dense mpnet", 1.0))

    def answers(self, queries: Mapping[str, str]) -> tuple[dict[str, list[str]], dict]:
        """The generated queries per qid, and the answers' record: seconds and completion tokens per answer (means),
        and how many ended at the token cap. Raises MethodPending, with the command, for answers not cached
        while replaying."""
        from toolkit.llm.base import ReplayMiss, as_messages
        from toolkit.querygen import generation as G
        llm = G.client("standard", self.model)
        task, ns = G.task_for("description"), QUERYGEN_NAMESPACE
        decoding = {"decoding": G.Decoding(max_lines=G.PROMPT_LINES), "max_tokens": QUERYGEN_MAX_TOKENS}
        try:
            got = G.generate_queries(dict(queries), llm, self.temperature, namespace=ns,
                                     desc=f"query generation [{llm.model_id}]", **decoding)
        except ReplayMiss:
            have = G.generate_queries(dict(queries), llm, self.temperature, partial=True, namespace=ns, **decoding)
            sec = cached_answer_seconds(llm.cache(task.namespace))
            missing = len(queries) - len(have)
            raise MethodPending(Pending(
                f"{missing} of {len(queries)} queries have no cached zero-shot answer at T={self.temperature}",
                "TOOLKIT_LLM_BACKEND=local python -m toolkit run 50_headtohead --profile standard",
                Cost(llm_seconds=sec * missing, llm_seconds_per_query=sec, ms_as=("Dense mpnet", 1.0)),
                f"{sec:.1f} s per answer, the mean of the cached zero-shot answers")) from None
        cache = llm.cache(ns)
        cache.refresh()
        s = G.sampling_at(task, self.temperature, decoding["decoding"]).with_(max_tokens=QUERYGEN_MAX_TOKENS)
        metas = [a.meta for a in (cache.get("chat", as_messages(p), s.key(), 0)
                                  for p in task.prompts_for(queries.values())) if a is not None]
        record = {"answers": len(metas), "at the cap": sum(m.get("fin") == "length" for m in metas),
                  "seconds": float(np.mean([(m.get("ms") or 0) / 1000 for m in metas])) if metas else 0.0,
                  "tokens": float(np.mean([m.get("ntok") or 0 for m in metas])) if metas else 0.0}
        return got, record

    def online(self, queries) -> Run:
        from toolkit.querygen.retrieval import LIST_SIZE, query_sets
        got, rec = self.answers(queries)
        sets = query_sets(got, dict(queries))
        self.cap = rec
        self.cost = Cost(index_seconds=self.cost.index_seconds, llm_seconds_per_query=rec["seconds"],
                         llm_tokens_per_query=rec["tokens"],
                         ms_as=("Dense mpnet", float(np.mean([len(v) for v in sets.values()]))),
                         note=f"zero-shot, T={self.temperature} (notebook 40's calibration); {rec['at the cap']} of "
                              f"{rec['answers']} answers at the {self.max_tokens()}-token cap")
        return self.index.run(sets, k=LIST_SIZE)

    @staticmethod
    def max_tokens() -> int:
        return QUERYGEN_MAX_TOKENS


def cached_answer_seconds(cache) -> float:
    """Mean seconds per answer of an LLM cache (its answers' recorded milliseconds)."""
    cache.refresh()
    ms = [a.get("ms") or 0 for a in cache.answers()]
    return float(np.mean(ms)) / 1000 if ms else float("nan")


# --- pending: inputs no committed cache holds ------------------------------------------------------------

@lru_cache(maxsize=None)
def _toolrerank_best(profile: str):
    from toolkit.toolrerank import headtohead
    from toolkit.toolrerank.config import config_for
    return headtohead.best_config(config_for(profile))


class ToolRerank(Method):
    """ToolRerank (Zheng et al. 2024) with notebook 10's standard models: the DPR top 50, adaptive truncation, the
    cross-encoder and hierarchy-aware reranking, at the configuration notebook 10's grid search picks on its dev set;
    replayed from the head-to-head score cache (:mod:`toolkit.toolrerank.headtohead`). Online cost: the DPR
    retrieval, reranker and classifier seconds per query measured when that cache was written."""
    name = "ToolRerank"

    def __init__(self, sets: Mapping, profile: str = "standard"):
        super().__init__()
        self.sets, self.profile = sets, profile
        self.cands: dict = {}

    def _estimate(self, cfg) -> Cost:
        from toolkit.toolrerank import score_cache
        from toolkit.toolrerank.experiment import toollens_split
        main = score_cache.cache_path(cfg, toollens_split(cfg.setup))
        stats = score_cache.meta(main).get("training", {}) if main.is_file() else {}
        return Cost(training_minutes=sum(st.get("seconds", 0.0) for st in stats.values()) / 60,
                    ms_per_query=cfg.depth / RERANKER_PAIRS_PER_SECOND * 1000)

    def offline(self, corpus) -> None:
        from toolkit.toolrerank import headtohead
        from toolkit.toolrerank.config import config_for
        cfg = config_for(self.profile)
        mine = {n: ds for n, ds in self.sets.items() if set(ds.corpus) == set(corpus)}
        try:
            self.cands, meta = headtohead.load(cfg, mine)
        except FileNotFoundError as e:
            raise MethodPending(Pending(str(e), headtohead.command(cfg), self._estimate(cfg),
                                        f"training: notebook 10's standard models (score cache meta); online: "
                                        f"{cfg.depth} candidates at {RERANKER_PAIRS_PER_SECOND} reranker pairs/s "
                                        "(results/bench/toolrerank_bases.json)")) from None
        timings = [meta.get("timings", {}).get(n, {}) for n in mine]
        n = sum(t.get("queries", 0) for t in timings)
        online = sum(t.get(k, 0.0) for t in timings for k in ("retrieve_s", "rerank_s", "classify_s"))
        train_s = sum(st.get("seconds", 0.0) for st in meta.get("training", {}).values())
        self.cost = Cost(training_minutes=train_s / 60,
                         index_seconds=max((t.get("index_s", 0.0) for t in timings), default=None),
                         ms_per_query=online * 1000 / n if n else None,
                         note=f"training: notebook 10's standard models, {train_s / 60:.0f} min; online: DPR top "
                              f"{cfg.depth}, reranker and classifier as measured when the scores were written")

    def online(self, queries) -> Run:
        from toolkit.toolrerank.pipeline import as_run, method_lists, restrict
        qids = list(queries)
        name = next((n for n, c in self.cands.items() if qids and qids[0] in c.dataset.queries), None)
        if name is None:
            raise KeyError(f"ToolRerank: query {qids[0] if qids else None!r} is in none of the scored sets "
                           f"({', '.join(self.cands)})")
        return as_run(method_lists(restrict(self.cands[name], qids), _toolrerank_best(self.profile)))


def reinvoke_pending(library_size: int = 16_427) -> Pending:
    """Re-Invoke with its document expansion over the library (m = 1) and intents: offline the synthetic queries at
    the cached answers' mean time, online the intents' mean time and a multi-view MiniLM search."""
    from toolkit import provenance
    from toolkit.paths import REPO
    # the generation's throughput measured by scripts/bench_synthetic_queries.py (the growing cache itself is not read:
    # a generation appending to it would change this run's inputs)
    bench = provenance.read_json_field(REPO / "results" / "bench" / "synthetic_queries.json", "results",
                                       kind="benchmark", fix="run scripts/bench_synthetic_queries.py --out <file>")
    best = max((r for r in bench if r["variant"].startswith("stop")), key=lambda r: r["answers_per_minute"])
    sec = 60 / best["answers_per_minute"]
    per_query, _ = task_rate("intents")
    # what notebook 20's standard run found in the cache (its coverage table), not a typed fact that goes stale
    nb20 = REPO / "results" / "20_reinvoke" / "standard.json"
    cov = [r for r in provenance.read_json_field(nb20, "coverage", kind="notebook 20 run (synthetic-query coverage)")
           if r.get("backbone") == "qwen-1.5b" and str(r.get("dataset", "")).startswith("toolbench")] \
        if nb20.is_file() else []
    from toolkit.reinvoke.tables import DATASET_LABELS
    pools = ", ".join(f"{DATASET_LABELS[r['dataset']]} {r['tools']:,} APIs at m = {r['complete m']}"
                      for r in cov) or "notebook 20's standard run is missing"
    return Pending(f"Re-Invoke's document expansion covers the StableToolBench pools only ({pools}; notebook 20), not "
                   f"the {library_size:,}-API library, nor UltraTool's tools (the intents of every query are cached)",
                   "python -m toolkit.reinvoke --task synthetic-queries --dataset toolbench-all --n 1 (the library's "
                   "documents), then --dataset ultratool",
                   Cost(llm_seconds=sec * library_size, llm_seconds_per_query=per_query, ms_as=("Dense MiniLM", 1.0)),
                   f"m = 1: {library_size:,} answers x {sec:.1f} s ({best['answers_per_minute']} answers/min, "
                   f"{best['variant']}: results/bench/synthetic_queries.json); "
                   f"online: intents at {per_query:.1f} s per query (cached answers' mean)")
