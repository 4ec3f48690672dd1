"""A fine-tuned transformers Qwen2 model -> a GGUF file llama.cpp (xllamacpp) can sample from.

Drafts for alignment are thousands of generations; llama.cpp on the CPU samples a Q8_0 0.5B model
faster than transformers does. The exporter writes a new GGUF with every key/value of a
*template* GGUF (the shipped base model: architecture, tokenizer, chat template) except the
hyper-parameters, which come from the model's own config, and the model's weights: matrices as
Q8_0 (``gguf.quants``; K-quants cannot be written by the ``gguf`` package), norms and biases as F32.
Tensor names follow ``gguf``'s own HF -> GGUF map. ``tests/test_querygen_export.py`` checks
llama.cpp's next-token distribution of an export against transformers'.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

_HPARAMS = {  # GGUF key (after "<arch>.") -> HF config attribute
    "block_count": "num_hidden_layers", "context_length": "max_position_embeddings",
    "embedding_length": "hidden_size", "feed_forward_length": "intermediate_size",
    "attention.head_count": "num_attention_heads", "attention.head_count_kv": "num_key_value_heads",
    "rope.freq_base": "rope_theta", "attention.layer_norm_rms_epsilon": "rms_norm_eps",
}


def _rope_theta(config) -> float:
    theta = getattr(config, "rope_theta", None)
    if theta is None:
        theta = (getattr(config, "rope_parameters", None) or {}).get("rope_theta", 10000.0)
    return float(theta)


def export_gguf(model, template: Path, out: Path, quantize: bool = True, name: str | None = None) -> Path:
    """Write ``model`` (a transformers Qwen2ForCausalLM) to ``out`` as GGUF, metadata from ``template``."""
    import gguf
    from gguf import GGMLQuantizationType as Q, GGUFValueType as VT

    reader = gguf.GGUFReader(str(template))
    arch = str(reader.fields["general.architecture"].contents())
    if arch != "qwen2":
        raise ValueError(f"{template}: architecture {arch!r}; the exporter handles qwen2 only")
    cfg = model.config
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    w = gguf.GGUFWriter(str(tmp), arch)
    overrides = {f"{arch}.{k}": (_rope_theta(cfg) if attr == "rope_theta" else getattr(cfg, attr))
                 for k, attr in _HPARAMS.items()}
    overrides["general.file_type"] = int(gguf.LlamaFileType.MOSTLY_Q8_0 if quantize else gguf.LlamaFileType.ALL_F32)
    if name:
        overrides["general.name"] = name
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        vtype = field.types[0]
        value = overrides.get(key, field.contents())
        if vtype == VT.ARRAY:
            w.add_key_value(key, value, vtype, sub_type=field.types[-1])
        else:
            w.add_key_value(key, value, vtype)
    tmap = gguf.get_tensor_name_map(gguf.MODEL_ARCH.QWEN2, cfg.num_hidden_layers)
    state = model.state_dict()
    if "lm_head.weight" not in state:       # tied embeddings
        state["lm_head.weight"] = state["model.embed_tokens.weight"]
    for hf_name, tensor in state.items():
        gg_name = tmap.get_name(hf_name, try_suffixes=(".weight", ".bias"))
        if gg_name is None:
            if "rotary_emb" in hf_name:
                continue
            raise ValueError(f"no GGUF name for tensor {hf_name!r}")
        data = tensor.detach().float().cpu().numpy()
        if quantize and data.ndim == 2 and data.shape[-1] % 32 == 0:
            w.add_tensor(gg_name, gguf.quants.quantize(data, Q.Q8_0), raw_dtype=Q.Q8_0)
        else:
            w.add_tensor(gg_name, np.ascontiguousarray(data, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    tmp.replace(out)
    return out
