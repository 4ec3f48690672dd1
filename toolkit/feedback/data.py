"""The feedback paper's data protocol on the data we have (Xu et al. 2024, §5.1, Table 1).

- **Training**: ToolLens train (18,770 requests over 464 ToolBench APIs; the paper's ToolBench
  training instructions are not public). Its documents are replaced by the same APIs' documents
  from the ToolBench library (all 464 map), so that training and test documents share one format.
- **In-domain test**: the StableToolBench groups I1 / I2 / I3 and All (474 / 230 / 61 / 765
  queries) over the 16,427-API library, as in ``01_baselines`` (the paper: 796 / 573 / 218 / 1,587
  queries over 10,439 / 13,142 / 1,605 / 13,954 tools).
- **Out-of-domain test**: UltraTool (1,000 queries over 436 tools; the paper's 498). T-Eval's test
  instructions are not public: its column is reported as unavailable.
The LLM conditions run on seeded, nested samples of each group (:meth:`RetrievalDataset.nested_sample`).
"""
from __future__ import annotations

from toolkit.data import load_dataset, load_library, load_toollens
from toolkit.data.contract import RetrievalDataset

IN_DOMAIN = {"I1": "toolbench-i1", "I2": "toolbench-i2", "I3": "toolbench-i3", "All": "toolbench-all"}
OUT_OF_DOMAIN = {"UltraTool": "ultratool"}
OFFLINE_SET = "ToolLens train"   # the training instructions given offline feedback (§4.3): ours only
UNAVAILABLE = {"T-Eval": "T-Eval's test instructions are not public (only its 15 tools / 50 API docs are)"}


def training_set(split: str = "train") -> RetrievalDataset:
    """ToolLens ``split`` with every document replaced by the library's document of the same API."""
    tl = load_toollens(split)
    lib = load_library()
    key = {d: doc.meta["api_key"] for d, doc in tl.corpus.items()}
    missing = sorted({k for k in key.values() if k not in lib})
    if missing:
        raise ValueError(f"{len(missing)} ToolLens APIs are not in the ToolBench library (first: {missing[0]}); "
                         f"check toollens/corpus.jsonl against the library file")
    corpus = {k: lib[k] for k in dict.fromkeys(key.values())}
    qrels = {q: {key[d]: r for d, r in rels.items()} for q, rels in tl.qrels.items()}
    return RetrievalDataset(f"toollens-{split} (library documents)", corpus, tl.queries, qrels,
                            description=f"ToolLens {split}, documents from the ToolBench library")


def test_sets(names: dict[str, str] | None = None, corpus: str = "library") -> dict[str, RetrievalDataset]:
    """The in-domain groups and UltraTool, by the paper's column names; ``corpus`` for the ToolBench
    groups: ``library`` (16,427 APIs, the protocol) or ``pool`` (each group's candidate pools: fast)."""
    names = names or {**IN_DOMAIN, **OUT_OF_DOMAIN}
    return {label: load_dataset(ds, **({"corpus": corpus} if ds.startswith("toolbench") else {}))
            for label, ds in names.items()}
