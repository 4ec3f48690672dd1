"""llama.cpp's OpenAI-compatible HTTP server (the one in ``xllamacpp``) on a local model, as a process of its own.

The same API as vLLM, TGI, Ollama and llama.cpp's ``llama-server`` (``/health``, ``/v1/chat/completions``,
``/v1/completions``), so whatever talks to it through the ``openai`` backend talks to a GPU server the same way.
It serves the tests of the ``openai`` path (tests/test_llm_server.py) and the LLM of ``make paper-dry``:

    python -m toolkit.llm.serve --model qwen-0.5b --port 8080         # until Ctrl-C / SIGTERM
    with LlamaServer("qwen-0.5b") as srv:                              # a child process at a free port
        os.environ["TOOLKIT_LLM_BASE_URL"] = srv.base_url               # http://127.0.0.1:<port>/v1

An API key, when wanted, is read from the environment variable named by ``--api-key-env`` (never from the
command line, where ``ps`` would show it); requests without it are answered HTTP 401.
"""
from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from toolkit.llm import models as _models
from toolkit.llm.base import LLMError

READY_LINE = "listening "


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on at ``host`` now (the OS's choice)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _params(model: str, host: str, port: int, n_parallel: int, n_threads: int, ctx_per_slot: int,
            api_key: str | None, alias: str):
    import xllamacpp as xlc
    p = xlc.CommonParams()
    p.model.path = str(_models.gguf_path(model))
    p.hostnames = [host]
    p.port = int(port)
    p.model_alias = {alias}
    p.n_parallel = int(n_parallel)
    p.n_ctx = int(ctx_per_slot) * int(n_parallel)
    p.cpuparams.n_threads = int(n_threads)
    p.cpuparams_batch.n_threads = int(n_threads)
    p.warmup = False
    p.endpoint_slots = False
    p.verbosity = 0
    if api_key:
        p.api_keys = [api_key]
    return p


def serve(model: str = "qwen-0.5b", host: str = "127.0.0.1", port: int = 8080, n_parallel: int = 4,
          n_threads: int | None = None, ctx_per_slot: int = 4096, api_key_env: str | None = None) -> None:
    """Serve ``model`` (a registry alias or a .gguf file) over HTTP until SIGTERM/SIGINT. Prints one line
    ``listening http://host:port`` once the server accepts requests."""
    from toolkit.llm.backends import default_threads
    key = None
    if api_key_env:
        key = os.environ.get(api_key_env)
        if not key:
            raise LLMError(f"--api-key-env {api_key_env}: that environment variable is empty; set it to the key "
                           "clients must send, or leave --api-key-env out for a server without a key")
    import xllamacpp as xlc
    server = xlc.Server(_params(model, host, port, n_parallel, n_threads or default_threads(), ctx_per_slot, key,
                                alias=str(model)))
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    print(f"{READY_LINE}{server.listening_address} model={_models.canonical_id(model)} slots={n_parallel}",
          flush=True)
    while not stop.wait(0.5):
        pass
    del server


def health(base: str, timeout: float = 2.0) -> bool:
    """Whether ``<base>/health`` answers 200 (``base`` without ``/v1``)."""
    try:
        with urllib.request.urlopen(f"{base.rstrip('/')}/health", timeout=timeout) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


class LlamaServer:
    """:func:`serve` in a child process at ``port`` (default: a free one) on 127.0.0.1. ``start()`` waits for
    ``/health``; ``stop()`` ends the child by its handle (SIGTERM, then SIGKILL), ``kill()`` at once (a server
    that dies mid-batch). ``base_url`` is what ``TOOLKIT_LLM_BASE_URL`` takes."""

    def __init__(self, model: str = "qwen-0.5b", *, port: int | None = None, host: str = "127.0.0.1",
                 n_parallel: int = 4, n_threads: int | None = None, ctx_per_slot: int = 4096,
                 api_key_env: str | None = None, log: str | Path | None = None, nice: int = 0):
        self.model, self.host, self.port = model, host, port or free_port(host)
        self.n_parallel, self.n_threads, self.ctx_per_slot = n_parallel, n_threads, ctx_per_slot
        self.api_key_env, self.nice = api_key_env, nice
        self.log = Path(log) if log else None
        self.proc: subprocess.Popen | None = None

    @property
    def root(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.root}/v1"

    def command(self) -> list[str]:
        cmd = [sys.executable, "-m", "toolkit.llm.serve", "--model", self.model, "--host", self.host,
               "--port", str(self.port), "--parallel", str(self.n_parallel), "--ctx-per-slot", str(self.ctx_per_slot)]
        if self.n_threads:
            cmd += ["--threads", str(self.n_threads)]
        if self.api_key_env:
            cmd += ["--api-key-env", self.api_key_env]
        return cmd

    def start(self, timeout: float = 300.0) -> "LlamaServer":
        _models.gguf_path(self.model)            # join and check the weights here, with this process's error
        out = open(self.log, "ab") if self.log else subprocess.DEVNULL
        self.proc = subprocess.Popen(self.command(), stdout=out, stderr=subprocess.STDOUT if self.log else out,
                                     preexec_fn=(lambda: os.nice(self.nice)) if self.nice else None)
        t0 = time.time()
        while time.time() - t0 < timeout:
            if self.proc.poll() is not None:
                raise LLMError(f"the llama.cpp server ({' '.join(self.command())}) exited with code "
                               f"{self.proc.returncode} before it answered {self.root}/health"
                               + (f"; its log: {self.log}" if self.log else ""))
            if health(self.root):
                return self
            time.sleep(0.25)
        self.stop()
        raise LLMError(f"the llama.cpp server did not answer {self.root}/health within {timeout:.0f} s")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)

    def stop(self, grace: float = 20.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.kill()

    def __enter__(self) -> "LlamaServer":
        return self.start() if self.proc is None else self

    def __exit__(self, *exc) -> None:
        self.stop()

    def describe(self) -> dict:
        return {"server": "llama.cpp (xllamacpp)", "model": _models.canonical_id(self.model), "url": self.base_url,
                "slots": self.n_parallel}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m toolkit.llm.serve", description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="qwen-0.5b", help="registry alias or .gguf file (default qwen-0.5b)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--parallel", type=int, default=4, help="slots: requests decoded at once")
    ap.add_argument("--threads", type=int, default=None, help="CPU threads (default: the cores not busy)")
    ap.add_argument("--ctx-per-slot", type=int, default=4096)
    ap.add_argument("--api-key-env", default=None, help="name of the environment variable holding the key clients "
                    "must send (default: no key)")
    a = ap.parse_args(argv)
    try:
        serve(a.model, a.host, a.port, a.parallel, a.threads, a.ctx_per_slot, a.api_key_env)
    except LLMError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
