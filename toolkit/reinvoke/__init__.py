"""Re-Invoke (Chen et al., Findings of EMNLP 2024): unsupervised tool retrieval with LLM document
expansion, intent extraction and multi-view similarity ranking (Chen et al., "Re-Invoke: Tool Invocation Rewriting for Zero-Shot Tool Retrieval", arXiv:2408.01875).

Modules, one per concept:
    multiview   Algorithm 2 / Figs. 3 and 8: per-intent (reversed rank, similarity) tuples, max over intents
    expansion   §3.1, §4.3, Table 3(B-D): "Documentation: <doc> Query: <q>" copies, mean/max over copies
    generation  the LLM calls (synthetic queries Fig. 4, intents Fig. 5, HyDE Fig. 6) via toolkit.llm caches
    roundtrip   §6.2 / Table 4: round-trip consistency recall of the synthetic queries
    pipeline    reinvoke_run / variant_run (Table 3A) / hyde_run for BM25 and dense

    from toolkit.reinvoke import reinvoke_run, generation as gen
    exp = gen.synthetic_queries(ds.corpus, gen.client("synthetic-queries"), m=10)
    its = gen.intents(ds.query_texts(), gen.client("intents"))
    run = reinvoke_run(ds, "dense", exp, its)
"""
from toolkit.reinvoke import expansion, generation, multiview  # noqa: F401
from toolkit.reinvoke.expansion import (COPY_FORMAT, ExpandedCorpus, aggregate_copies, expand_corpus,  # noqa: F401
                                        expand_document, mean_embeddings)
from toolkit.reinvoke.multiview import (aggregate_intents, multiview_rank, multiview_run_row,  # noqa: F401
                                        multiview_tuples, reversed_ranks)
from toolkit.reinvoke.pipeline import (VARIANTS, build_index, hyde_run, reinvoke_run, run_from_intents,  # noqa: F401
                                       variant_run)
from toolkit.reinvoke.roundtrip import roundtrip_run  # noqa: F401,E402
