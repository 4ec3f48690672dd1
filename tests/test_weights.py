"""toolkit.weights: a trained model kept in float16 shards, restored to float32 (the kept mpnet of 30_feedback)."""
import json

import pytest


def _saved_model(path, tensors):
    from safetensors.torch import save_file
    path.mkdir(parents=True)
    save_file(tensors, str(path / "model.safetensors"), metadata={"format": "pt"})
    (path / "config.json").write_text('{"hidden_size": 8}')
    (path / "1_Pooling").mkdir()
    (path / "1_Pooling" / "config.json").write_text('{"pooling_mode_mean_tokens": true}')
    (path / "train_stats.json").write_text('{"steps": 5}')
    return path


def test_float16_shards_restore_to_the_rounded_float32_weights(tmp_path):
    import torch
    from safetensors.torch import load_file

    from toolkit import weights
    g = torch.Generator().manual_seed(0)
    tensors = {f"layer.{i}.weight": torch.randn(64, 64, generator=g) * 0.05 for i in range(6)}
    tensors["position_ids"] = torch.arange(16).reshape(1, 16)                  # an integer buffer stays as it is
    src = _saved_model(tmp_path / "trained", tensors)
    m = weights.store_float16(src, tmp_path / "kept", shard_bytes=3 * 64 * 64 * 2)
    kept = tmp_path / "kept"
    shards = sorted(kept.glob("model-*.safetensors"))
    assert m["shards"] == len(shards) == 3 and not (kept / "model.safetensors").exists()
    assert all(f.stat().st_size < 4 * 64 * 64 * 2 for f in shards)                # half of float32, under the cap
    assert 0 < m["max_abs_rounding_error"] and m["max_rel_rounding_error"] <= 2 ** -11
    assert json.loads((kept / "model.safetensors.index.json").read_text())["weight_map"]["layer.0.weight"]
    assert (kept / "1_Pooling" / "config.json").is_file() and (kept / "train_stats.json").is_file()

    out = weights.restore_float32(kept, tmp_path / "restored")
    back = load_file(str(out / "model.safetensors"))
    assert set(back) == set(tensors) and back["position_ids"].dtype == torch.int64
    for k, t in tensors.items():
        if t.is_floating_point():
            assert back[k].dtype == torch.float32
            assert torch.equal(back[k], t.half().float()), k                   # exactly the rounded weights
    assert any(not torch.equal(back[k], tensors[k]) for k in tensors)          # and rounding did change something
    assert (out / "1_Pooling" / "config.json").is_file() and not (out / weights.MANIFEST).exists()
    stamp = (out / "model.safetensors").stat().st_mtime_ns
    assert weights.restore_float32(kept, tmp_path / "restored") == out         # made once
    assert (out / "model.safetensors").stat().st_mtime_ns == stamp


def test_float16_storage_refuses_what_it_cannot_round(tmp_path):
    import torch

    from toolkit import weights
    big = _saved_model(tmp_path / "big", {"w": torch.tensor([1.0, 1e6])})
    with pytest.raises(ValueError, match="tensor w overflows float16"):
        weights.store_float16(big, tmp_path / "out1")
    half = _saved_model(tmp_path / "half", {"w": torch.ones(3, dtype=torch.float16)})
    with pytest.raises(ValueError, match="rounds float32 weights"):
        weights.store_float16(half, tmp_path / "out2")
    with pytest.raises(FileNotFoundError, match="no single model.safetensors"):
        weights.store_float16(tmp_path / "out3", tmp_path / "out4")


def test_a_model_kept_in_float16_is_used_in_float32_and_encodes_as_before(tmp_path, monkeypatch):
    """The whole path on a real encoder (MiniLM, from its package): a copy kept in float16 shards (as the mpnet
    models of earlier commits), then the stage's lookup restores float32 weights that a SentenceTransformer loads
    and that encode within rounding of the original."""
    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer

    from toolkit import weights
    from toolkit.feedback import stages
    from toolkit.retrieval.dual_encoder import load_base_encoder
    monkeypatch.setattr(stages, "KEPT_DIR", tmp_path / "kept")
    monkeypatch.setattr(stages, "models_dir", lambda: tmp_path / "cache")
    model = load_base_encoder("minilm", 64)
    trained = tmp_path / "trained" / "final"
    model.save(str(trained))
    (trained / "train_stats.json").write_text('{"steps": 1}')
    dest = tmp_path / "kept" / "m" / "final"
    weights.store_float16(trained, dest)
    assert sum(f.stat().st_size for f in dest.glob("model-*.safetensors")) < 0.55 * (trained / "model.safetensors").stat().st_size

    path, stats = stages._kept("m")
    assert path == tmp_path / "cache" / "m" / "kept-float32" and stats == {"steps": 1, "weights": "float16-rounded"}
    restored = SentenceTransformer(str(path), device="cpu")
    assert {p.dtype for p in restored.parameters()} == {torch.float32}
    texts = ["get the weather in Paris", "convert 10 USD to EUR", "search flights", "translate text to French"]
    a = model.encode(texts, normalize_embeddings=True)
    b = restored.encode(texts, normalize_embeddings=True)
    diff = np.abs(a @ a.T - b @ b.T).max()
    assert 0 < diff < 1e-3, diff
