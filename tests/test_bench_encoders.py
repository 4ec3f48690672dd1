"""scripts/bench_encoders.py (issue 86 item 3): its timers and its adoption rule, without a model."""
import importlib.util
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[1] / "scripts" / "bench_encoders.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_encoders", _PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class _Clock:
    """A fake ``time.perf_counter``: the stand-in encoder advances it."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class _Encoder:
    """A stand-in encoder: each encode call costs ``per_call(n texts, call index)`` seconds of the fake clock."""

    def __init__(self, clock=None, per_call=lambda n, i: 0.0):
        self.clock, self.per_call, self.calls = clock, per_call, []

    def encode(self, texts, batch_size=32, normalize_embeddings=False):
        if self.clock is not None:
            self.clock.now += self.per_call(len(texts), len(self.calls))
        self.calls.append(len(texts))


def test_the_script_loop_and_the_direct_call_encode_the_same_texts(bench):
    texts = [f"doc {i}" for i in range(70)]
    loop, direct = _Encoder(), _Encoder()
    bench.docs_per_second(loop, texts, repeats=2)
    bench.direct_docs_per_second(direct, texts, repeats=2)
    assert loop.calls == [32, 32, 6] * 2            # slices of 32, every text once per repeat
    assert direct.calls == [70] * 2                 # one call over the whole sample


def test_rates_are_texts_over_the_median_seconds(bench, monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(bench.time, "perf_counter", clock)
    # 2 calls per repeat; the repeats take 0.02, 0.50 (a stall) and 0.04 s: the median is 0.04 s
    enc = _Encoder(clock, lambda n, i: [0.01, 0.01, 0.25, 0.25, 0.02, 0.02][i])
    assert bench.docs_per_second(enc, ["t"] * 64, repeats=3) == pytest.approx(64 / 0.04)
    assert len(bench.CPU_PER_WALL) == 1 and bench.CPU_PER_WALL[0] >= 0     # process CPU s per wall s, kept
    enc = _Encoder(clock, lambda n, i: 0.001 * n)          # 1 ms per text in one call
    assert bench.direct_docs_per_second(enc, ["t"] * 64, repeats=3) == pytest.approx(1000)


def test_adoption_needs_one_and_a_half_times_torch_and_identical_top10(bench):
    assert bench.adoption({"torch": 100, "onnx-fp32": 160}, {"onnx-fp32": True}).startswith("adopt onnx-fp32")
    assert bench.adoption({"torch": 100, "onnx-fp32": 149}, {"onnx-fp32": True}).startswith("keep torch")
    # fast but lossy: not adopted, and the verdict says why
    verdict = bench.adoption({"torch": 100, "onnx-int8": 300}, {"onnx-int8": False})
    assert verdict.startswith("keep torch") and "not identical" in verdict
    # several qualify: the fastest
    assert bench.adoption({"torch": 100, "onnx-fp32": 160, "openvino-fp32": 170},
                          {"onnx-fp32": True, "openvino-fp32": True}).startswith("adopt openvino-fp32")
