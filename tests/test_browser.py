"""A notebook as a researcher meets it: JupyterLab (pinned in requirements.txt) started headless on a copy
of the notebook, opened in Debian's chromium driven by playwright (no browser download), every cell run
on the smoke profile through Lab's own "Run All Cells" command; the page must show no error and no stderr
output. Run with ``make browser-test`` (needs ``apt-get install chromium``); ``TOOLKIT_BROWSER_TEST=1``
selects it, and then a missing chromium is a failure, not a skip.

It writes ``results/browser/<nb>.png`` (a screenshot of the run notebook's end) and prints what it saw.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from toolkit.paths import NOTEBOOKS, REPO

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(os.environ.get("TOOLKIT_BROWSER_TEST") != "1",
                                 reason="the browser test runs with TOOLKIT_BROWSER_TEST=1 (make browser-test)")]
CHROMIUM = os.environ.get("TOOLKIT_CHROMIUM", "/usr/bin/chromium")
# what the machine's closed network needs (no background connections), as root in a container (no sandbox)
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def lab(tmp_path):
    """JupyterLab serving a scratch folder, its kernels writing results and figures to scratch too."""
    assert Path(CHROMIUM).is_file(), f"no chromium at {CHROMIUM}: apt-get install chromium (or set TOOLKIT_CHROMIUM)"
    root = tmp_path / "lab"
    root.mkdir()
    port, token = _free_port(), secrets.token_hex(16)
    # Lab's own settings for this server: every cell rendered (Lab 4 leaves cells outside the viewport
    # unrendered by default, so the page would not show their outputs), no news prompt
    settings = tmp_path / "lab-settings" / "@jupyterlab"
    for ext, value in [("notebook-extension/tracker", {"windowingMode": "none"}),
                       ("apputils-extension/notification", {"fetchNews": "false"})]:
        (settings / ext).parent.mkdir(parents=True, exist_ok=True)
        (settings / f"{ext}.jupyterlab-settings").write_text(json.dumps(value))
    env = {**os.environ, "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "lab-settings"), "TOOLKIT_RESULTS": str(tmp_path / "results"), "TOOLKIT_FIGURES": str(tmp_path / "figures"),
           "JUPYTER_CONFIG_DIR": str(tmp_path / "jupyter-config"), "PYTHONPATH": str(REPO)}
    env.pop("TOOLKIT_LLM_BACKEND", None)
    log = open(tmp_path / "lab.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
         f"--ServerApp.root_dir={root}", f"--IdentityProvider.token={token}", "--LabApp.expose_app_in_browser=True",
         "--MappingKernelManager.default_kernel_name=toolret-repro", "--KernelManager.transport=ipc",
         "--ServerApp.open_browser=False", *(["--allow-root"] if os.geteuid() == 0 else []), "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    for _ in range(120):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError:
            if proc.poll() is not None:
                raise AssertionError(f"JupyterLab exited: {(tmp_path / 'lab.log').read_text()[-2000:]}")
            time.sleep(0.5)
    yield root, url, token, tmp_path / "lab.log"
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


# what the page shows: the notebook model behind the open panel (execution counts, output types) and the
# rendered outputs in the DOM (stderr and errors render with the stderr mime type)
PAGE_STATE = """() => {
  const model = window.jupyterapp.shell.currentWidget.content.model;
  const cells = [];
  for (let i = 0; i < model.cells.length; i++) {
    const c = model.cells.get(i);
    cells.push({type: c.type, count: c.type === 'code' ? c.executionCount : null,
                outputs: c.type === 'code' ? c.outputs.toJSON().map(o => o.output_type + ':' + (o.name || '')) : []});
  }
  const outs = [...document.querySelectorAll('.jp-Notebook .jp-OutputArea-output')];
  return {cells,
          stderr: outs.filter(o => o.getAttribute('data-mime-type') === 'application/vnd.jupyter.stderr').map(o => o.innerText.slice(0, 300)),
          outputs: outs.length, images: document.querySelectorAll('.jp-Notebook .jp-OutputArea-output img').length,
          tables: document.querySelectorAll('.jp-Notebook .jp-OutputArea-output table').length,
          kernelName: ((document.querySelector('.jp-KernelName') || {}).innerText || '').trim()};
}"""


def _run_all(page, url: str, token: str, name: str) -> dict:
    """Open the notebook, wait for its kernel, run every cell with Lab's own command, return the page state."""
    page.goto(f"{url}/lab/tree/{name}.ipynb?token={token}")
    page.wait_for_selector(".jp-Notebook .jp-CodeCell")
    # the kernel named in the notebook (toolret-repro) starts without a kernel-choice dialog and is ready
    page.wait_for_function("""() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
        const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
        return k && k.name === 'toolret-repro' && k.connectionStatus === 'connected' && k.status === 'idle'; }""")
    # issued, not awaited: the command's promise settles only when the last cell has run
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    # done when every code cell has an execution count and the kernel is idle again
    page.wait_for_function("""() => {
        const m = window.jupyterapp.shell.currentWidget.content.model; let ok = m.cells.length > 0;
        for (let i = 0; i < m.cells.length; i++) { const c = m.cells.get(i); if (c.type === 'code' && !c.executionCount) ok = false; }
        return ok && document.querySelector('.jp-Notebook-ExecutionIndicator').getAttribute('data-status') === 'idle';
    }""", polling=1000)
    page.wait_for_timeout(1500)     # outputs of the last cell rendered
    return page.evaluate(PAGE_STATE)


@pytest.mark.parametrize("name", ["00_datasets", "01_baselines"])
def test_notebook_runs_clean_in_jupyterlab(lab, name):
    from playwright.sync_api import sync_playwright
    root, url, token, log = lab
    shutil.copy(NOTEBOOKS / f"{name}.ipynb", root / f"{name}.ipynb")
    shots = REPO / "results" / "browser"
    shots.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.set_default_timeout(int(os.environ.get("TOOLKIT_BROWSER_TIMEOUT", "300")) * 1000)
        try:
            state = _run_all(page, url, token, name)
        except Exception as e:
            page.screenshot(path=str(log.parent / "failed.png"))
            raise AssertionError(f"{name} did not run to the end in JupyterLab ({type(e).__name__}); screenshot "
                                 f"{log.parent / 'failed.png'}, server log {log}") from e
        page.screenshot(path=str(shots / f"{name}.png"))
        browser.close()
    seconds = time.time() - t0
    code = [c for c in state["cells"] if c["type"] == "code"]
    kinds = [k for c in code for k in c["outputs"]]
    summary = {"notebook": name, "cells": len(state["cells"]), "code_cells": len(code),
               "code_cells_run": sum(bool(c["count"]) for c in code), "outputs": len(kinds),
               "stderr_outputs": kinds.count("stream:stderr"), "error_outputs": kinds.count("error:"),
               "rendered_outputs": state["outputs"], "rendered_stderr": len(state["stderr"]),
               "tables": state["tables"], "images": state["images"], "kernel": state["kernelName"],
               "seconds": round(seconds, 1)}
    print(json.dumps(summary))
    (REPO / "results" / "browser" / f"{name}.json").write_text(json.dumps(summary, indent=1) + "\n")
    assert state["kernelName"] == "toolret-repro", state["kernelName"]
    assert summary["code_cells_run"] == summary["code_cells"] > 0
    assert summary["error_outputs"] == 0 and summary["stderr_outputs"] == 0, summary
    assert not state["stderr"], f"stderr in the page: {state['stderr'][:3]}"
    assert summary["rendered_outputs"] > 0 and summary["tables"] > 0
    server_log = log.read_text()
    assert "without encryption" not in server_log, "the kernel ran over TCP (KernelManager.transport=ipc not honoured)"
    assert not re.search(r"Traceback", server_log), server_log[-3000:]
