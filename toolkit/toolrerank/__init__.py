"""ToolRerank (Zheng et al., LREC-COLING 2024): adaptive truncation + hierarchy-aware reranking.

One small module per concept:

- :mod:`.splits`      seen/unseen split of ToolLens (held-out tools and categories, dev, six test
                      subsets mirroring I1-Inst ... I2-Cat) and the seen-tool set of any training data
- :mod:`toolkit.training` the shared training loop (checkpoints, resume, throughput) and model cache dirs
- :mod:`toolkit.retrieval.dual_encoder` the "DPR" retriever: bi-encoder trained with in-batch negatives (ToolBench
                      recipe), shared with the feedback method's ToolRetriever
- :mod:`.reranker`    cross-encoder reranker trained on gold positives + hard negatives from the retriever
- :mod:`.variants`    reranker variants (where the reranker starts)
- :mod:`.alone`       the reranker judged alone against the whole library (Recall@5, AUC)
- :mod:`.classifier`  single- vs multi-tool query classifier
- :mod:`.truncation`  Adaptive Truncation (m_s for seen tools, m_u for unseen; §3.2)
- :mod:`.hierarchy`   Hierarchy-Aware Reranking: Algorithm 1 (single-tool, extended API list) and
                      Algorithm 2 (multi-tool graph)
- :mod:`.pipeline`    candidates + scores for a dataset, the full ToolRerank and the Rerank-m baselines
- :mod:`.analysis`    coverage statistics (§4.2/§4.4), Figure 1(a) curves, case studies (Figures 3-4)
- :mod:`.tables`      per-subset values, the paper's averages, recording under the paper-number keys
- :mod:`.experiment`  profiles (smoke / standard / paper) and end-to-end cached training

Quick use on any dataset of the data layer::

    from toolkit.toolrerank.pipeline import ToolRerankConfig, candidates, evaluate_method
    c = candidates(dataset, dense_retriever, reranker, seen_tools, classifier, depth=50)
    evaluate_method(c, "rerank-10"); evaluate_method(c, ToolRerankConfig(m_s=10, m_u=50))
"""
from .hierarchy import har_multi, har_single
from .truncation import adaptive_truncate

__all__ = ["adaptive_truncate", "har_single", "har_multi"]
