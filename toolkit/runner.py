"""Execute notebooks with papermill: ``python -m toolkit run NOTEBOOK|all --profile smoke``.

Parameters are checked against the notebook's ``parameters`` cell before anything runs: an unknown
name, or a value whose type differs from the default's, is an error naming the parameter. The
executed copy goes to ``results/<notebook>/<profile>.ipynb``; the notebook itself writes
``results/<notebook>/<profile>.json`` and ``figures/<notebook>/``.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from .config import check_value
from .paths import NOTEBOOKS, REPO, results_dir
from .results import check_profile


def list_notebooks() -> list[str]:
    return sorted(p.stem for p in NOTEBOOKS.glob("[0-9]*.ipynb"))


def notebook_path(name: str) -> Path:
    stem = name.removesuffix(".ipynb")
    if not stem or "/" in stem or "\\" in stem or stem.startswith("."):
        raise FileNotFoundError(f"{name!r} is not a notebook name; notebooks: {', '.join(list_notebooks())}")
    path = NOTEBOOKS / f"{stem}.ipynb"
    if not path.is_file():
        # allow a prefix such as "01"
        hits = [n for n in list_notebooks() if n.startswith(stem)]
        if len(hits) == 1:
            return NOTEBOOKS / f"{hits[0]}.ipynb"
        if hits:
            raise FileNotFoundError(f"{name!r} matches several notebooks: {', '.join(hits)}; give more of the name")
        raise FileNotFoundError(f"no notebook {name!r} in {NOTEBOOKS}; notebooks: {', '.join(list_notebooks())}")
    return path


def notebook_parameters(path: Path) -> dict[str, object]:
    """Defaults of the notebook's ``parameters`` cell (evaluated as Python literals)."""
    import nbformat

    from .notebook import assignments
    nb = nbformat.read(path, as_version=4)
    cells = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(cells) != 1:
        raise ValueError(f"{path} must have exactly one cell tagged 'parameters' (has {len(cells)})")
    return assignments(cells[0].source)


# notebooks whose parameters cell is ``profile`` + ``overrides``: their configuration object checks
# the overrides before anything runs
CONFIGS = {"01_baselines": "toolkit.baselines", "10_toolrerank": "toolkit.toolrerank.config", "20_reinvoke": "toolkit.reinvoke.config", "30_feedback": "toolkit.feedback.config",
           "40_querygen": "toolkit.querygen.config", "50_headtohead": "toolkit.methods.benchmark"}


def fold_overrides(path: Path, params: dict, profile: str = "smoke") -> dict:
    """``-p name=value`` for a notebook kept by a configuration object: names that are not parameters
    of its cell go into its ``overrides`` dict, and the whole override set is checked by the
    notebook's ``config_for`` (unknown names and wrong types fail here, before any cell runs)."""
    defaults = notebook_parameters(path)
    if "overrides" not in defaults:
        return params
    out = {k: v for k, v in params.items() if k in defaults or k == "profile"}
    given = params.get("overrides") or {}
    if not isinstance(given, dict):
        raise TypeError(f"{path.name}: parameter 'overrides' must be a dict of configuration fields, e.g. "
                        f"-p 'overrides={{\"k\": 50}}' (or -p k=50), got {type(given).__name__} {given!r}")
    over = {**defaults["overrides"], **dict(given),
            **{k: v for k, v in params.items() if k not in out}}
    if path.stem in CONFIGS:
        import importlib
        importlib.import_module(CONFIGS[path.stem]).config_for(profile, **over)
    if over:
        out["overrides"] = over
    return out


def check_parameters(path: Path, params: dict) -> None:
    defaults = notebook_parameters(path)
    for name, value in params.items():
        if name == "profile":
            raise ValueError(f"{path.name}: 'profile' is not an ordinary parameter (it names the results file); "
                             f"use --profile {value} instead of -p profile={value}")
        if name not in defaults:
            raise ValueError(f"{path.name} has no parameter {name!r}; its parameters: {', '.join(defaults)}")
        check_value(f"{path.name}: parameter {name!r}", value, defaults[name])


def parse_param(text: str) -> tuple[str, object]:
    """``name=value`` from the command line; value parsed as a Python literal when it is one."""
    import ast
    if "=" not in text:
        raise ValueError(f"parameter {text!r} must look like name=value")
    name, raw = text.split("=", 1)
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        value = raw
    return name.strip(), value


# tqdm.auto warns (with the venv's absolute path) in a kernel without ipywidgets; ipywidgets is pinned,
# the filter stays for an environment built without it.
KERNEL_WARNING_FILTERS = ("ignore:IProgress not found",)
# An executed notebook is a document, not a terminal: no progress bars in it, by tqdm's and huggingface's
# own switches (our bars and sentence-transformers' are tqdm; transformers' "Loading weights" follows
# huggingface_hub's). A kernel in JupyterLab keeps its bars, as ipywidgets.
KERNEL_QUIET = {"TQDM_DISABLE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1", "TRANSFORMERS_VERBOSITY": "error"}


def prepare_kernel_env() -> None:
    """Set what a notebook kernel started from this process inherits: this clone's ``toolkit`` first on
    ``PYTHONPATH``, the ``PYTHONWARNINGS`` filters and the progress-bar switches above (existing
    entries kept)."""
    def merged(var, sep, first):
        rest = [p for p in os.environ.get(var, "").split(sep) if p and p not in first]
        return sep.join([*first, *rest])
    os.environ["PYTHONPATH"] = merged("PYTHONPATH", os.pathsep, [str(REPO)])
    os.environ["PYTHONWARNINGS"] = merged("PYTHONWARNINGS", ",", list(KERNEL_WARNING_FILTERS))
    for name, value in KERNEL_QUIET.items():
        os.environ.setdefault(name, value)


def local_kernel_manager():
    """The kernel manager papermill starts kernels with: jupyter_client's, over IPC (Unix sockets in the
    runtime directory) instead of TCP on localhost, so the kernel has no open port and no reason to warn
    "Kernel is running over TCP without encryption" at every run."""
    from jupyter_client import AsyncKernelManager
    from traitlets import default

    class IPCKernelManager(AsyncKernelManager):
        @default("transport")
        def _default_transport(self):
            return "ipc"

    return IPCKernelManager


def run_notebook(name: str, profile: str = "smoke", params: dict | None = None,
                 output: Path | None = None, log_output: bool = False) -> Path:
    import papermill as pm
    check_profile(profile)
    path = notebook_path(name)
    params = fold_overrides(path, dict(params or {}), profile)
    check_parameters(path, params)
    if profile == "paper":      # what the paper profile needs and this machine lacks fails here, before any cell runs
        from .paper import preflight
        preflight(path.stem, params.get("overrides"))
    out = output or results_dir() / path.stem / f"{profile}.ipynb"
    out.parent.mkdir(parents=True, exist_ok=True)
    prepare_kernel_env()
    marker = out.with_suffix(".failed")
    # executed into a scratch copy that replaces the stored notebook only when the run succeeds: a failed run
    # never overwrites a committed executed notebook
    running = out.with_name(f"{out.stem}.running.ipynb")
    failed_copy = out.with_name(f"{out.stem}.failed.ipynb")
    try:
        pm.execute_notebook(str(path), str(running), parameters={"profile": profile, **params}, kernel_name="python3",
                            cwd=str(NOTEBOOKS), progress_bar=False, log_output=log_output,
                            request_save_on_cell_execute=False, kernel_manager_class=local_kernel_manager(),
                            start_timeout=KERNEL_START_TIMEOUT)
    except Exception as e:
        # the failed copy shows the failure; the JSON and notebook beside it are the previous good run: mark
        # them so that whoever reads them (compare, check) says so
        if running.is_file():
            running.replace(failed_copy)
        msg = str(e).strip().splitlines()
        marker.write_text(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {type(e).__name__}: {msg[-1] if msg else ''} "
                          f"(executed copy: {failed_copy.name})\n")
        raise
    if running.is_file():
        _as_document(running, path, out)
        running.replace(out)
    marker.unlink(missing_ok=True)
    failed_copy.unlink(missing_ok=True)
    return out


# papermill's default (60 s) failed paper-dry runs with "Kernel didn't respond in 60 seconds" under a load of 17 on
# 2 cores (2026-12-08); a kernel that starts at all starts well within this
KERNEL_START_TIMEOUT = 300

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _as_document(executed: Path, source: Path, final: Path) -> None:
    """Store an executed notebook as a document. papermill records the absolute input and output paths of a
    run: store them relative to the repository (an executed notebook is committed; this machine's paths are
    not the reader's). A kernel draws tqdm.auto's bars as ipywidgets, which ignore ``TQDM_DISABLE``: their
    views and the widget state (hundreds of KB of a bar's frames) are dropped; a bar is not a result."""
    import nbformat
    nb = nbformat.read(executed, as_version=4)
    from .provenance import relative
    meta = nb.metadata.get("papermill", {})
    meta.update(input_path=relative(source) or source.name, output_path=relative(final) or final.name)
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.outputs if WIDGET_VIEW not in o.get("data", {})]
    nbformat.write(nb, executed)


def run(names: list[str], profile: str, params: dict | None = None, stream=sys.stdout) -> int:
    """Run notebooks in order, one progress line each; returns the number that failed."""
    if names == ["all"]:
        names = list_notebooks()
    failed = 0
    for i, name in enumerate(names, 1):
        t = time.time()
        print(f"[{i}/{len(names)}] {name} ({profile}) ...", end=" ", flush=True, file=stream)
        try:
            out = run_notebook(name, profile, params)
            print(f"ok in {time.time() - t:.1f}s -> {out}", file=stream, flush=True)
        except Exception as e:  # report and go on with the next notebook
            failed += 1
            msg = str(e).strip().splitlines()
            print(f"FAILED after {time.time() - t:.1f}s: {type(e).__name__}: {msg[-1] if msg else ''}",
                  file=stream, flush=True)
            if isinstance(e, (ValueError, TypeError, FileNotFoundError)) and "parameter" in str(e):
                raise
    return failed
