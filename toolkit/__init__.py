"""toolret-repro: tool retrieval for LLM agents, four papers reproduced.

Modules: ``data`` (BEIR-like contract + loaders), ``metrics``, ``retrieval`` (BM25, dense,
embedding cache, model registry), ``llm`` (one client, cached), ``runner`` (papermill),
``compare`` (paper vs ours).
"""
__version__ = "0.1.0"
