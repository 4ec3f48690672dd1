"""toolkit.devices: the device every trainer and encoder takes (cuda when torch sees a GPU, else cpu, overridable),
mixed precision only on a GPU, and the device recorded in every results file."""
from __future__ import annotations

import json

import pytest
import torch

from toolkit import devices


def test_cuda_when_torch_sees_a_gpu_else_cpu(monkeypatch):
    monkeypatch.delenv(devices.ENV, raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert devices.device() == "cuda"
    from toolkit.retrieval.models import default_device
    assert default_device() == "cuda"            # the encoders' default is the same choice
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert devices.device() == "cpu" and default_device() == "cpu"
    assert devices.mixed_precision("cpu") is None


def test_override_by_argument_or_environment(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setenv(devices.ENV, "cpu")
    assert devices.device() == "cpu"             # the environment overrides the GPU
    assert devices.device("cuda:1") == "cuda:1"  # an argument overrides the environment
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setenv(devices.ENV, "cuda")
    with pytest.raises(ValueError, match="sees no GPU.*CUDA build of torch"):
        devices.device()
    monkeypatch.setenv(devices.ENV, "gpu0")
    with pytest.raises(ValueError, match="TOOLKIT_DEVICE must be cpu, cuda"):
        devices.device()


def test_mixed_precision_on_a_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    assert devices.mixed_precision("cuda") is torch.bfloat16
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    assert devices.mixed_precision("cuda") is torch.float16


def test_trainers_load_on_the_chosen_device(monkeypatch):
    """The base encoder of the DPR / feedback trainers follows the choice (here cpu by the environment)."""
    monkeypatch.setenv(devices.ENV, "cpu")
    from toolkit.retrieval.dual_encoder import load_base_encoder
    m = load_base_encoder("minilm", 32)
    assert m.device.type == "cpu"


def test_results_record_the_device(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLKIT_RESULTS", str(tmp_path))
    from toolkit.results import Recorder
    rec = Recorder("99_test", profile="smoke")
    rec.add(paper="p", table="1", dataset="d", method="m", metric="x", value=1.0)
    saved = json.loads(rec.save().read_text())
    assert saved["device"]["device"] == devices.device()
    assert saved["device"]["torch"] == torch.__version__ and "cuda" in saved["device"]
    assert "stand_ins" not in saved
    monkeypatch.setenv("TOOLKIT_STAND_INS", json.dumps({"base": {"paper": "bert-base-uncased", "stand_in": "minilm"}}))
    assert json.loads(rec.save().read_text())["stand_ins"]["base"]["stand_in"] == "minilm"
