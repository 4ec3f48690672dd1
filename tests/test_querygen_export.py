"""The GGUF export of a fine-tuned generator: llama.cpp's next-token distribution must match
transformers' (a tiny random Qwen2 with the shipped 0.5B model's vocabulary, tokenizer and metadata)."""
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
torch = pytest.importorskip("torch")
xlc = pytest.importorskip("xllamacpp")
pytest.importorskip("gguf")


def _top5_llama(path: Path, prompt: str):
    cp = xlc.CommonParams()
    cp.model.path = str(path)
    cp.n_ctx = 128
    cp.cpuparams.n_threads = 1
    cp.warmup = False
    cp.verbosity = 0
    srv = xlc.Server(cp)
    try:
        r = srv.handle_completions({"prompt": prompt, "max_tokens": 1, "n_probs": 5, "temperature": 0,
                                    "top_k": 0, "top_p": 1.0, "min_p": 0})
    finally:
        del srv
    import math
    return [(t["id"], math.exp(t["logprob"])) for t in r["choices"][0]["logprobs"]["content"][0]["top_logprobs"]]


@pytest.mark.parametrize("quantize,init", [(False, 0.5), (True, 0.08)])
def test_export_matches_transformers_next_token_distribution(tmp_path, quantize, init):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from toolkit.llm.models import gguf_path
    from toolkit.querygen.export import export_gguf
    template = gguf_path("qwen-0.5b")
    torch.manual_seed(0)
    cfg = Qwen2Config(vocab_size=151936, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                      initializer_range=init, tie_word_embeddings=False, rope_theta=1_000_000.0)
    model = Qwen2ForCausalLM(cfg).eval()
    out = export_gguf(model, template, tmp_path / "tiny.gguf", quantize=quantize)
    # "The quick brown fox jumps" in Qwen2's tokenizer (llama.cpp tokenizes the same text itself)
    ids = torch.tensor([[785, 3974, 13876, 38835, 34208]])
    with torch.no_grad():
        p = torch.softmax(model(ids).logits[0, -1].float(), -1)
    top = torch.topk(p, 5)
    got = _top5_llama(out, "The quick brown fox jumps")
    assert [i for i, _ in got[:3]] == top.indices.tolist()[:3]
    if not quantize:   # f32 weights: the same distribution up to float error
        assert [q for _, q in got[:3]] == pytest.approx(top.values.tolist()[:3], abs=0.01)
