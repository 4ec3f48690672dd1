"""The query-generation paper's data protocol (Kachuee et al. 2025, §4.1), rebuilt on ToolLens.

The paper filters ToolBench's released requests and APIs, splits the APIs into in-domain and
out-of-domain by **tool name**, divides in-domain requests into training and test, and drops every
request whose gold APIs straddle both sides. ToolBench's training requests are not public, so the
same protocol runs on ToolLens (18,770 requests over 464 ToolBench APIs of 314 tools):

1. keep APIs whose description has ``min_desc_words``..``max_desc_words`` words, and requests with
   1..``max_gold`` gold APIs, all of them kept (a request that lost a gold API is dropped rather
   than evaluated against an incomplete gold set);
2. draw ``ood_tool_share`` of the tool names (seeded) as out-of-domain;
3. requests whose gold APIs are all in-domain: ToolLens-train ones form the training pool (minus
   ``dev_size`` seeded dev requests for temperature calibration), ToolLens-test ones the in-domain
   test set; requests whose gold APIs are all out-of-domain (train or test file: none of their
   tools is ever trained on) form the out-of-domain test set; the rest are dropped and counted.

The paper's thresholds and set sizes were lost in the text conversion; the defaults here are our
choices, exposed as parameters. Retrieval at test time is over every kept API (in- and
out-of-domain); the alignment reward simulates retrieval over the in-domain APIs only (the paper's
"retrieval of items in the train set", §3.3).
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

from toolkit.data import load_toollens
from toolkit.data.contract import Document, RetrievalDataset

_DESC = re.compile(r"^category_name:(?P<cat>.*?), tool_name:(?P<tool>.*?), api_name:(?P<api>.*?), "
                   r"api_description:(?P<desc>.*?)(?:, required_params:|$)", re.S)


def api_fields(doc: Document) -> tuple[str, str, str]:
    """(tool name, API name, description) as ToolLens prints them (not the standardized ids)."""
    m = _DESC.match(doc.text)
    if not m:
        raise ValueError(f"ToolLens document {doc.doc_id}: text does not start with "
                         f"'category_name:..., tool_name:..., api_name:..., api_description:...'")
    return m["tool"].strip(), m["api"].strip(), " ".join(m["desc"].split())


def api_description(doc: Document) -> str:
    """The index key of §4.2 and the SFT target of §3.2: ``<tool>: <api>: <description>``.

    The paper indexes "API descriptions provided by developers"; ToolBench descriptions alone are
    often a few words ("Get Suggestions"), so the tool and API names are kept in front, as in the
    generated queries of Table 6 ("Coffee Tips: Offers a list of tips ...")."""
    tool, api, desc = api_fields(doc)
    return f"{tool}: {api}: {desc}" if desc else f"{tool}: {api}"


_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")


def first_sentence(text: str) -> str:
    """``text`` up to and including its first ``.``, ``!`` or ``?`` that ends the text or is followed by
    white space (so "v2.0" and "3.5" do not end it); the whole text when there is none."""
    m = _SENTENCE_END.search(text)
    return text[:m.end()].strip() if m else text.strip()


def trimmed_description(doc: Document, max_words: int) -> str:
    """The SFT target line of the fair test (toolkit.querygen.config.fair_config): what the Fig. 2 prompt asks for -- the tool, the API
    and a short description, "less than 20 words" -- as ``<tool>: <api>: <description>``.

    Rule: the description is cut to its first sentence (:func:`first_sentence`), then to its first
    ``max_words - words(tool) - words(api)`` words (words: runs of non-space characters), so that the whole
    line has at most ``max_words`` words; the tool and API names are never cut (when they alone use up the
    budget, the line is ``<tool>: <api>``). ``doc`` is a split's document (its ToolLens text is in
    ``meta["toollens_text"]``) or a ToolLens one."""
    if max_words < 1:
        raise ValueError(f"max_words must be >= 1, got {max_words}")
    raw = doc.meta.get("toollens_text", doc.text) if doc.meta else doc.text
    tool, api, desc = api_fields(Document(doc.doc_id, doc.category, doc.tool, doc.api, raw, {}))
    room = max_words - len(tool.split()) - len(api.split())
    words = first_sentence(desc).split()[:max(0, room)]
    return f"{tool}: {api}: {' '.join(words)}" if words else f"{tool}: {api}"


@dataclass(frozen=True)
class SplitConfig:
    """Filter and split settings (§4.1; every value is ours: the paper's were lost)."""
    seed: int = 0
    ood_tool_share: float = 0.25
    min_desc_words: int = 3
    max_desc_words: int = 100
    max_gold: int = 3
    dev_size: int = 200

    def __post_init__(self) -> None:
        if not 0 < self.ood_tool_share < 1:
            raise ValueError(f"ood_tool_share must be in (0, 1), got {self.ood_tool_share}")
        if not 0 <= self.min_desc_words <= self.max_desc_words:
            raise ValueError(f"need 0 <= min_desc_words <= max_desc_words, got {self.min_desc_words}, "
                             f"{self.max_desc_words}")
        if self.max_gold < 1:
            raise ValueError(f"max_gold must be >= 1, got {self.max_gold}")
        if self.dev_size < 0:
            raise ValueError(f"dev_size must be >= 0, got {self.dev_size}")


@dataclass
class QuerygenSplit:
    """Corpus of kept APIs (``Document.text`` = :func:`api_description`) and four query sets."""
    config: SplitConfig
    corpus: dict[str, Document]
    in_domain_docs: set[str]
    train: RetrievalDataset
    dev: RetrievalDataset
    test_in: RetrievalDataset
    test_out: RetrievalDataset
    counts: dict = field(default_factory=dict)

    def datasets(self) -> dict[str, RetrievalDataset]:
        return {"train": self.train, "dev": self.dev, "in-domain": self.test_in, "out-of-domain": self.test_out}

    def stats(self) -> dict:
        ood_docs = set(self.corpus) - self.in_domain_docs
        return {"apis": len(self.corpus), "tools": len({d.tool for d in self.corpus.values()}),
                "in_domain_apis": len(self.in_domain_docs), "out_of_domain_apis": len(ood_docs),
                "in_domain_tools": len({self.corpus[d].tool for d in self.in_domain_docs}),
                "out_of_domain_tools": len({self.corpus[d].tool for d in ood_docs}),
                **{f"{k}_requests": len(ds.queries) for k, ds in self.datasets().items()}, **self.counts}


def _subset(name: str, corpus, queries, qrels, qids, description) -> RetrievalDataset:
    qids = sorted(qids, key=lambda q: (len(q), q))
    return RetrievalDataset(name, corpus, {q: queries[q] for q in qids}, {q: qrels[q] for q in qids}, description)


def make_split(config: SplitConfig = SplitConfig()) -> QuerygenSplit:
    """The in-domain / out-of-domain protocol of §4.1 on ToolLens (see the module docstring)."""
    c = config
    train_all, test_all = load_toollens("train"), load_toollens("test")
    source = train_all.corpus
    kept = {}
    for d, doc in source.items():
        desc = api_fields(doc)[2]
        if c.min_desc_words <= len(desc.split()) <= c.max_desc_words:
            kept[d] = Document(doc.doc_id, doc.category, doc.tool, doc.api, api_description(doc),
                               {**doc.meta, "toollens_text": doc.text})
    tools = sorted({doc.tool for doc in kept.values()})
    rng = random.Random(c.seed)
    ood_tools = set(rng.sample(tools, round(len(tools) * c.ood_tool_share)))
    in_docs = {d for d, doc in kept.items() if doc.tool not in ood_tools}

    counts = {"apis_before_filter": len(source), "requests_before_filter": len(train_all.queries) + len(test_all.queries),
              "dropped_api_filtered": 0, "dropped_too_many_gold": 0, "dropped_straddling": 0}
    pools: dict[str, list[str]] = {"train": [], "in": [], "out": []}
    queries, qrels = {}, {}
    for part, ds in (("train", train_all), ("test", test_all)):
        for qid, rels in ds.qrels.items():
            gold = [d for d, r in rels.items() if r > 0]
            if len(gold) > c.max_gold:
                counts["dropped_too_many_gold"] += 1
                continue
            if any(d not in kept for d in gold):
                counts["dropped_api_filtered"] += 1
                continue
            side = {d in in_docs for d in gold}
            if len(side) > 1:
                counts["dropped_straddling"] += 1
                continue
            queries[qid], qrels[qid] = ds.queries[qid], {d: 1 for d in gold}
            pools["out" if side == {False} else ("train" if part == "train" else "in")].append(qid)

    train_ids = sorted(pools["train"], key=lambda q: (len(q), q))
    dev_ids = set(random.Random(c.seed + 1).sample(train_ids, min(c.dev_size, len(train_ids))))
    desc = (f"query-generation protocol on ToolLens (seed {c.seed}, {c.ood_tool_share:.0%} of tools out-of-domain, "
            f"descriptions {c.min_desc_words}-{c.max_desc_words} words, <= {c.max_gold} gold APIs)")
    return QuerygenSplit(
        config=c, corpus=kept, in_domain_docs=in_docs,
        train=_subset("querygen-train", kept, queries, qrels, [q for q in train_ids if q not in dev_ids], desc),
        dev=_subset("querygen-dev", kept, queries, qrels, dev_ids, desc),
        test_in=_subset("querygen-in-domain", kept, queries, qrels, pools["in"], desc),
        test_out=_subset("querygen-out-of-domain", kept, queries, qrels, pools["out"], desc),
        counts=counts)


def check_no_contamination(split: QuerygenSplit) -> None:
    """Raise if any in-domain set names an out-of-domain API or vice versa, or if sets share requests."""
    ood = set(split.corpus) - split.in_domain_docs
    for name, ds in split.datasets().items():
        want_in = name != "out-of-domain"
        for qid, rels in ds.qrels.items():
            bad = [d for d in rels if (d in ood) == want_in]
            if bad:
                raise AssertionError(f"{name} request {qid} has gold API {bad[0]} from the other side")
    names = list(split.datasets())
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            both = set(split.datasets()[a].queries) & set(split.datasets()[b].queries)
            if both:
                raise AssertionError(f"sets {a} and {b} share {len(both)} requests (e.g. {sorted(both)[0]})")
