"""One interface for every method: :class:`Method` with ``offline(corpus)``,
``online(queries) -> run`` and a :class:`Cost` record; :class:`MethodPending` when its inputs are not committed.

    from toolkit.methods import Method, benchmark
    sets = benchmark.benchmark_sets(benchmark.config_for("smoke"))
    result = benchmark.run_benchmark({"BM25": BM25, "mine": MyMethod}, sets)
    benchmark.leaderboard(result)

``catalog``: the suite's methods (wrappers of each paper's package); ``fusion``: reciprocal-rank fusion;
``benchmark``: notebook 50's sets, metrics, leaderboard, Pareto front; ``scaling``: each method's offline and online
cost against the library size (nested libraries, a power-law fit t = a·N^b) and the query rate.
"""
from toolkit.methods.base import Cost, Method, MethodPending, Pending, PendingMethod
from toolkit.methods.fusion import Fusion, rrf

__all__ = ["Cost", "Fusion", "Method", "MethodPending", "Pending", "PendingMethod", "rrf"]
