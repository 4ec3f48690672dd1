"""A sentence-transformers bi-encoder run through ONNX Runtime on CPU (torch stays the reference).

The graph is the model's transformer followed by its pooling, exported once with
``torch.onnx.export`` (dynamic batch and sequence axes) into
``cache_dir()/models/onnx/<name>-<weights sha256[:16]>-<variant>.onnx``; normalisation runs in
numpy, so one graph serves ``normalize`` on and off. Tokenisation is the model's own
(``SentenceTransformer.preprocess``: same truncation at ``max_seq_length``, same padding), so
only the arithmetic changes. Pooling as in sentence-transformers (Reimers & Gurevych, 2019):

    mean:  e = sum_t m_t h_t / max(sum_t m_t, 1e-9)      cls:  e = h_0      (m: attention mask)

Variants (``variant=``):

- ``fp32``: the exported graph as it is. Same top-10 as torch (``scripts/bench_encoders.py``).
  The TorchScript exporter warns that transformers' mask code is traced as constants; padded batches
  of any size and length still agree with torch (tests/test_onnx_encoder.py, and the benchmark's
  1,230 queries over 1,236 documents).
- ``int8``: ``onnxruntime.quantization.quantize_dynamic`` of the MatMul weights, per channel,
  activations quantised on the fly. Faster, and lossy: it is adopted only where the benchmark
  shows >= 99 % top-10 agreement with torch.

    enc = OnnxEncoder.from_sentence_transformer(load_encoder("minilm"))
    vecs = enc.encode(texts, batch_size=32, normalize_embeddings=True)
"""
from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import numpy as np

from toolkit.paths import cache_dir
from toolkit.retrieval.models import weights_sha256

VARIANTS = ("fp32", "int8")
ONNX_OPSET = 17


def _modules(st_model):
    """(transformer module, pooling mode, has Normalize) of a SentenceTransformer, or a ValueError."""
    mods = list(st_model)
    names = [type(m).__name__ for m in mods]
    if not mods or names[0] != "Transformer" or len(mods) < 2 or names[1] != "Pooling":
        raise ValueError(f"ONNX export supports Transformer -> Pooling [-> Normalize] models; this one is {names}. "
                         "Use backend='torch' for it.")
    extra = [n for n in names[2:] if n != "Normalize"]
    if extra:
        raise ValueError(f"ONNX export: unsupported module(s) after pooling {extra}; use backend='torch'")
    cfg = mods[1].get_config_dict()
    mode = cfg.get("pooling_mode") or ("mean" if cfg.get("pooling_mode_mean_tokens") else
                                       "cls" if cfg.get("pooling_mode_cls_token") else None)
    if mode not in ("mean", "cls"):
        raise ValueError(f"ONNX export supports mean or cls pooling, this model pools with {cfg}; use backend='torch'")
    return mods[0], mode, "Normalize" in names


def _tokenize(transformer, texts):
    """The model's own tokenisation (``preprocess`` in sentence-transformers >= 6, ``tokenize`` before)."""
    fn = getattr(transformer, "preprocess", None) or transformer.tokenize
    return fn(list(texts))


def _input_names(transformer) -> list[str]:
    probe = _tokenize(transformer, ["probe"])
    return [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in probe]


def export(st_model, path: Path) -> Path:
    """Write the transformer + pooling graph of ``st_model`` to ``path`` (atomic rename)."""
    import torch

    transformer, mode, _ = _modules(st_model)
    names = _input_names(transformer)

    class Pooled(torch.nn.Module):
        def __init__(self, auto_model):
            super().__init__()
            self.auto_model = auto_model

        def forward(self, *inputs):
            kw = dict(zip(names, inputs))
            h = self.auto_model(**kw, return_dict=True).last_hidden_state
            if mode == "cls":
                return h[:, 0]
            m = kw["attention_mask"].unsqueeze(-1).to(h.dtype)
            return (h * m).sum(1) / m.sum(1).clamp(min=1e-9)

    module = Pooled(transformer.auto_model).eval().cpu()
    probe = _tokenize(transformer, ["an example input", "another, somewhat longer example input"])
    args = tuple(probe[n].cpu() for n in names)
    axes = {n: {0: "batch", 1: "sequence"} for n in names}
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        with torch.no_grad():
            torch.onnx.export(module, args, tmp, input_names=names, output_names=["embedding"],
                              dynamic_axes={**axes, "embedding": {0: "batch"}}, opset_version=ONNX_OPSET,
                              dynamo=False)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def quantize_int8(src: Path, dest: Path) -> Path:
    """Dynamic int8 quantisation of ``src``'s MatMul weights, per output channel."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".onnx", dir=dest.parent)
    os.close(fd)
    try:
        quantize_dynamic(str(src), tmp, per_channel=True, weight_type=QuantType.QInt8, op_types_to_quantize=["MatMul"])
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return dest


def graph_path(model_dir: str | Path, variant: str) -> Path:
    """Where the ``variant`` graph of the model in ``model_dir`` lives (keyed by its weights' content)."""
    if variant not in VARIANTS:
        raise ValueError(f"ONNX variant must be one of {VARIANTS}, got {variant!r}")
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(model_dir).name)[:60]
    return cache_dir() / "models" / "onnx" / f"{base}-{weights_sha256(model_dir)[:16]}-{variant}.onnx"


class OnnxEncoder:
    """``encode()`` as sentence-transformers' (the parts the toolkit uses), on ONNX Runtime."""

    def __init__(self, st_model, graph: Path, variant: str, threads: int | None = None):
        import onnxruntime as ort

        self.transformer, self.mode, self.normalizes = _modules(st_model)
        self.input_names = _input_names(self.transformer)
        self.max_seq_length = st_model.max_seq_length
        self.variant, self.graph = variant, Path(graph)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads or _default_threads()
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(str(self.graph), opts, providers=["CPUExecutionProvider"])

    @classmethod
    def from_sentence_transformer(cls, st_model, model_dir: str | Path, variant: str = "fp32",
                                  threads: int | None = None) -> "OnnxEncoder":
        """Export (once, cached by the weights' content) and load the ``variant`` graph of the
        model loaded from ``model_dir``."""
        model_dir = Path(model_dir)
        path = graph_path(model_dir, variant)
        if not path.is_file():
            fp32 = graph_path(model_dir, "fp32")
            if not fp32.is_file():
                export(st_model, fp32)
            if variant == "int8":
                quantize_int8(fp32, path)
        return cls(st_model, path, variant, threads)

    def get_embedding_dimension(self) -> int:
        return int(self.session.get_outputs()[0].shape[-1] or self.transformer.get_word_embedding_dimension())

    def encode(self, texts, batch_size: int = 32, normalize_embeddings: bool = False, convert_to_numpy: bool = True,
               show_progress_bar: bool = False, **_ignored) -> np.ndarray:
        texts = [texts] if isinstance(texts, str) else list(texts)
        # longest first, as sentence-transformers does, so a batch pads to similar lengths
        order = np.argsort([-len(t) for t in texts], kind="stable")
        out = []
        for s in range(0, len(texts), batch_size):
            feats = _tokenize(self.transformer, [texts[i] for i in order[s:s + batch_size]])
            out.append(self._run({n: feats[n].numpy().astype(np.int64) for n in self.input_names}))
        vecs = np.zeros((len(texts), self.get_embedding_dimension()), np.float32)
        if out:
            vecs[order] = np.concatenate(out)
        if normalize_embeddings or self.normalizes:
            # torch.nn.functional.normalize: x / max(||x||, 1e-12)
            vecs = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
        return vecs

    def _run(self, feed: dict) -> np.ndarray:
        """One batch through the graph -> (batch, dim) float32 (another runtime overrides this alone)."""
        return self.session.run(["embedding"], feed)[0].astype(np.float32, copy=False)

    def describe(self) -> dict:
        return {"backend": f"onnx-{self.variant}", "graph": self.graph.name,
                "threads": self.session.get_session_options().intra_op_num_threads}


def _default_threads() -> int:
    import torch
    return torch.get_num_threads()

