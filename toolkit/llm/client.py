"""The one LLM client every paper calls: cached, resumable, batched, replayable.

    from toolkit.llm import get_client, Sampling
    llm = get_client("qwen-1.5b", namespace="reinvoke_intents")          # local GGUF, live
    llm = get_client("qwen-1.5b", backend="replay", namespace="reinvoke_intents")   # no model
    answers = llm.generate(prompts, sampling=Sampling(temperature=0.7, top_p=1.0, seed=0), n=10)
    text = llm.chat("Say hi", max_tokens=8)[0]

Every call is looked up in the response cache first (key: model id, full prompt, sampling,
sample index) and every new answer is appended to it as soon as it exists, so an interrupted
batch resumes where it stopped. ``mode="replay"`` never calls a model and raises ``ReplayMiss``
naming the missing prompt.
"""
from __future__ import annotations

import logging
import os
import threading
from dataclasses import replace
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, Sequence

from toolkit import paths
from toolkit.llm import models as _models
from toolkit.llm.backends import (Backend, EchoBackend, LocalGGUFBackend, OpenAIBackend, ReplayBackend,
                                  TransformersBackend, _redact)
from toolkit.llm.base import GREEDY, LLMError, Prompt, ReplayMiss, Request, Sampling, ServerUnavailable, as_messages
from toolkit.llm.cache import ResponseCache, prompt_id

log = logging.getLogger("toolkit.llm")

BACKENDS = ("local", "openai", "transformers", "replay", "echo")
MODES = ("live", "replay")


def default_cache_root() -> Path:
    env = os.environ.get("TOOLKIT_LLM_CACHE")
    return Path(env).expanduser() if env else paths.PROJECT_DATA / "llm_cache"


class LLMClient:
    def __init__(self, backend: Backend, *, namespace: str = "default", cache_root: str | Path | None = None,
                 mode: str = "live", sampling: Sampling = GREEDY, progress: bool | None = None):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if mode == "live" and not backend.live:
            mode = "replay"
        self.backend = backend
        self.namespace = namespace
        self.cache_root = Path(cache_root) if cache_root else default_cache_root()
        if mode == "replay" and not self.cache_root.is_dir():
            # replaying from a directory that does not exist would serve nothing and turn every LLM row pending
            env = os.environ.get("TOOLKIT_LLM_CACHE")
            raise LLMError(f"the LLM response cache {self.cache_root} is not a directory"
                           + (f" (TOOLKIT_LLM_CACHE={env!r}); unset TOOLKIT_LLM_CACHE to replay the committed caches "
                              "in data/llm_cache" if env and not cache_root else ""))
        self.mode = mode
        self.sampling = sampling
        self.progress = progress
        self._caches: dict[str, ResponseCache] = {}
        self._lock = threading.Lock()
        self.stats = {"cached": 0, "generated": 0, "seconds": 0.0}

    # -- properties ------------------------------------------------------------------------
    @property
    def model_id(self) -> str:
        return self.backend.model_id

    def cache(self, namespace: str | None = None) -> ResponseCache:
        ns = namespace or self.namespace
        with self._lock:
            if ns not in self._caches:
                self._caches[ns] = ResponseCache(self.cache_root, ns, self.model_id, readonly=self.mode == "replay")
                env = os.environ.get("TOOLKIT_LLM_CACHE")
                if (self.mode == "replay" and env and self.cache_root == Path(env).expanduser()
                        and not self._caches[ns].path.is_file()):
                    # the variable moved the replay away from the committed caches to a directory without this
                    # file: every answer would be missing and its rows pending, in an "ok" run
                    from toolkit import provenance
                    from toolkit.paths import portable
                    committed = ResponseCache.path_for(paths.PROJECT_DATA / "llm_cache", ns, self.model_id)
                    provenance.record_problem(
                        f"TOOLKIT_LLM_CACHE={env!r} holds no {ns}/{self._caches[ns].path.name} to replay "
                        f"(namespace {ns!r}, model {self.model_id!r}): its answers are missing; unset "
                        f"TOOLKIT_LLM_CACHE to replay the committed {portable(committed)}, or fill the directory "
                        "with python -m toolkit llm generate")
            return self._caches[ns]

    def describe(self) -> dict:
        return {**self.backend.describe(), "mode": self.mode, "namespace": self.namespace,
                "cache": str(self.cache().path), "sampling": self.sampling.key()}

    # -- single calls ----------------------------------------------------------------------
    def chat(self, prompt: Prompt, n: int = 1, sampling: Sampling | None = None, namespace: str | None = None,
             **overrides: Any) -> list[str]:
        """``n`` samples for one chat prompt (a string is one user message)."""
        return self.generate([prompt], n=n, sampling=sampling, kind="chat", namespace=namespace,
                             progress=False, **overrides)[0]

    def complete(self, prompt: str, n: int = 1, sampling: Sampling | None = None, namespace: str | None = None,
                 **overrides: Any) -> list[str]:
        """``n`` samples for a raw-text completion prompt (no chat template)."""
        return self.generate([prompt], n=n, sampling=sampling, kind="completion", namespace=namespace,
                             progress=False, **overrides)[0]

    def recorded_seconds(self, prompt: Prompt, sampling: Sampling | None = None, kind: str = "chat",
                         namespace: str | None = None, index: int = 0, **overrides: Any) -> float | None:
        """The generation seconds stored with the cached answer to ``prompt`` (as measured when it was
        generated; model load excluded), or None when it is not cached or was stored without a time.
        A replayed or resumed run reports these instead of the milliseconds a cache hit takes."""
        s = (sampling or self.sampling).with_(**overrides)
        hit = self.cache(namespace).get(kind, self._norm(kind, prompt), s.key(), index)
        ms = hit.meta.get("ms") if hit is not None else None
        return None if ms is None else ms / 1000

    # -- batches ---------------------------------------------------------------------------
    def _norm(self, kind: str, prompt: Prompt) -> Prompt:
        if kind == "chat":
            return as_messages(prompt)
        if kind == "completion":
            if not isinstance(prompt, str):
                raise TypeError("completion prompts must be strings")
            return prompt
        raise ValueError(f"kind must be 'chat' or 'completion', got {kind!r}")

    def missing(self, prompts: Sequence[Prompt], n: int = 1, sampling: Sampling | None = None, kind: str = "chat",
                namespace: str | None = None, **overrides: Any) -> list[tuple[int, int]]:
        """(prompt position, sample index) pairs that are not cached yet."""
        s = (sampling or self.sampling).with_(**overrides)
        cache, key = self.cache(namespace), s.key()
        cache.refresh()
        out = []
        for pos, p in enumerate(prompts):
            norm = self._norm(kind, p)
            out += [(pos, i) for i in range(n) if cache.get(kind, norm, key, i) is None]
        return out

    def generate(self, prompts: Sequence[Prompt], n: int = 1, sampling: Sampling | None = None, kind: str = "chat",
                 namespace: str | None = None, desc: str | None = None, progress: bool | None = None,
                 **overrides: Any) -> list[list[str]]:
        """``n`` samples for each prompt, as ``answers[prompt_position][sample_index]``.

        Cached answers are returned as they are; missing ones are generated (up to
        ``backend.max_concurrency`` at a time, with a progress bar) and appended to the cache one
        by one. On an error, the answers finished so far stay cached and the error is raised.
        ``overrides`` are Sampling fields (``temperature=0.7, max_tokens=64, ...``)."""
        if n < 1:
            raise ValueError("n must be >= 1")
        s = (sampling or self.sampling).with_(**overrides)
        key = s.key()
        cache = self.cache(namespace)
        cache.refresh()
        norm = [self._norm(kind, p) for p in prompts]
        results: list[list[str | None]] = [[None] * n for _ in norm]
        todo: list[tuple[int, int]] = []
        seen: dict[tuple[str, int], tuple[int, int]] = {}
        dupes: list[tuple[int, int, int, int]] = []
        for pos, p in enumerate(norm):
            pid = prompt_id(kind, p)
            for i in range(n):
                hit = cache.get(kind, p, key, i)
                if hit is not None:
                    results[pos][i] = hit.text
                elif (pid, i) in seen:                   # same prompt twice in one batch: compute once
                    dupes.append((pos, i, *seen[(pid, i)]))
                else:
                    seen[(pid, i)] = (pos, i)
                    todo.append((pos, i))
        n_cached = sum(x is not None for r in results for x in r)
        self.stats["cached"] += n_cached
        if todo and self.mode == "replay":
            pos, i = todo[0]
            raise ReplayMiss(self._miss_message(norm[pos], kind, s, i, len(todo), cache))
        if todo:
            self._run(todo, norm, kind, s, key, cache, results, desc, progress)
        for pos, i, p0, i0 in dupes:
            results[pos][i] = results[p0][i0]
        return results  # type: ignore[return-value]

    def _run(self, todo, norm, kind, s, key, cache, results, desc, progress) -> None:
        show = self.progress if progress is None else progress
        if show is None:
            show = len(todo) > 1
        bar = None
        if show:
            from tqdm.auto import tqdm
            bar = tqdm(total=len(todo), desc=desc or f"{self.namespace} [{self.model_id}]", unit="gen")
        log.info("%s: %d answers to generate with %s", self.namespace, len(todo), self.backend.name)

        def work(pos: int, i: int) -> None:
            ans = self.backend.generate(Request(kind, norm[pos], s, i))
            if _redact(ans.text) != ans.text:       # a server that echoes the API key: never store it
                log.warning("%s: an answer contained the API key; it was replaced before caching", self.namespace)
                ans = replace(ans, text=_redact(ans.text))
            # ptok / ctok: prompt tokens and how many of them the server's KV cache already held (prefix reuse)
            cache.put(kind, norm[pos], key, i, ans.text, fin=ans.finish_reason, ntok=ans.completion_tokens,
                      ms=None if ans.seconds is None else int(round(ans.seconds * 1000)),
                      ptok=ans.prompt_tokens, ctok=ans.cached_tokens)
            # another process may have stored an answer first (the cache keeps the first): use what
            # the cache holds, so this run's numbers are the ones a replay gives
            kept = cache.get(kind, norm[pos], key, i)
            results[pos][i] = kept.text if kept is not None else ans.text
            with self._lock:
                self.stats["generated"] += 1
                self.stats["seconds"] += ans.seconds or 0.0
            if bar is not None:
                bar.update(1)

        workers = max(1, min(self.backend.max_concurrency, len(todo)))
        done_before = self.stats["generated"]
        try:
            if workers == 1:
                for pos, i in todo:
                    work(pos, i)
            else:
                ex = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="llm")
                try:
                    futs = [ex.submit(work, pos, i) for pos, i in todo]
                    done, _ = wait(futs, return_when=FIRST_EXCEPTION)
                    for f in done:
                        if f.exception() is not None:
                            raise f.exception()
                finally:
                    ex.shutdown(wait=True, cancel_futures=True)
        except ServerUnavailable as e:
            done = self.stats["generated"] - done_before
            raise ServerUnavailable(f"{e} {done} of this batch's {len(todo)} answers were generated and are cached in "
                                    f"{cache.path}; running again generates only the {len(todo) - done} missing."
                                    ) from None
        finally:
            if bar is not None:
                bar.close()

    def _miss_message(self, prompt: Prompt, kind: str, s: Sampling, index: int, n_missing: int,
                      cache: ResponseCache) -> str:
        text = prompt if isinstance(prompt, str) else "\n".join(f"[{m['role']}] {m['content']}" for m in prompt)
        preview = text if len(text) <= 400 else text[:150] + " [...] " + text[-230:]
        return (f"replay: no cached answer for model {self.model_id!r}, sample {index}, sampling {s.key()} "
                f"in {cache.path} (namespace {cache.namespace!r}; {n_missing} answers missing in this batch). "
                f"First missing prompt (id {prompt_id(kind, prompt)}):\n{preview}\n"
                f"Generate it with a live backend (e.g. backend='local' with the local GGUF, or "
                f"`python -m toolkit llm generate ... --backend local`) and commit the cache file.")

    # -- lifecycle -------------------------------------------------------------------------
    def close(self) -> None:
        self.backend.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self) -> str:
        return f"LLMClient({self.backend!r}, mode={self.mode!r}, namespace={self.namespace!r})"


# =============================================================================================
# Factory
# =============================================================================================

def select_backend(model: str | None = None, backend: str | None = None) -> str:
    """Which backend serves ``model``: explicit ``backend`` (or ``TOOLKIT_LLM_BACKEND``) wins; ``auto``
    picks ``local`` for a registry model or a ``.gguf`` file, ``transformers`` for a directory with
    a ``config.json``, ``openai`` when ``TOOLKIT_LLM_BASE_URL``/``OPENAI_BASE_URL`` is set."""
    choice = backend or os.environ.get("TOOLKIT_LLM_BACKEND") or "auto"
    if choice != "auto":
        if choice not in BACKENDS:
            raise ValueError(f"unknown LLM backend {choice!r}; choose one of {', '.join(BACKENDS)} or 'auto'")
        return choice
    model = model or os.environ.get("TOOLKIT_LLM_MODEL") or _models.DEFAULT_MODEL
    if _models.canonical_id(model) in _models.MODELS or (model.endswith(".gguf") and Path(model).is_file()):
        return "local"
    if (Path(model).expanduser() / "config.json").is_file():
        return "transformers"
    if os.environ.get("TOOLKIT_LLM_BASE_URL") or os.environ.get("OPENAI_BASE_URL"):
        return "openai"
    raise LLMError(f"cannot choose a backend for model {model!r}: it is not a local GGUF "
                   f"({', '.join(sorted(_models.ALIASES))}), not a transformers directory, and no "
                   f"TOOLKIT_LLM_BASE_URL is set; pass backend='openai'|'local'|'transformers'|'replay'")


def make_backend(model: str | None = None, backend: str | None = None, **kw: Any) -> Backend:
    name = select_backend(model, backend)
    if name == "openai":
        return OpenAIBackend(model, **kw)
    model = model or os.environ.get("TOOLKIT_LLM_MODEL") or _models.DEFAULT_MODEL
    if name == "local":
        return LocalGGUFBackend(model, **kw)
    if name == "transformers":
        return TransformersBackend(model, **kw)
    if name == "replay":
        return ReplayBackend(model, **kw)
    return EchoBackend(**kw)


def get_client(model: str | None = None, backend: str | None = None, *, namespace: str = "default",
               cache_root: str | Path | None = None, mode: str | None = None, sampling: Sampling = GREEDY,
               progress: bool | None = None, **backend_kw: Any) -> LLMClient:
    """A cached client. ``backend``: local | openai | transformers | replay | echo | auto (default,
    or ``TOOLKIT_LLM_BACKEND``). ``mode``: live (cache, then model) or replay (cache only)."""
    b = make_backend(model, backend, **backend_kw)
    c = LLMClient(b, namespace=namespace, cache_root=cache_root, mode=mode or ("replay" if not b.live else "live"),
                  sampling=sampling, progress=progress)
    from toolkit import provenance
    provenance.record_llm(namespace, c.model_id, b.name, c.mode,
                          from_env=backend is None and bool(os.environ.get("TOOLKIT_LLM_BACKEND")))
    return c


def client_for_profile(profile: str, model: str | None = None, *, namespace: str = "default",
                       cache_root: str | Path | None = None, sampling: Sampling = GREEDY, **backend_kw: Any) -> LLMClient:
    """The client a notebook should use for a run profile (toolkit.results.PROFILES): ``smoke`` and ``standard``
    replay the committed cache (no model needed) unless ``TOOLKIT_LLM_BACKEND`` names a live backend
    (then missing answers are generated and appended); ``paper`` uses ``TOOLKIT_LLM_BACKEND`` or
    auto-selection (typically an OpenAI-compatible server with a large model)."""
    if profile not in ("smoke", "standard", "paper"):
        raise ValueError(f"unknown profile {profile!r}; expected smoke, standard or paper")
    env = os.environ.get("TOOLKIT_LLM_BACKEND")
    if env == "echo" and profile in ("smoke", "standard"):
        # echo answers every prompt with fixed text: under these profiles its numbers would be recorded as results
        raise LLMError(f"TOOLKIT_LLM_BACKEND=echo is set, and the {profile} profile records its LLM rows as results; "
                       "echo answers with fixed text. Unset TOOLKIT_LLM_BACKEND to replay the committed caches, or "
                       "set it to local / openai to generate what is missing")
    # env set: get_client reads it itself, and records that the environment chose the backend
    backend = None if env else ("replay" if profile in ("smoke", "standard") else None)
    return get_client(model, backend, namespace=namespace, cache_root=cache_root, sampling=sampling, **backend_kw)
