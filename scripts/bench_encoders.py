"""Encoder backends against torch (a script, not a test): speed and whether the rankings survive.

For MiniLM and mpnet, in one run and with the same threads, prints for each backend:

- documents/s encoding library documents (``toolkit.data.load_library``, a seeded sample, sorted
  longest first and batched as the embedding cache does), median over ``--repeats``;
- the ratio to torch measured in the same run;
- top-10 agreement with torch on standard test sets, searched exactly over their own corpus:
  ToolE single (notebook 20's seeded 1,000-query sample, 199 tools) and the StableToolBench I2 pool (230 queries).
  Agreement = mean |top10_backend & top10_torch| / 10; "identical" counts lists equal in order;
- the largest |cosine_backend - cosine_torch| over those (query, document) scores.

Backends: ``torch`` (sentence-transformers, the reference), ``onnx-fp32`` and ``onnx-int8``
(:mod:`toolkit.retrieval.onnx_encoder`, ONNX Runtime), and ``openvino-fp32`` (the same ONNX graph
compiled by OpenVINO, only if ``openvino`` is installed; not a dependency of the toolkit).
The adoption rule (issue 54): the fastest backend with agreement >= 99 % on every set.
Pause other heavy work first: two CPU-bound jobs at once make both slower.

    python scripts/bench_encoders.py                         # ~20 min on 2 cores
    python scripts/bench_encoders.py --docs 300 --docs-mpnet 100 --repeats 1 --models minilm
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import time

import numpy as np

from toolkit.data import load_dataset, load_library
from toolkit.retrieval.models import load_encoder, resolve_model
from toolkit.retrieval.onnx_encoder import OnnxEncoder, graph_path


class OpenVinoEncoder(OnnxEncoder):
    """The fp32 ONNX graph compiled by OpenVINO's CPU plugin (benchmark only): OnnxEncoder with another runtime."""

    def __init__(self, onnx_encoder: OnnxEncoder, threads: int):
        import openvino as ov

        self.__dict__.update(onnx_encoder.__dict__)
        core = ov.Core()
        self.compiled = core.compile_model(core.read_model(str(onnx_encoder.graph)), "CPU",
                                           {"INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY"})
        self.request = self.compiled.create_infer_request()

    def _run(self, feed: dict) -> np.ndarray:
        return np.asarray(next(iter(self.request.infer(feed).values())), np.float32)

    def describe(self) -> dict:
        return {"backend": "openvino-fp32", "graph": self.graph.name}


def backends(model: str, threads: int) -> dict:
    st = load_encoder(model, "cpu")
    model_dir = resolve_model(model)[0]
    out = {"torch": st}
    for variant in ("fp32", "int8"):
        t = time.perf_counter()
        fresh = not graph_path(model_dir, variant).is_file()
        out[f"onnx-{variant}"] = OnnxEncoder.from_sentence_transformer(st, model_dir, variant, threads)
        if fresh:
            print(f"  {model}: exported onnx-{variant} in {time.perf_counter() - t:.1f} s "
                  f"({graph_path(model_dir, variant).stat().st_size / 1e6:.0f} MB)")
    try:
        out["openvino-fp32"] = OpenVinoEncoder(out["onnx-fp32"], threads)
    except ImportError:
        print("  openvino not installed: its row is skipped (pip install openvino to include it)")
    return out


def docs_per_second(encoder, texts: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        for s in range(0, len(texts), 32):
            encoder.encode(texts[s:s + 32], batch_size=32, normalize_embeddings=True)
        times.append(time.perf_counter() - t)
    return len(texts) / statistics.median(times)


def top10(encoder, ds) -> tuple[np.ndarray, np.ndarray]:
    docs = sorted(ds.corpus)
    qids = sorted(ds.queries)
    D = encoder.encode([ds.corpus[d].text for d in docs], batch_size=32, normalize_embeddings=True)
    Q = encoder.encode([ds.queries[q].text for q in qids], batch_size=32, normalize_embeddings=True)
    S = Q @ D.T
    return np.argsort(-S, axis=1, kind="stable")[:, :10], S


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", nargs="+", default=["minilm", "mpnet"])
    ap.add_argument("--docs", type=int, default=600, help="library documents timed with MiniLM")
    ap.add_argument("--docs-mpnet", type=int, default=200, help="library documents timed with mpnet")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None, help="default: torch's thread count")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mpnet-sets", nargs="+", default=["ToolE single", "I2 pool"],
                    help="agreement sets for mpnet (the slow encoder): a subset of 'ToolE single' 'I2 pool'")
    args = ap.parse_args(argv)

    import torch
    threads = args.threads or torch.get_num_threads()
    torch.set_num_threads(threads)
    print(f"# bench_encoders  cpus={os.cpu_count()} threads={threads} load_avg={os.getloadavg()[0]:.2f} "
          f"repeats={args.repeats} (medians)")
    library = [d.text for d in load_library().values()]
    sets = {"ToolE single": load_dataset("toole-single").sample(1000, seed=0), "I2 pool": load_dataset("toolbench-i2", corpus="pool")}
    print("agreement sets: " + ", ".join(f"{k} ({len(v.queries):,} queries, {len(v.corpus):,} docs)"
                                         for k, v in sets.items()))
    for model in args.models:
        n = args.docs if model == "minilm" else args.docs_mpnet
        sample = sorted(random.Random(args.seed).sample(library, n), key=len, reverse=True)
        print(f"\n## {model}: {n} library documents (median {int(np.median([len(t) for t in sample]))} chars), "
              f"batch 32, max length {load_encoder(model, 'cpu').max_seq_length}")
        encs = backends(model, threads)
        msets = sets if model != "mpnet" else {k: sets[k] for k in args.mpnet_sets}
        ref = {k: top10(encs["torch"], ds) for k, ds in msets.items()}
        rates = {}
        print(f"  {'backend':<15} {'docs/s':>8} {'x torch':>8}   " +
              "   ".join(f"{k}: agree / identical / max|dcos|" for k in msets))
        for name, enc in encs.items():
            rates[name] = docs_per_second(enc, sample, args.repeats)
            cells = []
            for k, ds in msets.items():
                top, S = ref[k] if name == "torch" else top10(enc, ds)
                agree = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(top, ref[k][0])])
                same = int(sum((a == b).all() for a, b in zip(top, ref[k][0])))
                cells.append(f"{agree:7.2%} / {same:4d} of {len(top)} / {np.abs(S - ref[k][1]).max():.1e}")
            print(f"  {name:<15} {rates[name]:8.1f} {rates[name] / rates['torch']:7.2f}x   " + "   ".join(cells))
    print(f"\nload_avg at end={os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
