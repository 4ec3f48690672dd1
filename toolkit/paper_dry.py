"""The ``paper`` profile's dry run on CPU (``python -m toolkit paper-dry``, ``make paper-dry``): every notebook under
``--profile paper`` with :data:`toolkit.paper.DRY` overrides that shrink its sizes to toy scale, the models this machine
lacks replaced by named local stand-ins (:func:`toolkit.paper.stand_ins`), the LLM notebooks against a real llama.cpp
server on 127.0.0.1; everything written into a scratch directory, never into ``results/`` or the committed caches.
Apart from :mod:`toolkit.paper` so that the runner (which calls :func:`toolkit.paper.preflight`) and the dry run
(which calls the runner) import in one direction."""
from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

from toolkit.paper import (LLM_NOTEBOOKS, NOTEBOOKS, STAND_IN_LLM, PaperProfileError, dry_overrides,
                           hub_reachable)
from toolkit.paths import cache_dir


def dry_run(notebooks: list[str] | None = None, out: Path | None = None, stream=sys.stdout) -> int:
    """Run ``notebooks`` (default: all) under ``--profile paper`` at toy scale with stand-ins into ``out`` (default: a
    scratch directory under the cache); starts llama.cpp's server for the LLM notebooks and stops it at the end.
    Returns the number of notebooks that failed or whose results lack the stand-ins or the device."""
    from toolkit.llm.serve import LlamaServer
    from toolkit.runner import notebook_path, run_notebook
    names = [notebook_path(n).stem for n in (notebooks or NOTEBOOKS)]
    out = Path(out) if out else Path(tempfile.mkdtemp(prefix="paper-dry-", dir=cache_dir()))
    out.mkdir(parents=True, exist_ok=True)
    (out / "llm_cache").mkdir(exist_ok=True)
    saved = {k: os.environ.get(k) for k in ("TOOLKIT_RESULTS", "TOOLKIT_FIGURES", "TOOLKIT_LLM_CACHE",
                                            "TOOLKIT_LLM_BACKEND", "TOOLKIT_LLM_BASE_URL", "TOOLKIT_STAND_INS",
                                            "TOOLKIT_LLM_MODEL", "TOOLKIT_FEEDBACK_TRACES")}
    os.environ.update(TOOLKIT_RESULTS=str(out / "results"), TOOLKIT_FIGURES=str(out / "figures"),
                      TOOLKIT_LLM_CACHE=str(out / "llm_cache"), TOOLKIT_FEEDBACK_TRACES=str(out / "feedback_traces"))
    server = None
    failed = 0
    hub = hub_reachable()
    print(f"paper-dry: {len(names)} notebooks into {out} (hub {'reachable' if hub else 'unreachable'})", file=stream)
    try:
        if any(n in LLM_NOTEBOOKS for n in names) and server is None:
            threads = os.environ.get("TOOLKIT_LLM_THREADS")
            server = LlamaServer(STAND_IN_LLM, n_parallel=2, n_threads=int(threads) if threads else 1,
                                 ctx_per_slot=4096, log=out / "server.log")
            try:
                server.start(timeout=float(os.environ.get("TOOLKIT_LLM_SERVER_START_TIMEOUT", 600)))
            except Exception as e:       # one line, and the notebooks that need no LLM still run
                print(f"paper-dry: FAILED to start the LLM server: {type(e).__name__}: {e}", file=stream, flush=True)
                server = None
                failed += sum(n in LLM_NOTEBOOKS for n in names)
                names = [n for n in names if n not in LLM_NOTEBOOKS]
            else:
                os.environ.update(TOOLKIT_LLM_BACKEND="openai", TOOLKIT_LLM_BASE_URL=server.base_url)
                print(f"paper-dry: llama.cpp server {server.base_url} ({STAND_IN_LLM}), pid {server.proc.pid}",
                      file=stream)
        for i, nb in enumerate(names, 1):
            params, rec = dry_overrides(nb, hub)
            os.environ["TOOLKIT_STAND_INS"] = json.dumps(rec)
            t = time.time()
            print(f"[{i}/{len(names)}] {nb} (paper, dry) ...", end=" ", flush=True, file=stream)
            try:
                run_notebook(nb, "paper", params, output=out / "results" / nb / "paper.ipynb")
                res = json.loads((out / "results" / nb / "paper.json").read_text())
                missing = [k for k in ("device", "stand_ins") if k not in res]
                if missing:
                    raise PaperProfileError(f"results lack {', '.join(missing)}")
                used = ", ".join(f"{k}={v['stand_in']}" for k, v in rec.items()) or "none"
                print(f"ok in {time.time() - t:.1f}s; stand-ins: {used}; device {res['device']['device']}",
                      file=stream, flush=True)
            except Exception as e:
                failed += 1
                msg = str(e).strip().splitlines()
                print(f"FAILED after {time.time() - t:.1f}s: {type(e).__name__}: {msg[-1] if msg else ''}",
                      file=stream, flush=True)
    finally:
        if server is not None:
            server.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return failed
