"""pytest's root configuration. nbval executes results/<nb>/smoke.ipynb in kernels started from this
process: they inherit what the runner gives the kernels papermill starts (toolkit on PYTHONPATH, no
progress bars, tqdm's path-printing warning filtered), so a re-execution matches its stored outputs."""
from toolkit.runner import prepare_kernel_env

prepare_kernel_env()
