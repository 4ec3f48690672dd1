"""papermill's own ``-p field value`` reaches a notebook's configuration (toolkit.notebook.parameters):
folded into ``overrides`` and checked, or an error naming the valid parameters; never ignored."""
from __future__ import annotations

import nbformat
import pytest

from toolkit import notebook

INJECTED = '# Parameters\nprofile = "smoke"\ndense_model = "mpnet"\nk = 50\n'


def test_injected_cell_is_read_only_when_it_ran_just_before():
    assert notebook.injected_parameters(["", INJECTED, "overrides = parameters(...)"]) == \
        {"profile": "smoke", "dense_model": "mpnet", "k": 50}
    # a user re-running cells in JupyterLab: the previous cell is not papermill's
    assert notebook.injected_parameters(["", "x = 1", "overrides = parameters(...)"]) == {}
    assert notebook.injected_parameters(["overrides = parameters(...)"]) == {}


def test_fields_fold_into_overrides_and_cell_parameters_stay():
    cell = {"profile": "smoke", "overrides": {"k": 10}}
    out = notebook.fold_injected("01_baselines", cell, {"profile": "smoke", "dense_model": "mpnet"}, {"k": 10})
    assert out == {"k": 10, "dense_model": "mpnet"}


def test_notebook_without_overrides_rejects_an_unknown_name():
    with pytest.raises(ValueError, match=r"00_datasets has no parameter 'dense_model'; its parameters: profile, stopwords"):
        notebook.fold_injected("00_datasets", {"profile": "smoke", "stopwords": True},
                               {"profile": "smoke", "dense_model": "mpnet"}, None)


def test_overrides_must_be_a_dict():
    with pytest.raises(TypeError, match="'overrides' must be a dict"):
        notebook.fold_injected("01_baselines", {"overrides": "k=5"}, {}, "k=5")


def test_a_misspelt_field_is_an_error_naming_the_fields():
    from toolkit import baselines
    over = notebook.fold_injected("01_baselines", {"profile": "smoke", "overrides": {}},
                                  {"dense_modle": "mpnet"}, {})
    with pytest.raises(ValueError, match=r"01_baselines has no parameter 'dense_modle'; its parameters: .*dense_model"):
        baselines.config_for("smoke", **over)


def _tiny_notebook(path):
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell('profile = "smoke"\noverrides = {}')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(
        'from toolkit.notebook import parameters\n'
        'overrides = parameters(globals(), "01_baselines", ("profile", "overrides"))\n'
        'from toolkit import baselines\n'
        'cfg = baselines.config_for(profile, **overrides)\n'
        'print("dense_model", cfg.dense_model, "k", cfg.k)')]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


@pytest.mark.slow
def test_papermill_p_field_value_reaches_the_configuration(tmp_path):
    """End to end through papermill's API, as ``papermill nb.ipynb out.ipynb -p dense_model mpnet`` calls it."""
    import papermill as pm
    from toolkit.runner import prepare_kernel_env
    prepare_kernel_env()
    src, out = tmp_path / "nb.ipynb", tmp_path / "out.ipynb"
    _tiny_notebook(src)
    pm.execute_notebook(str(src), str(out), parameters={"profile": "smoke", "dense_model": "mpnet", "k": 50},
                        kernel_name="python3", progress_bar=False)
    text = "".join(o.get("text", "") for o in nbformat.read(out, as_version=4).cells[-1].outputs)
    assert "dense_model mpnet k 50" in text
    with pytest.raises(pm.PapermillExecutionError, match="no parameter 'dense_modle'"):
        pm.execute_notebook(str(src), str(tmp_path / "bad.ipynb"), parameters={"dense_modle": "mpnet"},
                            kernel_name="python3", progress_bar=False)
