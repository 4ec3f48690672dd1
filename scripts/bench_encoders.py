"""Encoder backends against torch (a script, not a test): speed and whether the rankings survive.

For MiniLM and mpnet, in one run and with the same threads, prints for each backend:

- documents/s encoding library documents (``toolkit.data.load_library``, a seeded sample, sorted
  longest first and batched as the embedding cache does), median over ``--repeats``;
- the ratio to torch measured in the same run;
- top-10 agreement with torch on standard test sets, searched exactly over their own corpus:
  ToolE single (notebook 20's seeded 1,000-query sample, 199 tools) and the StableToolBench I2 pool (230 queries).
  Agreement = mean |top10_backend & top10_torch| / 10; "identical" counts lists equal in order;
- the largest |cosine_backend - cosine_torch| over those (query, document) scores.

**Cross-check** (issue 86): before any other backend is created or exported, the same run times one direct
``SentenceTransformer.encode(sample, batch_size=32)`` call (what the embedding cache does) beside this script's torch
loop, and times torch again once the other backends exist and once they have run (their runtimes' worker threads
share the cores). Each is printed as docs/s and as a ratio to the direct call; the torch row of the table must agree
with the direct call within 30 %, else the script says so. Every model load and ONNX export is outside the timers.

Backends: ``torch`` (sentence-transformers, the reference), ``onnx-fp32`` and ``onnx-int8``
(:mod:`toolkit.retrieval.onnx_encoder`, ONNX Runtime), and ``openvino-fp32`` (the same ONNX graph
compiled by OpenVINO, only if ``openvino`` is installed; not a dependency of the toolkit).
The adoption rule (issue 86): a backend is adopted only if it is at least 1.5x torch's docs/s (same run) with
identical top-10 lists on every set; the script prints that verdict per model.
The machine may be shared: the load average is printed at the start and the end; rely on the ratios.

    python scripts/bench_encoders.py                         # ~20 min on 2 idle cores
    python scripts/bench_encoders.py --docs 300 --docs-mpnet 100 --repeats 3
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


CPU_PER_WALL: list[float] = []     # process CPU seconds / wall seconds of the last timed run (all its threads)


def seconds(run, repeats: int) -> float:
    """Median wall seconds of ``run()`` over ``repeats`` calls. Also keeps, in :data:`CPU_PER_WALL`, the process's
    CPU seconds over the wall seconds of those calls: ~threads when the cores are free; far above the work done when
    threads spin at barriers while a competing process holds a core."""
    times, cpu = [], 0.0
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        run()
        times.append(time.perf_counter() - t)
        cpu += time.process_time() - c
    CPU_PER_WALL[:] = [cpu / max(sum(times), 1e-9)]
    return statistics.median(times)


def docs_per_second(encoder, texts: list[str], repeats: int) -> float:
    """docs/s of this script's loop: ``encoder.encode`` on successive slices of 32 texts."""
    def run():
        for s in range(0, len(texts), 32):
            encoder.encode(texts[s:s + 32], batch_size=32, normalize_embeddings=True)
    return len(texts) / seconds(run, repeats)


def direct_docs_per_second(st, texts: list[str], repeats: int) -> float:
    """docs/s of one direct ``SentenceTransformer.encode(texts, batch_size=32)`` call (the cross-check)."""
    return len(texts) / seconds(lambda: st.encode(texts, batch_size=32, normalize_embeddings=True), repeats)


def adoption(rates: dict, identical: dict, rule_speedup: float = 1.5) -> str:
    """The rule: the fastest backend at >= ``rule_speedup`` x torch's docs/s whose top-10 lists are identical to
    torch's on every set (``identical[name]``: True/False); else torch."""
    ok = [n for n in rates if n != "torch" and identical.get(n) and rates[n] >= rule_speedup * rates["torch"]]
    if not ok:
        best = max((n for n in rates if n != "torch"), key=lambda n: rates[n], default=None)
        why = (f"; fastest other: {best} at {rates[best] / rates['torch']:.2f}x"
               f"{', identical top-10' if identical.get(best) else ', top-10 not identical'}" if best else "")
        return f"keep torch (no backend >= {rule_speedup}x with identical top-10{why})"
    best = max(ok, key=lambda n: rates[n])
    return f"adopt {best} ({rates[best] / rates['torch']:.2f}x torch, identical top-10 on every set)"


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
        st = load_encoder(model, "cpu")
        print(f"\n## {model}: {n} library documents (median {int(np.median([len(t) for t in sample]))} chars), "
              f"batch 32, max length {st.max_seq_length}")
        st.encode(sample[:32], batch_size=32)      # first call: one-off set-up, outside every timer
        # the cross-check, before any other backend exists: a direct encode and this script's loop, same state
        direct = direct_docs_per_second(st, sample, args.repeats)
        cpu = {"direct": CPU_PER_WALL[0]}
        rates = {"torch": docs_per_second(st, sample, args.repeats)}
        cpu["loop"] = CPU_PER_WALL[0]
        encs = backends(model, threads)            # loads and exports: outside the timers
        with_others = docs_per_second(st, sample, args.repeats)
        cpu["with others"] = CPU_PER_WALL[0]
        msets = sets if model != "mpnet" else {k: sets[k] for k in args.mpnet_sets}
        ref = {k: top10(encs["torch"], ds) for k, ds in msets.items()}
        rows, identical = {}, {}
        for name, enc in encs.items():
            if name != "torch":
                rates[name] = docs_per_second(enc, sample, args.repeats)
            cells, same_all = [], True
            for k, ds in msets.items():
                top, S = ref[k] if name == "torch" else top10(enc, ds)
                agree = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(top, ref[k][0])])
                same = int(sum((a == b).all() for a, b in zip(top, ref[k][0])))
                same_all &= same == len(top)
                cells.append(f"{agree:7.2%} / {same:4d} of {len(top)} / {np.abs(S - ref[k][1]).max():.1e}")
            rows[name], identical[name] = cells, same_all
        after_others_ran = direct_docs_per_second(st, sample, args.repeats)
        cpu["after"] = CPU_PER_WALL[0]
        print(f"  cross-check (docs/s; ratio to the direct call; process CPU s per wall s):\n"
              f"    direct SentenceTransformer.encode, no other backend yet   {direct:8.1f}   1.00   {cpu['direct']:.2f}\n"
              f"    this script's torch loop, no other backend yet            {rates['torch']:8.1f}   "
              f"{rates['torch'] / direct:4.2f}   {cpu['loop']:.2f}\n"
              f"    this script's torch loop, other backends loaded           {with_others:8.1f}   "
              f"{with_others / direct:4.2f}   {cpu['with others']:.2f}\n"
              f"    direct SentenceTransformer.encode, after they all ran     {after_others_ran:8.1f}   "
              f"{after_others_ran / direct:4.2f}   {cpu['after']:.2f}")
        off = abs(rates["torch"] / direct - 1)
        print(f"  torch row vs direct encode: {rates['torch'] / direct - 1:+.0%} "
              + ("(within 30 %)" if off <= 0.30 else "(DISAGREE by more than 30 %: the table's figures are suspect)"))
        print(f"  {'backend':<15} {'docs/s':>8} {'x torch':>8}   " +
              "   ".join(f"{k}: agree / identical / max|dcos|" for k in msets))
        for name in encs:
            print(f"  {name:<15} {rates[name]:8.1f} {rates[name] / rates['torch']:7.2f}x   " + "   ".join(rows[name]))
        print(f"  {model}: {adoption(rates, identical)}")
    print(f"\nload_avg at end={os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
