"""Seen/unseen protocol on ToolLens, the way ToolBench made its unseen groups.

ToolBench removed some tools, and separately whole categories, from the retriever's training
data; test queries touching them are "unseen tool" (I1-Tool) and "unseen category" (I1-Cat,
I2-Cat). ToolLens has no such split, so :func:`make_split` builds one (seeded):

1. dev: ``dev_size`` queries of ToolLens train, neither trained on nor tested. ``dev_pool="all"``
   (our first runs) samples them from all of ToolLens train before step 2, so 244 of 600 dev queries
   touched held-out tools and steered the grid search and the epoch choice. ``dev_pool="seen"`` (the
   paper: ToolRerank's dev set is a sample of its training data, which holds seen tools only) makes
   the same draws (so steps 2-4 hold out the same categories and tools), then samples the dev set
   again among the queries that touch no held-out tool or category; the first sample's queries that
   do touch one go to the test pool.
2. held-out categories: ``n_heldout_categories`` categories among those with at least
   ``min_category_single`` single-tool queries (so I1-Cat is not empty), the *eligible* categories.
   ``category_draw="sample"`` (our first runs) samples them with the seed, so two seeds' draws may share
   categories (the first standard draws did: Gaming twice). ``category_draw="block"`` cuts one fixed
   shuffle of the eligible categories (seed ``category_shuffle_seed``; eligibility counted over every
   training query, so it does not depend on the seed's dev sample) into blocks of
   ``n_heldout_categories`` (:func:`category_blocks`), and seed ``s`` holds out block ``s``: seeds
   0, 1, 2 hold out disjoint categories, and a seed beyond the last block is an error;
   held-out tools: a ``heldout_tool_frac`` share of the tools of the other categories.
3. train: the remaining ToolLens train queries whose gold APIs touch no held-out tool or category.
4. test pool: ToolLens test, plus the ToolLens *train* queries dropped in step 3 (never trained
   on, so as unseen as test queries; without them the unseen single-tool subsets would hold a
   few dozen queries).

Each test-pool query then falls in at most one of six subsets mirroring ToolBench's groups
(:data:`SUBSETS`): by number of gold tools (I1 = one tool; I2 = several tools of one category;
I3 = several tools across categories — ToolBench's "intra-collection" has no ToolLens analogue,
so "across categories" stands in for it) and by what is unseen (Inst = every gold tool seen;
Tool = the one gold tool is a held-out tool of a seen category; Cat = every gold tool is in one
held-out category). Queries mixing seen and unseen tools fit none and are counted apart.

A tool is identified by ``<category>/<tool>`` (:func:`tool_id`): ToolBench reuses tool names
across categories. "Seen" is always decided by the training data (:func:`seen_tools`), so the
same rule serves the ToolBench transfer sets.
"""
from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

from toolkit.data.contract import Document, RetrievalDataset

#: mirror name -> (ToolBench dataset key used by the paper-number files, paper label, seen?)
SUBSETS = {
    "I1-Inst": ("toolbench-g1-instruction", True),
    "I2-Inst": ("toolbench-g2-instruction", True),
    "I3-Inst": ("toolbench-g3-instruction", True),
    "I1-Tool": ("toolbench-g1-tool", False),
    "I1-Cat": ("toolbench-g1-category", False),
    "I2-Cat": ("toolbench-g2-category", False),
}
SEEN_SUBSETS = ["I1-Inst", "I2-Inst", "I3-Inst"]
UNSEEN_SUBSETS = ["I1-Tool", "I1-Cat", "I2-Cat"]
SINGLE_SUBSETS = ["I1-Inst", "I1-Tool", "I1-Cat"]
MULTI_SUBSETS = ["I2-Inst", "I3-Inst", "I2-Cat"]
#: the paper's averages over subsets (its tables' last columns)
AVERAGES = {"seen-avg": SEEN_SUBSETS, "unseen-avg": UNSEEN_SUBSETS, "all-avg": list(SUBSETS),
            "single-avg": SINGLE_SUBSETS, "multi-avg": MULTI_SUBSETS}


def tool_id(doc: Document) -> str:
    return f"{doc.category}/{doc.tool}"


def gold_tools(ds: RetrievalDataset, qid: str) -> set[str]:
    return {tool_id(ds.corpus[d]) for d, rel in ds.qrels[qid].items() if rel > 0}


def seen_tools(train: RetrievalDataset) -> set[str]:
    """Tools with at least one gold API in the training queries (what the models have seen)."""
    return {t for q in train.qrels for t in gold_tools(train, q)}


def is_single_tool(ds: RetrievalDataset, qid: str) -> bool:
    return len(gold_tools(ds, qid)) == 1


@dataclass
class SeenUnseenSplit:
    train: RetrievalDataset
    dev: RetrievalDataset
    pool: RetrievalDataset                 # the test pool (ToolLens test + dropped train queries)
    heldout_categories: list[str]
    heldout_tools: list[str]
    subsets: dict[str, list[str]] = field(default_factory=dict)   # mirror name -> qids of the pool
    unassigned: dict[str, int] = field(default_factory=dict)      # why pool queries fit no subset

    def seen(self) -> set[str]:
        return seen_tools(self.train)

    def subset(self, name: str, max_queries: int | None = None, seed: int = 0) -> RetrievalDataset:
        ds = self.pool.subset(self.subsets[name], name=name)
        return ds.sample(max_queries, seed=seed) if max_queries else ds

    def summary(self) -> dict:
        return {"train_queries": len(self.train.queries), "dev_queries": len(self.dev.queries),
                "pool_queries": len(self.pool.queries), "heldout_categories": self.heldout_categories,
                "heldout_tools": len(self.heldout_tools), "seen_tools": len(self.seen()),
                **{f"subset {k}": len(v) for k, v in self.subsets.items()},
                **{f"unassigned: {k}": v for k, v in self.unassigned.items()}}


def _classify(ds: RetrievalDataset, qid: str, h_cats: set[str], h_tools: set[str], seen: set[str]) -> str:
    tools = gold_tools(ds, qid)
    if not any(t in h_tools or t.split("/")[0] in h_cats for t in tools) and not tools <= seen:
        return "gold tool neither held out nor in training"
    cats = {t.split("/")[0] for t in tools}
    in_cat = [t.split("/")[0] in h_cats for t in tools]
    in_tool = [t in h_tools for t in tools]
    if len(tools) == 1:
        if all(in_cat):
            return "I1-Cat"
        if all(in_tool):
            return "I1-Tool"
        return "I1-Inst"
    if not any(in_cat) and not any(in_tool):
        return "I2-Inst" if len(cats) == 1 else "I3-Inst"
    if all(in_cat) and len(cats) == 1:
        return "I2-Cat"
    if all(in_cat):
        return "multi-tool over several held-out categories"
    if not any(in_cat) and all(in_tool):
        return "multi-tool over held-out tools"
    return "multi-tool mixing seen and unseen tools"


DEV_POOLS = ("all", "seen")
CATEGORY_DRAWS = ("sample", "block")


def eligible_categories(train: RetrievalDataset, min_category_single: int = 40, exclude=()) -> list[str]:
    """The categories that can be held out: at least ``min_category_single`` single-tool queries in ``train``
    (``exclude``: query ids not counted), sorted."""
    skip = set(exclude)
    single_per_cat = Counter()
    for q in train.queries:
        if q not in skip and is_single_tool(train, q):
            single_per_cat[next(iter(gold_tools(train, q))).split("/")[0]] += 1
    return sorted(c for c, n in single_per_cat.items() if n >= min_category_single)


def category_blocks(train: RetrievalDataset, n_heldout_categories: int, min_category_single: int = 40,
                    category_shuffle_seed: int = 0) -> list[list[str]]:
    """The eligible categories (counted over every query of ``train``) in one shuffle seeded by
    ``category_shuffle_seed``, cut into ``len(eligible) // n_heldout_categories`` blocks of
    ``n_heldout_categories`` (the remainder is never held out); block ``s`` is what seed ``s`` holds out under
    ``category_draw="block"``, each block sorted."""
    if n_heldout_categories < 1:
        raise ValueError(f"n_heldout_categories must be >= 1 with category_draw='block', got {n_heldout_categories}")
    if category_shuffle_seed < 0:
        raise ValueError(f"category_shuffle_seed must be >= 0, got {category_shuffle_seed}")
    eligible = eligible_categories(train, min_category_single)
    if n_heldout_categories > len(eligible):
        raise ValueError(f"n_heldout_categories={n_heldout_categories} is more than the {len(eligible)} eligible "
                         f"categories (>= {min_category_single} single-tool training queries: "
                         f"{', '.join(eligible) or 'none'}); lower n_heldout_categories")
    order = list(eligible)
    random.Random(category_shuffle_seed).shuffle(order)
    k = n_heldout_categories
    return [sorted(order[i * k:(i + 1) * k]) for i in range(len(order) // k)]


def make_split(train: RetrievalDataset, test: RetrievalDataset, dev_size: int = 600,
               n_heldout_categories: int = 2, heldout_tool_frac: float = 0.1, min_category_single: int = 40,
               seed: int = 0, dev_pool: str = "all", category_draw: str = "sample", category_shuffle_seed: int = 0
               ) -> SeenUnseenSplit:
    """The seen/unseen split (module docstring). ``train``/``test`` share one corpus (ToolLens)."""
    if train.corpus is not test.corpus and set(train.corpus) != set(test.corpus):
        raise ValueError("make_split: train and test must share one corpus")
    if dev_pool not in DEV_POOLS:
        raise ValueError(f"make_split: dev_pool must be one of {DEV_POOLS}, got {dev_pool!r}")
    if category_draw not in CATEGORY_DRAWS:
        raise ValueError(f"make_split: category_draw must be one of {CATEGORY_DRAWS}, got {category_draw!r}")
    if category_draw == "block":     # checked before any sampling: an impossible request fails at once
        blocks = category_blocks(train, n_heldout_categories, min_category_single, category_shuffle_seed)
        if not 0 <= seed < len(blocks):
            n_eligible = len(eligible_categories(train, min_category_single))
            raise ValueError(f"make_split: seed={seed} picks block {seed} of the category shuffle, but its {n_eligible} "
                             f"eligible categories make only {len(blocks)} blocks of n_heldout_categories="
                             f"{n_heldout_categories}: with category_draw='block' the seed (of the Setup, or a draw "
                             f"seed of draw_seeds) must be < {len(blocks)}; lower n_heldout_categories for more blocks")
    rng = random.Random(seed)
    corpus = train.corpus
    qids = sorted(train.queries, key=lambda q: (len(q), q))
    # the first runs' dev sample, drawn first from every training query: with dev_pool="seen" it only feeds the
    # held-out draws below, so both pools hold out the same categories and tools (their unseen subsets compare)
    dev_ids = sorted(rng.sample(qids, dev_size)) if dev_size else []
    dev_set = set(dev_ids)
    if category_draw == "block":
        h_cats = blocks[seed]
    else:   # held-out categories sampled among those with enough single-tool queries outside the first dev sample
        eligible = eligible_categories(train, min_category_single, exclude=dev_set)
        if len(eligible) < n_heldout_categories:
            raise ValueError(f"make_split: only {len(eligible)} categories have >= {min_category_single} single-tool "
                             f"queries; lower min_category_single or n_heldout_categories")
        h_cats = sorted(rng.sample(eligible, n_heldout_categories))
    other_tools = sorted({tool_id(d) for d in corpus.values() if d.category not in h_cats})
    h_tools = sorted(rng.sample(other_tools, round(heldout_tool_frac * len(other_tools))))
    hc, ht = set(h_cats), set(h_tools)

    def touches(ds, q):
        return any(t in ht or t.split("/")[0] in hc for t in gold_tools(ds, q))

    if dev_size and dev_pool == "seen":
        clean = [q for q in qids if not touches(train, q)]
        if len(clean) <= dev_size:
            raise ValueError(f"make_split: dev_size {dev_size} >= the {len(clean)} training queries with seen "
                             "tools only; lower dev_size")
        dev_ids = sorted(random.Random(seed + 1).sample(clean, dev_size))
        dev_set = set(dev_ids)
    train_ids = [q for q in sorted(train.queries) if q not in dev_set and not touches(train, q)]
    dropped = [q for q in sorted(train.queries) if q not in dev_set and touches(train, q)]
    pool_queries = {**{q: test.queries[q] for q in test.queries}, **{q: train.queries[q] for q in dropped}}
    pool_qrels = {**{q: test.qrels[q] for q in test.queries}, **{q: train.qrels[q] for q in dropped}}
    if len(pool_queries) != len(test.queries) + len(dropped):
        raise ValueError("make_split: ToolLens train and test query ids overlap")
    pool = RetrievalDataset("toollens-test-pool", corpus, pool_queries, pool_qrels,
                            description="ToolLens test + training queries dropped for touching held-out tools")
    subsets: dict[str, list[str]] = {k: [] for k in SUBSETS}
    unassigned: Counter = Counter()
    train_ds = train.subset(train_ids, name="toollens-train[seen split]")
    seen = seen_tools(train_ds)
    for q in sorted(pool.queries):
        kind = _classify(pool, q, hc, ht, seen)
        if kind in subsets:
            if SUBSETS[kind][1] and q not in test.queries:
                continue  # cannot happen: dropped train queries touch a held-out tool
            subsets[kind].append(q)
        else:
            unassigned[kind] += 1
    return SeenUnseenSplit(train_ds,
                           train.subset(dev_ids, name="toollens-dev"), pool, h_cats, h_tools,
                           subsets, dict(unassigned))


CATEGORY_SUBSETS = ["I1-Cat", "I2-Cat"]   # the subsets whose every gold tool lies in one held-out category


def query_category(ds: RetrievalDataset, qid: str) -> str:
    """The one category of a query's gold tools (I1-Cat and I2-Cat queries have one); an error if there are several."""
    cats = {t.split("/")[0] for t in gold_tools(ds, qid)}
    if len(cats) != 1:
        raise ValueError(f"query {qid!r} has gold tools in {len(cats)} categories ({', '.join(sorted(cats))}), not one")
    return next(iter(cats))


def category_counts(split: SeenUnseenSplit) -> dict[str, dict[str, int]]:
    """Per held-out category, how many test queries of I1-Cat and of I2-Cat it has in the split."""
    out = {c: {s: 0 for s in CATEGORY_SUBSETS} for c in split.heldout_categories}
    for s in CATEGORY_SUBSETS:
        for q in split.subsets.get(s, []):
            out.setdefault(query_category(split.pool, q), {k: 0 for k in CATEGORY_SUBSETS})[s] += 1
    return out


def dev_touching_heldout(split: SeenUnseenSplit) -> int:
    """How many dev queries have a gold API of a held-out tool or category (0 for ``dev_pool="seen"``)."""
    hc, ht = set(split.heldout_categories), set(split.heldout_tools)
    return sum(any(t in ht or t.split("/")[0] in hc for t in gold_tools(split.dev, q)) for q in split.dev.queries)


RELEASE_GROUPS = {"I1-Inst": "G1_instruction", "I2-Inst": "G2_instruction", "I3-Inst": "G3_instruction",
                  "I1-Tool": "G1_tool", "I1-Cat": "G1_category", "I2-Cat": "G2_category"}


def release_split(release_dir: str, dev_size: int = 600, seed: int = 0, test: RetrievalDataset | None = None
                  ) -> SeenUnseenSplit:
    """The paper's own protocol, for users with ToolBench's data release (``paper`` profile).

    Training queries: ``<release_dir>/G{1,2,3}/`` (``train.query.txt``, ``qrels.train.tsv``,
    ``corpus.tsv``; ToolBench already removed the unseen tools and categories from them), documents
    re-keyed to ``<category>/<tool>/<api>`` so the three corpora merge; dev = ``dev_size`` of them.
    Test: the six StableToolBench groups over the whole library (``test``, default
    ``load_dataset("toolbench-all", corpus="library")``), subsets named as the paper's.
    """
    from pathlib import Path

    from toolkit.data import load_dataset, load_retrieval_dir
    corpus: dict[str, Document] = {}
    queries, qrels = {}, {}
    for g in ("G1", "G2", "G3"):
        ds = load_retrieval_dir(Path(release_dir) / g, "train", name=f"release-{g}-train")
        for d in ds.corpus.values():
            key = d.meta.get("api_key", d.doc_id)
            corpus.setdefault(key, Document(key, d.category, d.tool, d.api, d.text, d.meta))
        for q, rel in ds.qrels.items():
            qid = f"{g}/{q}"
            queries[qid] = ds.queries[q].__class__(qid, ds.queries[q].text, g)
            qrels[qid] = {ds.corpus[d].meta.get("api_key", d): r for d, r in rel.items()}
    full = RetrievalDataset("toolbench-release-train", corpus, queries, qrels)
    rng = random.Random(seed)
    dev_ids = sorted(rng.sample(sorted(queries), min(dev_size, len(queries))))
    dev_set = set(dev_ids)
    train = full.subset([q for q in sorted(queries) if q not in dev_set], name="toolbench-release-train")
    dev = full.subset(dev_ids, name="toolbench-release-dev")
    pool = test if test is not None else load_dataset("toolbench-all", corpus="library")
    subsets = {name: [q for q in pool.queries if q.split("/")[0] == grp] for name, grp in RELEASE_GROUPS.items()}
    return SeenUnseenSplit(train, dev, pool, [], [], subsets, {})
