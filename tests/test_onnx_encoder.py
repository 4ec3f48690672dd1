"""ONNX Runtime encoder (toolkit.retrieval.onnx_encoder): same vectors as torch, graphs keyed by weights."""
from __future__ import annotations

import numpy as np
import pytest

from toolkit.retrieval import load_encoder, resolve_model
from toolkit.retrieval.onnx_encoder import OnnxEncoder, graph_path

TEXTS = ["get the weather forecast for Paris", "translate a sentence into German",
         "Weather API: current conditions and a five-day forecast for a city", "convert currencies at today's rate",
         "a much longer text " * 40]


def test_onnx_fp32_matches_torch_and_is_exported_once(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLKIT_CACHE", str(tmp_path))
    st, model_dir = load_encoder("minilm", "cpu"), resolve_model("minilm")[0]
    path = graph_path(model_dir, "fp32")
    assert path.parent == tmp_path / "models" / "onnx" and not path.exists()
    enc = OnnxEncoder.from_sentence_transformer(st, model_dir, "fp32", threads=1)
    assert path.is_file() and enc.describe()["backend"] == "onnx-fp32"
    ref = st.encode(TEXTS, batch_size=2, normalize_embeddings=True)
    got = enc.encode(TEXTS, batch_size=2, normalize_embeddings=True)
    assert got.shape == ref.shape == (len(TEXTS), 384) and np.abs(got - ref).max() < 1e-5
    assert (np.argsort(-(got[:1] @ got.T)) == np.argsort(-(ref[:1] @ ref.T))).all()  # same ranking
    raw = enc.encode(TEXTS[:2], normalize_embeddings=False)
    assert np.allclose(raw / np.linalg.norm(raw, axis=1, keepdims=True), got[:2], atol=1e-6)
    mtime = path.stat().st_mtime_ns
    OnnxEncoder.from_sentence_transformer(st, model_dir, "fp32")  # the exported graph is reused
    assert path.stat().st_mtime_ns == mtime


def test_onnx_rejects_what_it_cannot_export(tmp_path):
    with pytest.raises(ValueError, match="variant"):
        graph_path(resolve_model("minilm")[0], "fp8")

    class NotAPipeline(list):
        max_seq_length = 8

    with pytest.raises(ValueError, match="Transformer -> Pooling"):
        OnnxEncoder(NotAPipeline([object()]), tmp_path / "x.onnx", "fp32")
