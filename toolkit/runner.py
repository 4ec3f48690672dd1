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


from .config import CONFIGS  # noqa: E402,F401  (the notebooks' configuration modules)


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


# environment variables naming files or directories: the kernel runs in notebooks/, so a relative value given to
# the runner (TOOLKIT_RESULTS=relres) is made absolute from the directory the runner was started in
PATH_VARIABLES = ("TOOLKIT_RESULTS", "TOOLKIT_FIGURES", "TOOLKIT_DATA", "TOOLKIT_CACHE", "TOOLKIT_LLM_CACHE",
                  "TOOLKIT_EMBEDDING_LOG", "TOOLKIT_COMMITTED_EMBEDDINGS", "TOOLKIT_FEEDBACK_TRACES")


def prepare_kernel_env() -> None:
    """Set what a notebook kernel started from this process inherits: this clone's ``toolkit`` first on
    ``PYTHONPATH``, the ``PYTHONWARNINGS`` filters and the progress-bar switches above (existing
    entries kept), and the path variables of :data:`PATH_VARIABLES` made absolute (from this process's
    working directory: the kernel's is ``notebooks/``)."""
    def merged(var, sep, first):
        rest = [p for p in os.environ.get(var, "").split(sep) if p and p not in first]
        return sep.join([*first, *rest])
    os.environ["PYTHONPATH"] = merged("PYTHONPATH", os.pathsep, [str(REPO)])
    os.environ["PYTHONWARNINGS"] = merged("PYTHONWARNINGS", ",", list(KERNEL_WARNING_FILTERS))
    for name, value in KERNEL_QUIET.items():
        os.environ.setdefault(name, value)
    for name in PATH_VARIABLES:
        value = os.environ.get(name)
        if value:
            os.environ[name] = str(Path(value).expanduser().absolute())


def local_kernel_manager():
    """The kernel manager papermill starts kernels with: jupyter_client's, over IPC (Unix sockets) instead of TCP
    on localhost, so the kernel has no open port and no reason to warn "Kernel is running over TCP without
    encryption" at every run. The sockets live in a private directory made for each kernel (jupyter_client's
    default names them ``kernel-ipc-N`` in the working directory, ``notebooks/``, where two runs started together
    pick the same N and one kernel never answers); the directory is removed when the kernel shuts down."""
    import shutil
    import tempfile

    from jupyter_client import AsyncKernelManager
    from traitlets import default

    class IPCKernelManager(AsyncKernelManager):
        ipc_dir: str | None = None

        @default("transport")
        def _default_transport(self):
            return "ipc"

        def _ip_default(self) -> str:
            if self.transport != "ipc":
                return super()._ip_default()
            self.ipc_dir = tempfile.mkdtemp(prefix="toolkit-kernel-")
            return os.path.join(self.ipc_dir, "kernel-ipc")

        async def _async_cleanup_resources(self, restart: bool = False) -> None:
            await super()._async_cleanup_resources(restart=restart)
            if not restart and self.ipc_dir:
                shutil.rmtree(self.ipc_dir, ignore_errors=True)

        cleanup_resources = _async_cleanup_resources

    return IPCKernelManager


# seconds a kernel may take to answer its first message: papermill's 60 s is too short on a loaded machine (two
# cores shared by several runs at nice 19); a kernel that never answers still fails, naming the timeout
KERNEL_START_TIMEOUT = 300


class RunInterrupted(Exception):
    """A run stopped by Ctrl-C (SIGINT): the runner's one-line report of it."""


def _scratch_figures(figures: Path, stem: str, profile: str) -> Path:
    """The directory a run's kernel writes figures into (``TOOLKIT_FIGURES``): moved over ``figures`` only when
    the run succeeds, as the executed notebook is, so a failed or interrupted run leaves the committed figures
    beside the results they were drawn from."""
    return figures / f".running-{stem}-{profile}-{os.getpid()}"


def _swap_figures(scratch: Path, figures: Path) -> list[Path]:
    """Move every file the run wrote under ``scratch`` to the same place under ``figures``; remove ``scratch``."""
    import shutil
    moved = []
    for f in sorted(scratch.rglob("*")):
        if f.is_file():
            dest = figures / f.relative_to(scratch)
            dest.parent.mkdir(parents=True, exist_ok=True)
            f.replace(dest)
            moved.append(dest)
    shutil.rmtree(scratch, ignore_errors=True)
    return moved


def _disk_full(e: BaseException) -> bool:
    import errno
    return (isinstance(e, OSError) and e.errno == errno.ENOSPC) or "No space left on device" in str(e)


def _write_marker(marker: Path, text: str) -> None:
    """Write the failure marker; on a full disk remove the partial file and say which file could not be written."""
    try:
        marker.write_text(text)
    except OSError as e:
        marker.unlink(missing_ok=True)
        raise OSError(e.errno, f"could not write the failure marker {marker} ({e.strerror or e}); free space on that "
                               f"disk, then re-run") from None


def run_notebook(name: str, profile: str = "smoke", params: dict | None = None,
                 output: Path | None = None, log_output: bool = False) -> Path:
    """Execute notebook ``name`` into ``output`` (default ``results/<notebook>/<profile>.ipynb``). The executed copy
    and the figures are written to scratch places and replace the stored ones only when the whole run succeeds;
    a failure or Ctrl-C leaves them as they were, writes ``<profile>.failed`` (naming the failed executed copy when
    one exists) and removes a half-written ``<profile>.tmp`` results file."""
    import shutil

    import papermill as pm

    from .paths import figures_dir
    check_profile(profile)
    path = notebook_path(name)
    params = fold_overrides(path, dict(params or {}), profile)
    check_parameters(path, params)
    if profile == "paper":      # what the paper profile needs and this machine lacks fails here, before any cell runs
        from .paper import preflight
        preflight(path.stem, params.get("overrides"))
    out = output or results_dir() / path.stem / f"{profile}.ipynb"
    prepare_kernel_env()
    out = out.absolute()
    out.parent.mkdir(parents=True, exist_ok=True)
    marker = out.with_suffix(".failed")
    # executed into a scratch copy that replaces the stored notebook only when the run succeeds: a failed run
    # never overwrites a committed executed notebook
    running = out.with_name(f"{out.stem}.running.ipynb")
    failed_copy = out.with_name(f"{out.stem}.failed.ipynb")
    failed_copy.unlink(missing_ok=True)          # an earlier failure's copy is not this run's
    figures = figures_dir().absolute()
    scratch = _scratch_figures(figures, path.stem, profile)
    shutil.rmtree(scratch, ignore_errors=True)
    previous = os.environ.get("TOOLKIT_FIGURES")
    os.environ["TOOLKIT_FIGURES"] = str(scratch)
    try:
        pm.execute_notebook(str(path), str(running), parameters={"profile": profile, **params}, kernel_name="python3",
                            cwd=str(NOTEBOOKS), progress_bar=False, log_output=log_output,
                            request_save_on_cell_execute=False, kernel_manager_class=local_kernel_manager(),
                            start_timeout=KERNEL_START_TIMEOUT)
    except BaseException as e:
        # the failed copy shows the failure; the JSON, notebook and figures beside it are the previous good run:
        # mark them so that whoever reads them (compare, check) says so
        shutil.rmtree(scratch, ignore_errors=True)
        (results_dir().absolute() / path.stem / f"{profile}.tmp").unlink(missing_ok=True)
        if running.is_file():
            running.replace(failed_copy)
        interrupted = isinstance(e, KeyboardInterrupt)
        msg = str(e).strip().splitlines()
        what = "interrupted (Ctrl-C)" if interrupted else f"{type(e).__name__}: {msg[-1] if msg else ''}"
        copy = (f"executed copy: {failed_copy.name}" if failed_copy.is_file()
                else "no executed copy: the kernel stopped before the notebook was saved")
        _write_marker(marker, f"{time.strftime('%Y-%m-%d %H:%M:%S')} {what} ({copy})\n")
        if interrupted:
            raise RunInterrupted(f"{path.stem} ({profile}) interrupted; the stored results, notebook and figures are "
                                 f"the previous run's, marked by {relative_to_cwd(marker)}") from None
        if _disk_full(e):
            raise OSError(28, f"{path.stem} ({profile}): the disk is full ({msg[-1] if msg else e}); the run writes "
                              f"{relative_to_cwd(out.parent)} and {relative_to_cwd(figures)}: free space there, "
                              f"then re-run") from None
        raise
    finally:
        if previous is None:
            os.environ.pop("TOOLKIT_FIGURES", None)
        else:
            os.environ["TOOLKIT_FIGURES"] = previous
    if running.is_file():
        _as_document(running, path, out)
        running.replace(out)
    _swap_figures(scratch, figures)
    marker.unlink(missing_ok=True)
    return out


def relative_to_cwd(path: Path) -> str:
    """``path`` relative to the working directory when inside it (messages), else absolute."""
    try:
        return str(path.absolute().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _as_document(executed: Path, source: Path, final: Path) -> None:
    """Store an executed notebook as a document. papermill records the absolute input and output paths of a
    run: store them relative to the repository (an executed notebook is committed; this machine's paths are
    not the reader's). A kernel draws tqdm.auto's bars as ipywidgets, which ignore ``TQDM_DISABLE``: their
    views and the widget state (hundreds of KB of a bar's frames) are dropped; a bar is not a result.
    Re-running an unchanged notebook rewrites the same document, timing outputs aside: the wall-clock run
    metadata (papermill's start, end and duration, the kernel's execution timestamps) is dropped, and the cell
    papermill injects gets a fixed id instead of a random one (every other cell keeps the source notebook's)."""
    import nbformat
    nb = nbformat.read(executed, as_version=4)
    from .provenance import relative
    meta = nb.metadata.get("papermill", {})
    meta.update(input_path=relative(source) or source.name, output_path=relative(final) or final.name)
    for key in ("start_time", "end_time", "duration"):
        meta.pop(key, None)
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        pm_meta = cell.metadata.get("papermill")
        if isinstance(pm_meta, dict):
            for key in ("start_time", "end_time", "duration"):
                pm_meta.pop(key, None)
        if "injected-parameters" in cell.metadata.get("tags", []):
            cell["id"] = "injected-parameters"
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
            print(f"ok in {time.time() - t:.1f}s -> {relative_to_cwd(out)}", file=stream, flush=True)
        except RunInterrupted as e:
            print(f"INTERRUPTED after {time.time() - t:.1f}s", file=stream, flush=True)
            raise
        except Exception as e:  # report and go on with the next notebook
            failed += 1
            msg = str(e).strip().splitlines()
            print(f"FAILED after {time.time() - t:.1f}s: {type(e).__name__}: {msg[-1] if msg else ''}",
                  file=stream, flush=True)
            if isinstance(e, (ValueError, TypeError, FileNotFoundError)) and "parameter" in str(e):
                raise
    return failed
