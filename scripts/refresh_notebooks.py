"""Execute notebooks in place with their default parameters (the smoke profile), so that the
committed notebooks carry the outputs that nbval compares (cells marked ``# NBVAL_CHECK_OUTPUT``).

    python scripts/refresh_notebooks.py [NOTEBOOK ...]
"""
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from toolkit.runner import prepare_kernel_env  # noqa: E402

prepare_kernel_env()

names = sys.argv[1:] or sorted(p.stem for p in (REPO / "notebooks").glob("[0-9]*.ipynb"))
for name in names:
    path = REPO / "notebooks" / f"{name.removesuffix('.ipynb')}.ipynb"
    nb = nbformat.read(path, as_version=4)
    t = time.time()
    NotebookClient(nb, kernel_name="python3", timeout=1800, resources={"metadata": {"path": str(path.parent)}}).execute()
    nbformat.write(nb, path)
    print(f"{path.relative_to(REPO)}: executed in {time.time() - t:.1f}s", flush=True)
