"""LLM backends. Each turns one ``Request`` (one prompt, one sample) into one ``Answer``.

- ``LocalGGUFBackend``: llama.cpp through ``xllamacpp`` (in-process server: continuous batching over
  ``n_parallel`` slots, prompt/KV-prefix reuse across calls). Weights from ``toolkit.llm.models``.
- ``OpenAIBackend``: any OpenAI-compatible HTTP endpoint (vLLM, llama.cpp server, Ollama, OpenAI).
  Base URL and model from arguments or ``TOOLKIT_LLM_BASE_URL`` / ``TOOLKIT_LLM_MODEL``; the key only
  from the environment (``TOOLKIT_LLM_API_KEY``, else ``OPENAI_API_KEY``), read at request time and
  never stored, logged or cached.
- ``TransformersBackend``: local ``transformers`` generation (fine-tuned generators, e.g. query-gen SFT).
- ``EchoBackend``: no model; a deterministic answer derived from the prompt (tests, dry runs).
- ``ReplayBackend``: no model; the client answers from the cache or raises ``ReplayMiss``.

Backends declare ``max_concurrency``: how many requests the client may run at once.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import socket
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from toolkit.llm import models as _models
from toolkit.llm.base import (Answer, LLMError, Request, ServerUnavailable, lines_grammar, truncate_at_lines,
                               truncate_at_stop)

# Local defaults, measured on 2 shared CPU cores with Qwen2.5-Coder-1.5B (toolkit/llm/README.md):
# reusing the KV cache of the shared prompt prefix is the big win (3.6-4.7x over naive); decoding
# 4 sequences together gave no measurable gain with 1 thread (3 runs each under load 2-8: 1 slot
# 13.6-22.9 gen/min, 4 slots 12.9-22.0) and makes greedy outputs depend on batch timing (4-slot
# runs agree with each other on 46-49 of 50 answers, 1-slot runs on 50/50). So parallel slots are
# used only from PARALLEL_MIN_THREADS threads up, where batched decoding is expected to pay.
DEFAULT_PARALLEL = 4
PARALLEL_MIN_THREADS = 4
DEFAULT_CTX_PER_SLOT = 4096


def busy_cores(interval: float = 0.5) -> float:
    """Cores in use now: the non-idle share of ``/proc/stat``'s CPU time over ``interval`` seconds, times the
    cores; where there is no ``/proc/stat``, the 1-minute load average. Not the load average first: it lags a
    finished job by minutes, so a run started just after one (the next job of a chain) would take 1 thread of 2
    for its whole length (seen here: a feedback loop decoding at a third of its speed)."""
    def snapshot() -> tuple[int, int]:
        with open("/proc/stat", encoding="ascii") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v), v[3] + (v[4] if len(v) > 4 else 0)          # total, idle + iowait
    cores = os.cpu_count() or 1
    try:
        t0, i0 = snapshot()
        time.sleep(interval)
        t1, i1 = snapshot()
    except (OSError, ValueError, IndexError):
        try:
            return os.getloadavg()[0]
        except OSError:  # pragma: no cover - platform without getloadavg
            return 0.0
    return cores * (1 - (i1 - i0) / (t1 - t0)) if t1 > t0 else 0.0


def default_threads() -> int:
    """CPU threads for llama.cpp: ``$TOOLKIT_LLM_THREADS``, else the cores not already busy
    (:func:`busy_cores`), at least 1. llama.cpp's worker threads spin while they wait for each other, so
    on a shared machine asking for more threads than free cores makes decoding several times slower
    (measured here: 2 threads on 2 busy cores ran 2.5x slower than 1 thread)."""
    env = os.environ.get("TOOLKIT_LLM_THREADS")
    if env:
        try:
            n = int(env)
        except ValueError:
            raise ValueError(f"TOOLKIT_LLM_THREADS must be a whole number of CPU threads, got {env!r}") from None
        if n < 1:
            raise ValueError(f"TOOLKIT_LLM_THREADS must be >= 1, got {n}")
        return n
    cores = os.cpu_count() or 1
    n = max(1, min(cores, int(cores - busy_cores() + 0.5)))
    if n < cores:
        logging.getLogger("toolkit.llm").warning(
            "llama.cpp gets %d of %d CPU threads: the others are busy now (set TOOLKIT_LLM_THREADS to choose)",
            n, cores)
    return n


def dry_fields(multiplier: float, context: int) -> dict[str, Any]:
    """llama.cpp's DRY sampler fields at its documented defaults (base 1.75, allowed length 2), over ``context``
    tokens (the slot: llama-server's -1 is refused by xllamacpp's request check, and 0 turns DRY off)."""
    return {"dry_multiplier": float(multiplier), "dry_base": 1.75, "dry_allowed_length": 2,
            "dry_penalty_last_n": int(context)}


def _add_request_fields(body: dict[str, Any], req: Request) -> None:
    """Seed, stop strings and the prompt (chat messages or plain text): the same fields for the
    llama.cpp server API and the OpenAI API."""
    s = req.sampling
    seed = s.seed_for(req.index)
    if seed is not None:
        body["seed"] = seed
    if s.stop:
        body["stop"] = list(s.stop)
    if req.kind == "chat":
        body["messages"] = req.messages()
    else:
        body["prompt"] = req.prompt

# Speculative decoding is off by default: measured here (scripts/bench_feedback.py --n 6 --only chat --tool-chars 400
# --caps 160,160,96 --speculative ngram-simple,draft:qwen-0.5b; 2 threads, nothing else running) the plain feedback
# round took 252.8 s for 6, ngram-simple 278.5 s (0.91x) and a Qwen2.5-Coder-0.5B draft 710.9 s (0.36x: both models
# share two cores), and the drafted runs' greedy answers differed from the plain run's (10 and 7 of 18 identical).
# Again with the fair step's longer answers (2026-12-04: --fair --n 3 --parallel 1 --only chat --speculative
# ngram-simple): plain 187.2 s for 3 rounds, ngram-simple 213.7 s (0.88x), 2 of 9 answers identical. It does not pay.
SPECULATIVE = ("ngram-simple", "ngram-mod", "draft:<model>")


def parse_speculative(spec: str | None) -> str | None:
    """Speculative decoding for the local backend (llama.cpp checks the drafted tokens with the target model
    in one batch, so greedy answers are the target model's): None (off), ``ngram-simple`` / ``ngram-mod``
    (drafts copied from earlier text of the prompt and answer, no second model) or ``draft:<model>`` (a
    smaller model of the same tokenizer, e.g. ``draft:qwen-0.5b``)."""
    if spec in (None, "", "none"):
        return None
    if spec in ("ngram-simple", "ngram-mod") or (spec.startswith("draft:") and len(spec) > len("draft:")):
        return spec
    raise ValueError(f"speculative must be one of {', '.join(SPECULATIVE)} or None, got {spec!r}")


def _set_speculative(p, xlc, spec: str, draft_max: int, n_threads: int) -> None:
    T = xlc.common_speculative_type
    if spec.startswith("draft:"):
        p.speculative.types = [T.COMMON_SPECULATIVE_TYPE_DRAFT_SIMPLE]
        d = p.speculative.draft
        d.mparams.path = str(_models.gguf_path(spec.split(":", 1)[1]))
        d.n_max = draft_max
        d.cpuparams.n_threads = n_threads
        d.cpuparams_batch.n_threads = n_threads
    else:
        p.speculative.types = [{"ngram-simple": T.COMMON_SPECULATIVE_TYPE_NGRAM_SIMPLE,
                                "ngram-mod": T.COMMON_SPECULATIVE_TYPE_NGRAM_MOD}[spec]]
        p.speculative.draft.n_max = draft_max


class Backend:
    name = "base"
    model_id = ""
    max_concurrency = 1
    live = True              # False: answers come only from the cache

    def generate(self, req: Request) -> Answer:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def describe(self) -> dict:
        return {"backend": self.name, "model_id": self.model_id, "max_concurrency": self.max_concurrency}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model_id={self.model_id!r})"


# =============================================================================================
# Local GGUF through xllamacpp
# =============================================================================================

class LocalGGUFBackend(Backend):
    """llama.cpp in-process. Each slot keeps the KV cache of its last prompt and ``prompt_cache=True``
    reuses the longest common prefix, so the long shared head of a template (instructions,
    few-shot examples, chat-template system prompt) is processed once, not once per call.
    ``n_parallel`` slots decode concurrently (continuous batching); default: 1 below
    ``PARALLEL_MIN_THREADS`` threads, else ``DEFAULT_PARALLEL``. ``n_threads`` default: free cores
    (``default_threads``). ``prompt_cache=False, n_parallel=1`` is the naive baseline."""

    name = "local"

    def __init__(self, model: str = _models.DEFAULT_MODEL, n_parallel: int | None = None,
                 ctx_per_slot: int = DEFAULT_CTX_PER_SLOT, n_threads: int | None = None,
                 prompt_cache: bool = True, n_batch: int = 512, verbose: bool = False,
                 speculative: str | None = None, draft_max: int = 16):
        self.speculative = parse_speculative(speculative)
        self.draft_max = int(draft_max)
        self.n_threads = int(n_threads) if n_threads else default_threads()
        if n_parallel is None:
            n_parallel = DEFAULT_PARALLEL if self.n_threads >= PARALLEL_MIN_THREADS else 1
        if n_parallel < 1:
            raise ValueError("n_parallel must be >= 1")
        self.model = model
        self.model_id = _models.canonical_id(model)
        self.path = _models.gguf_path(model)          # joins + checks sha256 on first use
        self.n_parallel = int(n_parallel)
        self.max_concurrency = self.n_parallel
        self.ctx_per_slot = int(ctx_per_slot)
        self.prompt_cache = bool(prompt_cache)
        self.n_batch = int(n_batch)
        self.verbose = verbose
        self._server = None
        self._used = False
        self._lock = threading.Lock()

    def _get_server(self):
        with self._lock:
            if self._server is None:
                try:
                    import xllamacpp as xlc
                except ImportError as e:  # pragma: no cover - environment problem
                    raise LLMError("the local backend needs `xllamacpp` (pip install xllamacpp)") from e
                p = xlc.CommonParams()
                p.model.path = str(self.path)
                p.n_parallel = self.n_parallel
                p.n_ctx = self.ctx_per_slot * self.n_parallel
                p.n_batch = self.n_batch
                p.n_ubatch = self.n_batch
                p.cpuparams.n_threads = self.n_threads
                p.cpuparams_batch.n_threads = self.n_threads
                p.cache_prompt = self.prompt_cache
                if not self.prompt_cache:
                    p.cache_ram_mib = 0                 # no host-memory prompt cache either
                    p.cache_idle_slots = False
                if self.speculative:
                    _set_speculative(p, xlc, self.speculative, self.draft_max, self.n_threads)
                p.warmup = False
                p.endpoint_slots = False
                p.verbosity = 3 if self.verbose else 0
                self._server = xlc.Server(p)
            return self._server

    def _payload(self, req: Request) -> dict:
        s = req.sampling
        body: dict[str, Any] = {
            "max_tokens": s.max_tokens, "temperature": s.temperature, "top_p": s.top_p,
            "top_k": s.top_k, "min_p": s.min_p, "repeat_penalty": float(s.repeat_penalty),
            "cache_prompt": self.prompt_cache, "stream": False,
        }
        if s.max_lines:
            body["grammar"] = lines_grammar(s.max_lines)     # decoding ends at the max_lines-th line
        if s.dry_multiplier:
            body.update(dry_fields(s.dry_multiplier, self.ctx_per_slot))
        _add_request_fields(body, req)
        return body

    def generate(self, req: Request) -> Answer:
        server = self._get_server()
        body = self._payload(req)
        t0 = time.perf_counter()
        if req.kind == "chat":
            res = server.handle_chat_completions(body)
        else:
            res = server.handle_completions(body)
        dt = time.perf_counter() - t0
        self._used = True
        if not isinstance(res, dict) or "error" in res or not res.get("choices"):
            msg = res.get("error", res) if isinstance(res, dict) else res
            raise LLMError(f"local model {self.model_id}: {msg}")
        ch = res["choices"][0]
        text = (ch["message"].get("content") or "") if req.kind == "chat" else ch.get("text", "")
        fin = ch.get("finish_reason")
        if req.sampling.max_lines:
            # the grammar already ends the answer there; the same cut as the other backends' guards against a
            # server that ignored it
            cut_text, cut = truncate_at_lines(text, req.sampling.max_lines)
            if cut:
                text, fin = cut_text, "stop"
        usage = res.get("usage", {}) or {}
        timings = res.get("timings", {}) or {}
        return Answer(text=text, finish_reason=fin,
                      completion_tokens=usage.get("completion_tokens"), prompt_tokens=usage.get("prompt_tokens"),
                      cached_tokens=timings.get("cache_n"), seconds=dt,
                      extra={"prompt_n": timings.get("prompt_n"), "prompt_ms": timings.get("prompt_ms"),
                             "predicted_ms": timings.get("predicted_ms")})

    def close(self) -> None:
        with self._lock:
            server, self._server = self._server, None
        if server is not None:
            if not self._used:
                # destroying an xllamacpp Server that never served can race its main loop start-up
                # (seen as a hang in ~Server); one tiny request settles it.
                try:
                    server.handle_completions({"prompt": "x", "max_tokens": 1})
                except Exception:
                    pass
            del server

    def describe(self) -> dict:
        return {**super().describe(), "path": str(self.path), "n_parallel": self.n_parallel,
                "ctx_per_slot": self.ctx_per_slot, "n_threads": self.n_threads, "prompt_cache": self.prompt_cache,
                **({"speculative": self.speculative, "draft_max": self.draft_max} if self.speculative else {})}


# =============================================================================================
# OpenAI-compatible HTTP
# =============================================================================================

KEY_ENVS = ("TOOLKIT_LLM_API_KEY", "OPENAI_API_KEY")
RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


def _api_key() -> str | None:
    for env in KEY_ENVS:
        v = os.environ.get(env)
        if v:
            return v
    return None


def _redact(text: str) -> str:
    key = _api_key()
    return text.replace(key, "***") if key else text


class OpenAIBackend(Backend):
    """Chat/completions against ``<base_url>/chat/completions`` (``/completions``). A base URL without
    a ``/v1`` path gets one appended (``http://localhost:8080`` -> ``http://localhost:8080/v1``).

    Connection failures, timeouts and HTTP 408/429/5xx are retried ``max_retries`` times with
    exponential backoff (``backoff * 2**attempt`` s, jittered); then ``ServerUnavailable`` names the
    URL. ``top_k``/``min_p`` are sent only when set (OpenAI itself rejects them)."""

    name = "openai"

    def __init__(self, model: str | None = None, base_url: str | None = None, *, model_id: str | None = None,
                 concurrency: int = 4, timeout: float = 600.0, max_retries: int = 5, backoff: float = 1.0,
                 extra_body: dict | None = None):
        base_url = base_url or os.environ.get("TOOLKIT_LLM_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
        model = model or os.environ.get("TOOLKIT_LLM_MODEL")
        if not base_url:
            raise LLMError("the openai backend needs a base URL: pass base_url=... or set TOOLKIT_LLM_BASE_URL "
                           "(e.g. http://localhost:8000/v1 for vLLM, http://localhost:11434/v1 for Ollama)")
        if not model:
            raise LLMError("the openai backend needs a model name: pass model=... or set TOOLKIT_LLM_MODEL")
        base_url = base_url.rstrip("/")
        if not base_url.startswith(("http://", "https://")):
            raise LLMError(f"the openai backend's base URL must start with http:// or https://, got {base_url!r} "
                           "(TOOLKIT_LLM_BASE_URL, e.g. http://localhost:8000/v1)")
        if "/v1" not in base_url.split("://", 1)[-1]:
            base_url += "/v1"
        self.base_url = base_url
        self.model = model
        self.model_id = model_id or _models.canonical_id(model)
        self.max_concurrency = int(concurrency)
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.backoff = float(backoff)
        self.extra_body = dict(extra_body or {})

    def _payload(self, req: Request) -> dict:
        s = req.sampling
        body: dict[str, Any] = {"model": self.model, "max_tokens": s.max_tokens,
                                "temperature": s.temperature, "top_p": s.top_p, "n": 1, "stream": False}
        if s.top_k:
            body["top_k"] = s.top_k
        if s.min_p:
            body["min_p"] = s.min_p
        if s.repeat_penalty != 1.0:                    # not OpenAI's own API; vLLM's and llama-server's names
            body["repetition_penalty"] = body["repeat_penalty"] = float(s.repeat_penalty)
        if s.dry_multiplier:                           # llama-server's fields (a server without DRY ignores them)
            body.update(dry_fields(s.dry_multiplier, DEFAULT_CTX_PER_SLOT))
        _add_request_fields(body, req)
        body.update(self.extra_body)
        return body

    def _post(self, path: str, body: dict) -> dict:
        url = f"{self.base_url}/{path}"
        data = json.dumps(body).encode("utf-8")
        last = ""
        for attempt in range(self.max_retries + 1):
            headers = {"Content-Type": "application/json"}
            key = _api_key()
            if key:
                headers["Authorization"] = f"Bearer {key}"
            r = urllib.request.Request(url, data=data, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(r, timeout=self.timeout) as resp:
                    return json.loads(resp.read().decode("utf-8"))
            except urllib.error.HTTPError as e:
                detail = " ".join(_redact(e.read().decode("utf-8", "replace")[:500]).split())   # one line
                if e.code in (401, 403):
                    raise LLMError(f"LLM server {url} refused the API key (HTTP {e.code}): "
                                   + (f"the key in ${next(v for v in KEY_ENVS if os.environ.get(v))} is not one it "
                                      "accepts" if key else f"no key was sent; set {KEY_ENVS[0]} (or {KEY_ENVS[1]})")
                                   + f" [{detail[:200]}]") from None
                if e.code == 404:
                    raise LLMError(f"LLM server {url} has no such endpoint (HTTP 404): check TOOLKIT_LLM_BASE_URL "
                                   f"(base URL {self.base_url}; it should end in the server's /v1) [{detail[:200]}]"
                                   ) from None
                if e.code not in RETRY_STATUS:
                    raise LLMError(f"LLM server {url} answered HTTP {e.code}: {detail}") from None
                last = f"HTTP {e.code}: {detail}"
            except (urllib.error.URLError, socket.timeout, TimeoutError, ConnectionError) as e:
                last = _redact(str(getattr(e, "reason", e)))
            except json.JSONDecodeError as e:
                raise LLMError(f"LLM server {url} sent a response that is not JSON: {e}") from None
            if attempt < self.max_retries:
                time.sleep(self.backoff * (2 ** attempt) * (0.75 + 0.5 * random.random()))
        raise ServerUnavailable(f"LLM server {url} is unavailable after {self.max_retries + 1} attempts "
                                f"(last error: {last}). Is it running? Check TOOLKIT_LLM_BASE_URL.")

    def generate(self, req: Request) -> Answer:
        t0 = time.perf_counter()
        res = self._post("chat/completions" if req.kind == "chat" else "completions", self._payload(req))
        dt = time.perf_counter() - t0
        try:
            ch = res["choices"][0]
            text = (ch["message"].get("content") or "") if req.kind == "chat" else ch["text"]
        except (KeyError, IndexError, TypeError, AttributeError):
            raise LLMError(f"LLM server {self.base_url}: unexpected response {str(res)[:300]}") from None
        usage = res.get("usage") or {}
        fin = ch.get("finish_reason")
        text, cut = truncate_at_lines(text, req.sampling.max_lines)     # no grammar here: cut after decoding
        if cut:
            fin = "stop"
        return Answer(text=text, finish_reason=fin, completion_tokens=usage.get("completion_tokens"),
                      prompt_tokens=usage.get("prompt_tokens"), seconds=dt)

    def describe(self) -> dict:
        return {**super().describe(), "base_url": self.base_url, "model": self.model,
                "api_key_from": next((e for e in KEY_ENVS if os.environ.get(e)), None)}

    def __repr__(self) -> str:
        return f"OpenAIBackend(base_url={self.base_url!r}, model={self.model!r})"


# =============================================================================================
# Local transformers
# =============================================================================================

class TransformersBackend(Backend):
    """``transformers`` causal-LM generation on CPU (or ``device``). Chat prompts go through the
    tokenizer's chat template when it has one. Requests run one at a time (torch already uses all
    cores); sampling is seeded per request with ``torch.manual_seed(seed + index)``."""

    name = "transformers"

    def __init__(self, model: str, *, model_id: str | None = None, device: str = "cpu", dtype: str | None = None):
        self.model = str(model)
        self.model_id = model_id or ("hf:" + (Path(self.model).name if Path(self.model).exists() else self.model))
        self.device = device
        self.dtype = dtype
        self.max_concurrency = 1
        self._tok = None
        self._lm = None
        self._lock = threading.Lock()

    def _load(self):
        if self._lm is None:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
            kw = {}
            if self.dtype:
                kw["dtype"] = getattr(torch, self.dtype)
            self._tok = AutoTokenizer.from_pretrained(self.model)
            self._lm = AutoModelForCausalLM.from_pretrained(self.model, **kw).to(self.device).eval()
        return self._tok, self._lm

    def _text(self, req: Request, tok) -> str:
        if req.kind != "chat":
            return req.prompt
        msgs = req.messages()
        if getattr(tok, "chat_template", None):
            return tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
        return "\n".join(m["content"] for m in msgs)

    def generate(self, req: Request) -> Answer:
        import torch
        if req.sampling.dry_multiplier:              # refused before the model loads
            raise LLMError(f"transformers backend ({self.model_id}): sampling asks for dry_multiplier="
                           f"{req.sampling.dry_multiplier}, llama.cpp's DRY sampler, which transformers does not "
                           "have; use the local or openai backend, or set dry_multiplier=0")
        with self._lock:
            tok, lm = self._load()
            s = req.sampling
            text = self._text(req, tok)
            enc = tok(text, return_tensors="pt", add_special_tokens=req.kind != "chat").to(self.device)
            kw: dict[str, Any] = {"max_new_tokens": s.max_tokens, "do_sample": not s.greedy}
            if s.repeat_penalty != 1.0:
                kw["repetition_penalty"] = float(s.repeat_penalty)
            if not s.greedy:
                kw.update(temperature=s.temperature, top_p=s.top_p, top_k=s.top_k, min_p=s.min_p or None)
                seed = s.seed_for(req.index)
                if seed is not None:
                    torch.manual_seed(seed)
            else:
                kw.update(temperature=None, top_p=None, top_k=None)
            pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
            t0 = time.perf_counter()
            with torch.no_grad():
                out = lm.generate(**enc, pad_token_id=pad, **kw)
            dt = time.perf_counter() - t0
            new = out[0, enc["input_ids"].shape[1]:]
            answer = tok.decode(new, skip_special_tokens=True)
            answer, stopped = truncate_at_stop(answer, s.stop)
            answer, cut = truncate_at_lines(answer, s.max_lines)
            stopped = stopped or cut
            hit_eos = tok.eos_token_id is not None and len(new) and int(new[-1]) == tok.eos_token_id
            fin = "stop" if (stopped or hit_eos or len(new) < s.max_tokens) else "length"
            return Answer(text=answer, finish_reason=fin, completion_tokens=int(len(new)),
                          prompt_tokens=int(enc["input_ids"].shape[1]), seconds=dt)


# =============================================================================================
# No-model backends
# =============================================================================================

class EchoBackend(Backend):
    """Deterministic stand-in for a model: answers ``echo <hash of prompt+sampling+index>`` (or
    ``answer_fn(request)``). ``delay`` seconds per call; ``log`` appends one line per *finished*
    computation (used by the interruption test to prove nothing is computed twice)."""

    name = "echo"

    def __init__(self, model_id: str = "echo", delay: float = 0.0, concurrency: int = 1,
                 log: str | Path | None = None, answer_fn=None):
        self.model_id = model_id
        self.delay = float(delay)
        self.max_concurrency = int(concurrency)
        self.log = Path(log) if log else None
        self.answer_fn = answer_fn
        self.calls = 0
        self._lock = threading.Lock()

    def generate(self, req: Request) -> Answer:
        if self.delay:
            time.sleep(self.delay)
        h = hashlib.sha256(json.dumps([req.kind, req.prompt, req.sampling.key(), req.index],
                                      sort_keys=True).encode()).hexdigest()[:12]
        text = self.answer_fn(req) if self.answer_fn else f"echo {h}"
        text = truncate_at_lines(text, req.sampling.max_lines)[0]      # a no-op while max_lines is 0 (off)
        with self._lock:
            self.calls += 1
            if self.log:
                with open(self.log, "a") as f:
                    f.write(f"{h}\n")
                    f.flush()
        return Answer(text=text, finish_reason="stop", completion_tokens=len(text.split()), seconds=self.delay)


class ReplayBackend(Backend):
    """Marks a client that must answer from the cache only; calling it is a programming error."""

    name = "replay"
    live = False

    def __init__(self, model: str = _models.DEFAULT_MODEL, model_id: str | None = None):
        self.model_id = model_id or _models.canonical_id(model)
        self.max_concurrency = 1

    def generate(self, req: Request) -> Answer:  # pragma: no cover - the client never calls it
        raise LLMError("ReplayBackend cannot generate")
