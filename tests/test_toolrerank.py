"""ToolRerank components on hand-built cases, including the paper's case studies (Figures 3 and 4)."""
from __future__ import annotations

import numpy as np
import pytest

from toolkit.data.contract import Document, Query, RetrievalDataset
from toolkit.toolrerank import tables
from toolkit.toolrerank.hierarchy import connected_components, extend_unseen, har_multi, har_single
from toolkit.toolrerank.pipeline import Candidates, ToolRerankConfig, evaluate_method, grid_search, method_lists
from toolkit.toolrerank.splits import make_split, seen_tools
from toolkit.training import batches_no_duplicates, model_dir, params_hash
from toolkit.toolrerank.truncation import adaptive_truncate

TOOL = lambda d: d.split(":")[0]  # noqa: E731  ids are "<tool>:<api>"


# --- Adaptive Truncation ------------------------------------------------------------------------
def test_adaptive_truncation_keeps_seen_up_to_ms_unseen_up_to_mu():
    C = ["s:1", "u:1", "s:2", "u:2", "s:3", "u:3"]
    assert adaptive_truncate(C, TOOL, {"s"}, m_s=2, m_u=5) == ["s:1", "u:1", "u:2"]
    assert adaptive_truncate(C, TOOL, {"s"}, m_s=6, m_u=1) == ["s:1", "s:2", "s:3"]
    assert adaptive_truncate(C, TOOL, {"s"}, m_s=3, m_u=3) == C[:3]          # m_s = m_u: plain Rerank-m
    assert adaptive_truncate(C, TOOL, set(), m_s=0, m_u=4) == C[:4]          # nothing seen
    with pytest.raises(ValueError):
        adaptive_truncate(C, TOOL, set(), -1, 3)


# --- Algorithm 1 ----------------------------------------------------------------------------------
def test_har_single_threshold_and_fallback_to_r1():
    R = ["a:1", "b:1", "a:2", "c:1", "b:2"]
    s = {"a:1": 0.95, "b:1": 0.9, "a:2": 0.5, "c:1": 0.4, "b:2": 0.3}
    assert har_single(R, s, TOOL, tau_s=0.85) == ["a:1", "b:1", "a:2", "b:2", "c:1"]   # X = {a, b}
    assert har_single(R, s, TOOL, tau_s=0.92) == ["a:1", "a:2", "b:1", "c:1", "b:2"]   # X = {a}
    low = {k: v / 10 for k, v in s.items()}                                            # nobody > tau_s:
    assert har_single(R, low, TOOL, tau_s=0.85) == ["a:1", "a:2", "b:1", "c:1", "b:2"]  # r_1's tool only
    assert har_single([], {}, TOOL, 0.5) == []


FIG3_TOP = ["IMDB_API:/get_movies_by_director", "IMDB_API:/get_movies_by_cast_name", "IMDB_API:/get_movies_by_name",
            "MoviesDatabase:/titles/{id}/ratings", "List Movies v3:List Movies"]
FIG3_YEAR = "IMDB_API:/get_movies_by_year"


def _fig3():
    """Rerank-50's list of Figure 3: IMDB_API's /get_movies_by_year at rank 22, fillers of other tools."""
    R = FIG3_TOP + [f"Other{i}:api" for i in range(6, 22)] + [FIG3_YEAR]
    assert R.index(FIG3_YEAR) + 1 == 22
    # scores implied by the figure: only r_1 is confidently positive (> tau_s = 0.85), order = R's
    s = {d: 0.97 - 0.04 * i for i, d in enumerate(R)}
    s[FIG3_YEAR] = 0.05
    assert sorted(R, key=lambda d: -s[d]) == R
    return R, s


def test_figure3_single_tool_case_study():
    R, s = _fig3()
    F = har_single(R, s, TOOL, tau_s=0.85)
    assert F[:5] == FIG3_TOP[:3] + [FIG3_YEAR, "MoviesDatabase:/titles/{id}/ratings"]   # as printed
    assert F.index(FIG3_YEAR) + 1 == 4


def test_figure3_with_extended_list_when_the_gold_api_is_outside_T():
    """I1-Cat is unseen: with m_u = 10, /get_movies_by_year (rank 22) is outside T; the extended list
    fetches every IMDB_API API from the library and the reranker puts it 4th again."""
    R, s = _fig3()
    T = R[:10]
    library = {"IMDB_API": [FIG3_YEAR] + FIG3_TOP[:3]}
    scored = []

    def score_fn(ids):
        scored.extend(ids)
        return {d: s[d] for d in ids}

    F = har_single(T, {d: s[d] for d in T}, TOOL, 0.85, extend=extend_unseen(seen_tools=set()),
                   library_apis=lambda t: library.get(t, []), score_fn=score_fn)
    assert scored == [FIG3_YEAR]
    assert F[:5] == FIG3_TOP[:3] + [FIG3_YEAR, "MoviesDatabase:/titles/{id}/ratings"]
    # IMDB_API seen and extension only for unseen tools: no change
    F = har_single(T, {d: s[d] for d in T}, TOOL, 0.85, extend=extend_unseen(seen_tools={"IMDB_API"}),
                   library_apis=lambda t: library.get(t, []), score_fn=score_fn)
    assert FIG3_YEAR not in F


def test_extended_list_is_reranked_by_score():
    R = ["a:1", "b:1"]
    s = {"a:1": 0.6, "b:1": 0.5}
    F = har_single(R, s, TOOL, 0.9, extend=lambda t: True, library_apis=lambda t: ["a:1", "a:2", "a:3"],
                   score_fn=lambda ids: {"a:2": 0.99, "a:3": 0.1})
    assert F == ["a:2", "a:1", "a:3", "b:1"]
    with pytest.raises(ValueError):
        har_single(R, s, TOOL, 0.9, extend=lambda t: True, library_apis=lambda t: ["a:9"])


# --- Algorithm 2 ----------------------------------------------------------------------------------
FIG4_R = ["SEO Checker:Analyze", "QR Code API v33:QR code image", "QR code generator with multiple datatypes:getQrcode",
          "QRLink API:URL to QR code", "QRickit QR Code QReator:Generate a QR Code image",
          "QR Code API v6:QR Code Image Generator", "QR Code Generator API v6:QR Code Image Generator",
          "Variable Size QR Code API:QR Code Image", "SEO Checker:Analyze V2"]


def test_figure4_multi_tool_case_study():
    s = {d: 0.99 - 0.05 * i for i, d in enumerate(FIG4_R)}
    qr = set(FIG4_R[1:8])
    sim = lambda a, b: 0.9 if (a in qr and b in qr) else 0.2  # noqa: E731  QR-code APIs are near-duplicates
    F = har_multi(FIG4_R, s, TOOL, sim, tau_m=0.7, n=3)
    assert F[:5] == FIG4_R[:4] + ["SEO Checker:Analyze V2"]            # as printed
    assert F.index("SEO Checker:Analyze V2") + 1 == 5                   # was 9th in Rerank-50
    assert F[5:] == FIG4_R[4:8]
    # with tau_m above every similarity each QR API is its own component: nothing moves
    assert har_multi(FIG4_R, s, TOOL, sim, tau_m=0.95, n=3) == FIG4_R


def test_har_multi_components_and_n():
    R = ["a:1", "a:2", "a:3", "b:1", "c:1"]
    s = {"a:1": 0.9, "a:2": 0.8, "a:3": 0.7, "b:1": 0.6, "c:1": 0.5}
    no_sim = lambda a, b: 0.0  # noqa: E731
    assert har_multi(R, s, TOOL, no_sim, 0.7, n=1) == ["a:1", "b:1", "c:1", "a:2", "a:3"]
    assert har_multi(R, s, TOOL, no_sim, 0.7, n=2) == ["a:1", "a:2", "b:1", "c:1", "a:3"]
    # b and c similar: one component {b, c}; with n = 1 only b (better score) goes to F1
    sim = lambda x, y: 0.8 if {x, y} == {"b:1", "c:1"} else 0.0  # noqa: E731
    assert har_multi(R, s, TOOL, sim, 0.7, n=1) == ["a:1", "b:1", "a:2", "a:3", "c:1"]
    # the best-scored members are kept even when R is not sorted by score
    assert har_multi(["a:2", "a:1"], s, TOOL, no_sim, 0.7, n=1) == ["a:1", "a:2"]
    with pytest.raises(ValueError):
        har_multi(R, s, TOOL, no_sim, 0.7, n=0)


def test_har_multi_matrix_path_matches_pair_function():
    """The vectorised path (a sim matrix, scipy components) orders exactly as the pair function does."""
    rng = np.random.default_rng(0)
    for trial in range(200):
        R = [f"{'abcd'[i % 4]}:{i}" for i in rng.permutation(12)]
        E = rng.standard_normal((12, 8)).astype(np.float32)
        E /= np.linalg.norm(E, axis=1, keepdims=True)
        pos = {r: i for i, r in enumerate(R)}
        s = {r: float(v) for r, v in zip(R, rng.random(12))}
        tool = (lambda r: r.split(":")[0]) if trial % 2 else (lambda r: r)  # with and without shared tools
        tau, n = float(rng.choice([0.0, 0.3, 0.6])), int(rng.integers(1, 4))
        pair = har_multi(R, s, tool, lambda a, b: float(E[pos[a]] @ E[pos[b]]), tau, n)
        assert har_multi(R, s, tool, E @ E.T, tau, n) == pair
    with pytest.raises(ValueError, match="shape"):
        har_multi(R, s, tool, np.zeros((2, 2)), 0.5, 1)


def test_connected_components_transitive():
    edges = {(0, 2), (2, 4)}
    comps = connected_components(list("abcde"), lambda i, j: (i, j) in edges)
    assert comps == [[0, 2, 4], [1], [3]]


# --- pipeline on a hand-built dataset -------------------------------------------------------------
def _dataset():
    docs = {}
    for cat, tool, apis in [("C1", "t1", 3), ("C1", "t2", 1), ("C2", "t3", 2), ("C2", "t4", 1)]:
        for a in range(apis):
            d = f"{tool}_{a}"
            docs[d] = Document(d, cat, tool, f"api{a}", f"{tool} api {a}")
    queries = {"q1": Query("q1", "one tool"), "q2": Query("q2", "two tools")}
    qrels = {"q1": {"t1_0": 1, "t1_2": 1}, "q2": {"t2_0": 1, "t3_1": 1}}
    return RetrievalDataset("toy", docs, queries, qrels)


def _candidates(single_pred):
    ds = _dataset()
    ranked = {"q1": ["t1_0", "t3_0", "t2_0", "t4_0", "t3_1", "t1_1"],          # t1_2 is outside C
              "q2": ["t3_0", "t3_1", "t2_0", "t1_0", "t1_1", "t4_0"]}
    scores = {"q1": {"t1_0": 0.95, "t3_0": 0.7, "t2_0": 0.6, "t4_0": 0.3, "t3_1": 0.2, "t1_1": 0.1},
              "q2": {"t3_0": 0.9, "t3_1": 0.8, "t2_0": 0.5, "t1_0": 0.4, "t1_1": 0.3, "t4_0": 0.2}}
    ids = list(ds.corpus)
    emb = np.eye(len(ids), dtype=np.float32)
    extra = {("one tool", "t1_2"): 0.9}
    calls = []

    def score_fn(q, ids_):
        calls.append(tuple(ids_))
        return {d: extra.get((q, d), 0.0) for d in ids_}

    c = Candidates(ds, ranked, scores, seen={"C1/t1", "C1/t2"}, single_pred=single_pred,
                   doc_index={d: i for i, d in enumerate(ids)}, doc_emb=emb, score_fn=score_fn)
    return c, calls


def test_pipeline_methods():
    c, calls = _candidates({"q1": True, "q2": False})
    lists = method_lists(c, "dpr")
    assert lists["q1"][0] == "t1_0"
    assert method_lists(c, "rerank-3")["q1"] == ["t1_0", "t3_0", "t2_0"]
    # seen t1/t2 truncated at m_s = 1 -> T(q1) = [t1_0, t3_0, t4_0, t3_1]; Alg. 1 with X = {t1}; t1 is seen,
    # so no extension by default
    cfg = ToolRerankConfig(m_s=1, m_u=6, tau_s=0.9)
    assert method_lists(c, cfg)["q1"] == ["t1_0", "t3_0", "t4_0", "t3_1"]
    # extension for seen tools brings t1_2 (outside C) and t1_1 back, reranked by score
    got = method_lists(c, ToolRerankConfig(m_s=1, m_u=6, tau_s=0.9, extend_seen=True))["q1"]
    assert got == ["t1_0", "t1_2", "t1_1", "t3_0", "t4_0", "t3_1"]
    assert calls == [("t1_2",)]                     # t1_1 was already scored (it is in C)
    # q2 multi-tool: unit embeddings -> components = tools; n = 1 keeps t3_0, t2_0, t1_0, t4_0
    got = method_lists(c, ToolRerankConfig(m_s=6, m_u=6, n=1))["q2"]
    assert got == ["t3_0", "t2_0", "t1_0", "t4_0", "t3_1", "t1_1"]
    m = evaluate_method(c, "rerank-3")
    assert m["recall@5"] == pytest.approx((0.5 + 1.0) / 2)
    # oracle HAR uses the gold number of tools
    assert method_lists(c, ToolRerankConfig(har="oracle", m_s=6, m_u=6, n=1))["q2"] == got


def test_grid_search_decomposes_exactly():
    c, _ = _candidates({"q1": True, "q2": False})
    grid = {"m_s": [1, 6], "m_u": [6], "tau_s": [0.5, 0.9], "tau_m": [0.7], "n": [1, 2]}
    best, table = grid_search(c, grid)
    assert len(table) == 2
    # brute force over the full grid gives the same best value
    import itertools
    brute = max(evaluate_method(c, ToolRerankConfig(m_s=a, m_u=b, tau_s=ts, tau_m=tm, n=n))["recall@5"]
                for a, b, ts, tm, n in itertools.product(*grid.values()))
    assert evaluate_method(c, best)["recall@5"] == pytest.approx(brute)
    with pytest.raises(ValueError):
        ToolRerankConfig(har="sometimes")


# --- split ----------------------------------------------------------------------------------------
def _toy_split_data():
    docs = {}
    for c in range(4):
        for t in range(5):
            d = f"c{c}t{t}"
            docs[d] = Document(d, f"cat{c}", f"tool{c}_{t}", "api", d)
    qs, qrels = {}, {}
    i = 0
    for c in range(4):
        for t in range(5):
            for _ in range(3):
                qs[f"q{i}"] = Query(f"q{i}", f"single {c} {t} {i}")
                qrels[f"q{i}"] = {f"c{c}t{t}": 1}
                i += 1
            qs[f"q{i}"] = Query(f"q{i}", f"multi {c} {t}")
            qrels[f"q{i}"] = {f"c{c}t{t}": 1, f"c{c}t{(t + 1) % 5}": 1}
            i += 1
            qs[f"q{i}"] = Query(f"q{i}", f"cross {c} {t}")
            qrels[f"q{i}"] = {f"c{c}t{t}": 1, f"c{(c + 1) % 4}t{t}": 1}
            i += 1
    ids = sorted(qs, key=lambda q: int(q[1:]))
    tr = RetrievalDataset("tr", docs, {q: qs[q] for q in ids[::2]}, {q: qrels[q] for q in ids[::2]})
    te = RetrievalDataset("te", docs, {q: qs[q] for q in ids[1::2]}, {q: qrels[q] for q in ids[1::2]})
    return tr, te


def test_make_split_holds_out_tools_and_categories():
    tr, te = _toy_split_data()
    sp = make_split(tr, te, dev_size=4, n_heldout_categories=1, heldout_tool_frac=0.2, min_category_single=1, seed=1)
    assert len(sp.heldout_categories) == 1 and len(sp.heldout_tools) == 3
    seen = seen_tools(sp.train)
    hc = set(sp.heldout_categories)
    assert not any(t.split("/")[0] in hc or t in sp.heldout_tools for t in seen)
    assert not set(sp.dev.queries) & set(sp.train.queries)
    assert not set(sp.dev.queries) & set(sp.pool.queries)
    assert len(sp.train.queries) + len(sp.dev.queries) + len(sp.pool.queries) == len(tr.queries) + len(te.queries)
    for q in sp.subsets["I1-Cat"] + sp.subsets["I2-Cat"]:
        assert all(sp.pool.corpus[d].category in hc for d in sp.pool.qrels[q])
    for q in sp.subsets["I1-Tool"]:
        (d,) = sp.pool.qrels[q]
        assert f"{sp.pool.corpus[d].category}/{sp.pool.corpus[d].tool}" in sp.heldout_tools
    for name in ("I1-Inst", "I2-Inst", "I3-Inst"):
        assert sp.subsets[name] and all(q in te.queries for q in sp.subsets[name])
        for q in sp.subsets[name]:
            assert {f"{sp.pool.corpus[d].category}/{sp.pool.corpus[d].tool}" for d in sp.pool.qrels[q]} <= seen
    # deterministic
    sp2 = make_split(tr, te, dev_size=4, n_heldout_categories=1, heldout_tool_frac=0.2, min_category_single=1, seed=1)
    assert sp2.subsets == sp.subsets and sp2.heldout_tools == sp.heldout_tools


# --- training helpers -----------------------------------------------------------------------------
def test_batches_have_no_duplicate_keys_and_keep_every_item():
    items = [("q1", "d1"), ("q1", "d2"), ("q2", "d1"), ("q3", "d3"), ("q4", "d4")]
    batches = batches_no_duplicates(items, 3, seed=0)
    assert sorted(x for b in batches for x in b) == sorted(items)
    for b in batches:
        keys = [k for it in b for k in it]
        assert len(keys) == len(set(keys)) and len(b) <= 3
    assert batches == batches_no_duplicates(items, 3, seed=0)


def test_min_size_drops_the_tail_a_popular_document_leaves():
    # one document is the positive of 40 of 100 pairs: each batch of 8 holds one of them, so after the full
    # batches the greedy pass is left with that document's pairs alone, one per batch
    items = [(f"q{i}", "popular" if i < 40 else f"d{i}") for i in range(100)]
    every = batches_no_duplicates(items, 8, seed=0)
    sizes = [len(b) for b in every]
    assert sum(sizes) == 100 and sizes.count(1) > 20                      # the tail: tiny batches at the end
    kept = batches_no_duplicates(items, 8, seed=0, min_size=4)
    assert all(len(b) >= 4 for b in kept) and [b for b in every if len(b) >= 4] == kept
    assert all(sum(d == "popular" for _, d in b) == 1 for b in kept)      # still once in every batch
    assert {x for b in kept for x in b} >= {it for it in items if it[1] != "popular"}   # only tail pairs dropped


def test_early_stopping_passes_give_the_greedy_full_pass_batches():
    # the specification: every pass scans the whole pending list (the implementation stops once a batch is full)
    import random

    def full_passes(items, batch_size, seed, keys=lambda it: it, min_size=1):
        pending = list(items)
        random.Random(seed).shuffle(pending)
        out = []
        while pending:
            batch, used, rest = [], set(), []
            for it in pending:
                k = set(keys(it))
                if len(batch) < batch_size and not (k & used):
                    batch.append(it)
                    used |= k
                else:
                    rest.append(it)
            if len(batch) >= min_size:
                out.append(batch)
            pending = rest
        return out

    rng = random.Random(7)
    items = [(f"q{rng.randrange(60)}", f"d{min(rng.randrange(50), rng.randrange(50))}") for _ in range(400)]
    for size, min_size, keys in [(8, 1, None), (8, 4, None), (5, 1, lambda it: ()), (32, 16, lambda it: it[1:])]:
        kw = {"keys": keys} if keys else {}
        got = batches_no_duplicates(items, size, seed=3, min_size=min_size, **kw)
        assert got == full_passes(items, size, seed=3, min_size=min_size, **kw), (size, min_size)


def test_model_dir_hash(tmp_path):
    a = model_dir("smoke", "x", {"lr": 2e-5, "n": 1}, root=tmp_path)
    b = model_dir("smoke", "x", {"n": 1, "lr": 2e-5}, root=tmp_path)
    assert a == b and (a / "params.json").is_file()
    assert params_hash({"lr": 1e-5}) != params_hash({"lr": 2e-5})


def test_train_loop_resumes_from_checkpoint(tmp_path):
    torch = pytest.importorskip("torch")
    from toolkit.training import train_loop

    def make():
        torch.manual_seed(0)
        return torch.nn.Linear(2, 1)

    data = [[(1.0, 2.0, 1.0)], [(0.5, -1.0, 0.0)], [(2.0, 0.0, 1.0)], [(0.0, 1.0, 0.0)]]

    def loss_for(m):
        return lambda b: ((m(torch.tensor([[x, y] for x, y, _ in b])).squeeze(-1)
                           - torch.tensor([t for *_, t in b])) ** 2).mean()

    full = make()
    train_loop(full, loss_for(full), data, tmp_path / "full", lr=0.1, checkpoint_every=2, log=None)
    # interrupted after step 2 (checkpoint written), then resumed
    part = make()
    with pytest.raises(RuntimeError):
        def boom(b, _n=[0], _f=loss_for(part)):
            _n[0] += 1
            if _n[0] == 3:
                raise RuntimeError("killed")
            return _f(b)
        train_loop(part, boom, data, tmp_path / "part", lr=0.1, checkpoint_every=2, log=None)
    resumed = make()
    stats = train_loop(resumed, loss_for(resumed), data, tmp_path / "part", lr=0.1, checkpoint_every=2, log=None)
    assert stats["resumed_from_step"] == 2 and stats["steps"] == 4
    for p, q in zip(full.parameters(), resumed.parameters()):
        assert torch.allclose(p, q, atol=1e-6)


# --- analysis, tables, profiles -------------------------------------------------------------------
def test_coverage_statistics_and_proxy():
    from toolkit.toolrerank import analysis
    c, _ = _candidates({"q1": True, "q2": False})
    # gold: q1 {t1_0 (rank 1), t1_2 (not retrieved)}, q2 {t2_0 (rank 3), t3_1 (rank 2)}
    assert analysis.gold_in_top({"x": c}, 2) == pytest.approx(2 / 4)
    assert analysis.gold_in_top({"x": c}, 10) == pytest.approx(3 / 4)
    cfg = ToolRerankConfig(m_s=1, m_u=6)
    out = analysis.gold_outside_truncation({"x": c}, cfg)
    # seen tools t1, t2: gold t1_0 (in T), t1_2 (outside), t2_0 (rank 3 > m_s: outside); unseen t3: t3_1 in T
    assert out["seen"] == pytest.approx(2 / 3) and out["unseen"] == 0.0
    assert analysis.outside_T_sharing_tool({"x": c}, cfg) == 1      # t1_2 shares t1 with t1_0 in T
    assert analysis.all_gold_in_top(c, "rerank-6", k=5) == pytest.approx(1 / 2)
    text = analysis.format_case(c, "q2", "rerank-6", ToolRerankConfig(m_s=6, m_u=6, n=1), top=2)
    assert text.startswith("Query: two tools") and "Reranking results (ToolRerank):" in text
    hit = analysis.find_case(c, "rerank-6", ToolRerankConfig(m_s=6, m_u=6, n=1), top=2)
    assert hit is None            # t2_0 moves up to 2 but pushes gold t3_1 out of the top 2: not a clean lift
    cfg1 = ToolRerankConfig(m_s=6, m_u=6, tau_s=0.9, extend_seen=True)
    hit = analysis.find_case(c, "rerank-6", cfg1, top=2, single=True)
    assert hit == {"qid": "q1", "doc": "t1_2", "baseline_rank": 10 ** 6, "toolrerank_rank": 2}
    assert "(not in the list: Tool: t1, API: api2)" in analysis.format_case(c, "q1", "rerank-6", cfg1, top=2)
    curves = analysis.recall_vs_candidates({"x": c}, [1, 6])
    assert curves["x"][1] == pytest.approx((0.5 + 0.0) / 2) and "dpr" in curves["x"]


def test_seen_share_and_reranker_scores_by_label():
    from toolkit.toolrerank import analysis
    c, _ = _candidates({"q1": True, "q2": False})
    # seen tools t1, t2. top 2: q1 dpr [t1_0, t3_0] -> 1/2; q2 dpr [t3_0, t3_1] -> 0
    assert analysis.seen_share_in_top(c, "dpr", k=2) == pytest.approx(0.25)
    # rerank-6 by score: q1 [t1_0 .95, t3_0 .7] -> 1/2; q2 [t3_0 .9, t3_1 .8] -> 0
    assert analysis.seen_share_in_top(c, "rerank-6", k=2) == pytest.approx(0.25)
    c.scores["q2"]["t1_0"] = 0.99                  # the reranker now prefers a seen-tool API for q2
    assert analysis.seen_share_in_top(c, "rerank-6", k=2) == pytest.approx((0.5 + 0.5) / 2)
    got = analysis.reranker_scores_by_label(c, depth=6)
    # gold in C: q1 t1_0 .95; q2 t3_1 .8, t2_0 .5
    assert got["gold"] == pytest.approx((0.95 + 0.8 + 0.5) / 3)
    # non-gold seen-tool APIs (t1, t2): q1 t2_0 .6, t1_1 .1; q2 t1_0 .99, t1_1 .3
    assert got["other (seen tool)"] == pytest.approx((0.6 + 0.1 + 0.99 + 0.3) / 4)
    assert got["other (unseen tool)"] == pytest.approx((0.7 + 0.3 + 0.2 + 0.9 + 0.2) / 5)


def test_tables_averages_and_keys():
    from toolkit.toolrerank import tables
    vals = {n: {"recall@5": v} for n, v in zip(["I1-Inst", "I2-Inst", "I3-Inst", "I1-Tool", "I1-Cat", "I2-Cat"],
                                               [0.9, 0.8, 0.7, 0.6, 0.5, 0.4])}
    tables.add_averages(vals, ["seen-avg", "unseen-avg", "all-avg", "single-avg", "multi-avg"])
    assert vals["seen-avg"]["recall@5"] == pytest.approx(0.8)
    assert vals["single-avg"]["recall@5"] == pytest.approx((0.9 + 0.6 + 0.5) / 3)
    assert vals["all-avg"]["recall@5"] == pytest.approx(0.65)
    assert tables.dataset_key("I1-Cat") == "toolbench-g1-category" and tables.dataset_key("all-avg") == "all-avg"


def test_profiles_hash_only_training_parameters():
    from toolkit.toolrerank.experiment import PROFILES, Setup
    assert set(PROFILES) == {"smoke", "standard", "paper"}
    p = Setup().training_params()
    assert "profile" not in p and "threads" not in p and "ce_neg_source" in p
    assert Setup(ce_neg_source="base").reranker_dir != Setup().reranker_dir
    assert PROFILES["paper"].base == "bert-base-uncased"
    # the default negative pool keeps the cache keys of earlier rerankers; "seen" is a new model
    assert "ce_neg_pool" not in p and Setup(ce_neg_pool="seen").reranker_dir != Setup().reranker_dir
    with pytest.raises(ValueError, match="ce_neg_pool"):
        Setup(ce_neg_pool="unseen")


def test_negative_pool_keeps_held_out_tools_out_of_training():
    from toolkit.toolrerank.experiment import negative_pool
    ds = _dataset()
    train = ds.subset(["q1"])                       # gold tool t1 only: t2, t3, t4 are not seen
    ids, texts = negative_pool(train, "seen")
    assert ids == ["t1_0", "t1_1", "t1_2"] and texts[0] == "t1 api 0"
    assert negative_pool(train, "all")[0] == list(ds.corpus)
    with pytest.raises(ValueError, match="negative pool"):
        negative_pool(train, "none")


def test_release_split_reads_toolbench_release_format(tmp_path):
    import json as _json
    from toolkit.toolrerank.splits import release_split
    for g, n in [("G1", 2), ("G2", 1), ("G3", 1)]:
        d = tmp_path / g
        d.mkdir()
        rows = ["docid\tdocument_content"]
        for i in range(2):
            rows.append(f"{i}\t" + _json.dumps({"category_name": "Data", "tool_name": f"Tool {g}", "api_name": f"api {i}",
                                                "api_description": "x"}))
        (d / "corpus.tsv").write_text("\n".join(rows) + "\n")
        (d / "train.query.txt").write_text("".join(f"{k}\tquery {g} {k}\n" for k in range(n)))
        (d / "qrels.train.tsv").write_text("".join(f"{k}\t0\t{k % 2}\t1\n" for k in range(n)))
    test = _dataset()
    test = RetrievalDataset("t", test.corpus, {"G1_tool/1": Query("G1_tool/1", "x", "G1_tool")},
                            {"G1_tool/1": {"t1_0": 1}})
    sp = release_split(str(tmp_path), dev_size=1, seed=0, test=test)
    assert len(sp.train.queries) == 3 and len(sp.dev.queries) == 1
    assert "Data/tool_g2/api_0" in sp.train.corpus          # re-keyed to <category>/<tool>/<api>
    assert sp.subsets["I1-Tool"] == ["G1_tool/1"] and sp.subsets["I1-Inst"] == []


# --- training examples ----------------------------------------------------------------------------
def _train_ds():
    corpus = {d: Document(d, "c", TOOL(d), d, f"doc {d}") for d in ["a:1", "a:2", "b:1", "c:1", "d:1"]}
    queries = {"q1": Query("q1", "one tool"), "q2": Query("q2", "three tools")}
    return RetrievalDataset("t", corpus, queries, {"q1": {"a:1": 1}, "q2": {"b:1": 1, "c:1": 1, "a:2": 1}})


def test_positive_pairs_every_or_one_gold_api_per_query():
    from toolkit.retrieval.dual_encoder import positive_pairs
    ds = _train_ds()
    assert positive_pairs(ds) == [("one tool", "doc a:1"), ("three tools", "doc b:1"), ("three tools", "doc c:1"),
                                  ("three tools", "doc a:2")]
    one = positive_pairs(ds, per_query=1, seed=3)
    assert [q for q, _ in one] == ["one tool", "three tools"]          # every query exactly once
    assert one[1][1] in {"doc b:1", "doc c:1", "doc a:2"}
    assert one == positive_pairs(ds, per_query=1, seed=3)              # seeded


def test_reranker_pairs_positives_and_hard_negatives():
    from toolkit.toolrerank.reranker import sample_reranker_pairs
    ds = _train_ds()
    ranked = {"q1": ["b:1", "a:1", "c:1", "d:1"], "q2": ["a:1", "b:1", "d:1"]}
    pairs = sample_reranker_pairs(ds, ranked, n_neg=1, depth=2)
    assert [(q, d, y) for q, d, y in pairs if y == 1.0] == [("one tool", "doc a:1", 1.0), ("three tools", "doc b:1", 1.0),
                                                            ("three tools", "doc c:1", 1.0), ("three tools", "doc a:2", 1.0)]
    # negatives come from the top `depth` only and are never gold
    assert [(q, d) for q, d, y in pairs if y == 0.0] == [("one tool", "doc b:1"), ("three tools", "doc a:1")]
    one = sample_reranker_pairs(ds, ranked, n_neg=1, depth=2, n_pos=1, seed=1)
    assert [y for _, _, y in one] == [1.0, 0.0, 1.0, 0.0]
    # per gold API: q1 (1 gold) gets 1 negative; q2 (3 gold) would get 3 but its top 3 hold only 2 non-gold
    per = sample_reranker_pairs(ds, ranked, n_neg=1, depth=3, per_positive=True)
    negs = [(q, d) for q, d, y in per if y == 0.0]
    assert [q for q, _ in negs] == ["one tool", "three tools", "three tools"]
    assert {d for q, d in negs if q == "three tools"} == {"doc a:1", "doc d:1"}


def test_setup_negatives_per_positive_is_checked_and_keeps_older_keys():
    from toolkit.toolrerank.experiment import PROFILES, Setup
    with pytest.raises(ValueError, match="ce_neg_per must be one of"):
        Setup(ce_neg_per="api")
    # the default ("query") stays out of the reranker's cache key: models trained before the field keep their keys
    assert "ce_neg_per" not in Setup().stage_params("reranker")
    assert PROFILES["standard"].stage_params("reranker")["ce_neg_per"] == "positive"


def test_claims_read_the_tables():
    from toolkit.toolrerank.analysis import claims
    R = lambda x: {"all-avg": {"recall@5": x}}     # noqa: E731
    t3 = {"DPR": R(0.5), "Rerank-10": R(0.6), "Rerank-30": R(0.55), "Rerank-50": R(0.4), "ToolRerank": R(0.7)}
    t5 = {"ToolRerank (m_s=10, m_u=50)": R(0.7), "ToolRerank (m_s=10, m_u=10)": R(0.65),
          "ToolRerank (m_s=50, m_u=10)": R(0.6)}
    t6 = {"ToolRerank (none)": {"single-avg": {"recall@5": 0.5}, "multi-avg": {"recall@5": 0.4}},
          "ToolRerank (single)": {"single-avg": {"recall@5": 0.6}, "multi-avg": {"recall@5": 0.3}},
          "ToolRerank (multi)": {"single-avg": {"recall@5": 0.5}, "multi-avg": {"recall@5": 0.4}}}
    t7 = {"ToolRerank (extended seen=no, unseen=yes)": {"single-avg": {"recall@5": 0.6}},
          "ToolRerank (extended seen=no, unseen=no)": {"single-avg": {"recall@5": 0.5}}}
    fig = [{"tools": "seen", "m": 10, "recall@5": 0.6}, {"tools": "seen", "m": 30, "recall@5": 0.5},
           {"tools": "unseen", "m": 10, "recall@5": 0.5}, {"tools": "unseen", "m": 30, "recall@5": 0.6},
           {"tools": "unseen", "m": "dpr", "recall@5": 0.9}]
    got = {c["claim"].split(" (")[0]: c["here"] for c in claims(t3, t5, t6, t7, fig)}
    # without per-query values every claim is judged by direction; HAR's multi-tool rows tie (0.4 = 0.4): within noise
    assert got == {"reranking helps": "not held", "ToolRerank > every Rerank-m": "held",
                   "fewer candidates for seen tools, more for unseen": "held",
                   "m_s < m_u beats m_s = m_u and m_s > m_u": "held",
                   "HAR helps when it matches the query type": "within noise",
                   "extended list for unseen tools only is best": "held"}
    assert all(c["basis"].startswith("direction") for c in claims(t3, t5, t6, t7, fig))
    t3["Rerank-50"] = R(0.51)
    assert claims(t3, {}, {}, {})[0]["here"] == "held"
    assert claims({}, {}, {}, {}) == []


def test_claims_give_the_macro_randomization_p_value_with_per_query_values():
    import numpy as np

    from toolkit.significance import p_text

    from toolkit.toolrerank.analysis import claims
    from toolkit.toolrerank.splits import SUBSETS
    r = np.random.default_rng(0)
    base = {g: {f"{g}-q{i}": float(x) for i, x in enumerate(r.integers(0, 2, 40))} for g in SUBSETS}
    up = {g: {q: 1.0 for q in qs} for g, qs in base.items()}                      # every query right
    pq = {"DPR": base, "Rerank-10": up, "Rerank-30": base, "Rerank-50": base, "ToolRerank": up}
    mean = lambda d: float(np.mean([np.mean(list(v.values())) for v in d.values()]))   # noqa: E731
    t3 = {m: {"all-avg": {"recall@5": mean(v)}} for m, v in pq.items()}
    rows = {c["claim"].split(" (")[0]: c for c in claims(t3, {}, {}, {}, per_query=pq)}
    helps = rows["reranking helps"]
    assert helps["here"] == "within noise"                        # Rerank-30/50 tie DPR: a tie is never a verdict
    assert rows["ToolRerank > every Rerank-m"]["here"] == "within noise"
    parts = {t["comparison"]: t for t in helps["tests"]}
    assert parts["Rerank-10 vs DPR"]["p"] < 0.01 and parts["Rerank-30 vs DPR"]["p"] == 1.0
    assert parts["Rerank-10 vs DPR"]["diff"] == pytest.approx(mean(up) - mean(base))
    assert helps["p"] == p_text(helps["tests"])                            # the column formatted from the tests
    assert rows["ToolRerank > every Rerank-m"]["p"] == "ToolRerank vs Rerank-10 p=1.000"   # a tie: no difference
    assert claims(t3, {}, {}, {})[0]["p"] == ""                   # no per-query values: no p


def test_table_functions_on_a_toy_candidate_set():
    from toolkit.toolrerank.splits import SINGLE_SUBSETS, SUBSETS
    good, _ = _candidates({"q1": True, "q2": False})
    bad, _ = _candidates({"q1": False, "q2": False})
    cands = {name: good for name in SUBSETS}
    best = ToolRerankConfig(m_s=3, m_u=6)
    bm25 = {name: {"ndcg@5": 0.1, "recall@5": 0.2} for name in SUBSETS}
    pq = {}
    t3 = tables.table3(cands, bm25, best, per_query=pq)
    assert list(t3) == ["BM25", "DPR", "Rerank-10", "Rerank-30", "Rerank-50", "ToolRerank"]
    assert t3["BM25"]["all-avg"]["recall@5"] == pytest.approx(0.2)
    assert t3["DPR"] == tables.values(cands, "dpr")
    # the per-query values come from the same evaluation: their means are the table's cells
    assert set(pq) == set(t3) - {"BM25"} and set(pq["DPR"]) == set(SUBSETS)
    assert all(np.mean(list(pq[m][g].values())) == t3[m][g]["recall@5"] for m in pq for g in SUBSETS)
    assert len(tables.table5(cands, best, pq)) == 9 and len(tables.table6(cands, best, pq)) == 5
    assert set(pq) == set(tables.methods(best)) | set(tables.methods5(best)) | set(tables.methods6(best))
    t7 = tables.table7(cands, best)
    assert all(set(v) == set(SINGLE_SUBSETS) | {"single-avg"} for v in t7.values())
    # the classifier's accuracy: both right, then q1 (one tool) called multi-tool
    assert tables.classifier_accuracy({"x": good}) == {"x": 1.0}
    assert tables.classifier_accuracy({"x": bad}) == {"x": 0.5}
    proxy = tables.table4_proxy({"I1-Inst": good}, best)
    assert set(proxy) == set(t3) - {"BM25"} and 0 <= proxy["DPR"]["I1-Inst"] <= 1
    tr = tables.transfer({"toolbench-g1-tool": good}, best, seen={"C1/t1"})
    assert tr["queries"] == {"I1-Tool": 2} and tr["gold_seen_share"]["I1-Tool"] == pytest.approx(0.5)
    # each HAR row against HAR off, paired on the same queries: the difference is the cells' difference
    tests = {t["comparison"]: t for t in tr["har_tests"]}
    assert set(tests) == {f"{label} vs ToolRerank (none)" for label in tr["har"] if label != "ToolRerank (none)"}
    for label in tr["har"]:
        if label != "ToolRerank (none)":
            want = tr["har"][label]["I1-Tool"]["recall@5"] - tr["har"]["ToolRerank (none)"]["I1-Tool"]["recall@5"]
            assert tests[f"{label} vs ToolRerank (none)"]["diff"] == pytest.approx(want)
            assert 0 < tests[f"{label} vs ToolRerank (none)"]["p"] <= 1
    rows = tables.fig1a(cands, ms=[1, 3])
    assert {(r["tools"], r["m"]) for r in rows} == {(p, m) for p in ("seen", "unseen") for m in (1, 3, "dpr")}


def test_score_cache_replays_every_method_without_a_model(tmp_path):
    from toolkit.toolrerank import score_cache
    c, _ = _candidates({"q1": True, "q2": False})
    methods = ["dpr", "rerank-3", ToolRerankConfig(m_s=1, m_u=6, tau_s=0.9),
               ToolRerankConfig(m_s=1, m_u=6, tau_s=0.9, extend_seen=True),        # scores t1_2 on demand
               ToolRerankConfig(m_s=6, m_u=6, har="multi", tau_m=0.5, n=2)]       # Algorithm 2: embeddings
    want = [method_lists(c, m) for m in methods]
    path = score_cache.save(tmp_path / "toy.json.gz", {"toy": c}, {"note": "test"})
    r = score_cache.load(path, {"toy": c.dataset}, c.seen)["toy"]
    assert [method_lists(r, m) for m in methods] == want
    assert score_cache.meta(path) == {"note": "test"}
    # an API the writing run never scored: a clear miss, not a silent zero
    fresh = score_cache.load(path, {"toy": c.dataset}, c.seen)["toy"]
    with pytest.raises(score_cache.ScoreCacheMiss, match="no cached reranker score"):
        fresh.score_fn("two tools", ["t4_1"])
    with pytest.raises(KeyError, match="has no scores for 'other'"):
        score_cache.load(path, {"other": c.dataset}, c.seen)


def test_score_cache_stores_shared_embeddings_once_and_reads_version_1_files(tmp_path):
    import base64, gzip, json
    from toolkit.toolrerank import score_cache
    c, _ = _candidates({"q1": True, "q2": False})
    path = score_cache.save(tmp_path / "two.json.gz", {"a": c, "b": c})
    data = json.load(gzip.open(path, "rt"))
    n_docs = len(data["sets"]["a"]["docs"])
    assert data["version"] == 2 and data["emb_shape"][0] == n_docs      # set b reuses a's rows
    assert data["sets"]["a"]["emb_rows"] == data["sets"]["b"]["emb_rows"]
    # the same candidates in the version-1 layout (JSON floats, embeddings per set) load to the same values
    docs = data["sets"]["a"]["docs"]
    pos = {d: i for i, d in enumerate(docs)}
    emb = np.stack([c.doc_emb[c.doc_index[d]] for d in docs]).astype(np.float16)
    v1 = {"version": 1, "meta": {}, "sets": {"a": {
        "docs": docs, "ranked": {q: [pos[d] for d in c.ranked[q]] for q in c.dataset.queries},
        "scores": {q: {str(pos[d]): float(v) for d, v in c.scores[q].items()} for q in c.dataset.queries},
        "single": {q: bool(c.single_pred[q]) for q in c.dataset.queries},
        "emb": base64.b64encode(emb.tobytes()).decode(), "emb_shape": list(emb.shape)}}}
    old = tmp_path / "v1.json.gz"
    score_cache.write_file(old, v1)
    got, want = score_cache.load(old, {"a": c.dataset}, c.seen)["a"], score_cache.load(path, {"a": c.dataset}, c.seen)["a"]
    assert got.scores == want.scores and got.ranked == want.ranked and got.single_pred == want.single_pred
    assert np.array_equal(got.doc_emb, want.doc_emb)
    # lossless either way: these toy scores are not float32 values, so they stay float64; a reranker's are float32
    assert got.scores == c.scores and data["sets"]["a"]["score_dtype"] == "float64"
    from dataclasses import replace
    c32 = replace(c, scores={q: {d: float(np.float32(v)) for d, v in c.scores[q].items()} for q in c.scores})
    p32 = score_cache.save(tmp_path / "f32.json.gz", {"a": c32})
    assert json.load(gzip.open(p32, "rt"))["sets"]["a"]["score_dtype"] == "float32"
    assert score_cache.load(p32, {"a": c.dataset}, c.seen)["a"].scores == c32.scores
    score_cache.write_file(old, {**v1, "version": 7})
    with pytest.raises(ValueError, match="version 7"):
        score_cache.load(old, {"a": c.dataset}, c.seen)


def test_choosing_epochs_on_dev_is_part_of_a_stages_cache_key_only_when_on():
    from toolkit.toolrerank.experiment import Setup
    base = Setup()
    assert "de_select_on_dev" not in base.stage_params("dual_encoder")          # old models keep their keys
    on = Setup(de_select_on_dev=True)
    assert on.stage_params("dual_encoder")["dev_eval_queries"] == 300
    assert on.stage_params("reranker") == base.stage_params("reranker")
    assert Setup(ce_select_on_dev=True).reranker_dir != base.reranker_dir


def test_convergence_reads_the_learning_curves():
    from toolkit.toolrerank.analysis import convergence
    got = convergence({"dual_encoder": {"epoch_curve": [{"dev": 0.579}, {"dev": 0.636}], "best_epoch": 2},
                       "classifier": {"epoch_curve": [{"dev": 0.897}, {"dev": 0.930}, {"dev": 0.923}], "best_epoch": 2},
                       "reranker": {"steps": 3}})
    assert set(got) == {"dual_encoder", "classifier"}
    assert "still rising at the last epoch (+0.057): not shown converged" in got["dual_encoder"]
    assert got["classifier"].startswith("0.897 → 0.930 → 0.923 (kept epoch 2; flat or falling")


def test_compare_runs_puts_verdicts_and_premise_side_by_side():
    from toolkit.toolrerank.analysis import compare_runs
    cell = lambda t, d, m, k, v: {"table": t, "dataset": d, "method": m, "metric": k, "value": v}  # noqa: E731
    weak = {"claims": [{"claim": "reranking helps (every Rerank-m > DPR, all-avg)", "holds": "no"}],
            "cells": [cell("s4.2", "seen", "DPR", "gold_in_top10", 0.69), cell("s4.2", "unseen", "DPR", "gold_in_top10", 0.82),
                      cell("3", "all-avg", "DPR", "recall@5", 0.634)]}
    strong = {"claims": [{"claim": "reranking helps (every Rerank-m > DPR, all-avg)", "holds": "yes"}],
              "cells": [cell("s4.2", "seen", "DPR", "gold_in_top10", 0.895), cell("s4.2", "unseen", "DPR", "gold_in_top10", 0.82),
                        cell("3", "all-avg", "DPR", "recall@5", 0.71)]}
    df = compare_runs({"weak": weak, "full": strong})
    # runs recorded before issue 84 ("holds": yes / no by direction) read in the shared verdicts
    assert df.loc[("claim", "reranking helps"), "weak"] == "not held" and df.loc[("claim", "reranking helps"), "changed"] == "yes"
    assert df.loc[("gold in DPR top 10 (%)", "seen"), "full"] == pytest.approx(89.5)
    assert df.loc[("gold in DPR top 10 (%)", "unseen"), "changed"] == "no"
    assert df.loc[("DPR Recall@5 (%)", "all-avg"), "weak"] == pytest.approx(63.4)
    assert np.isnan(df.loc[("ToolRerank Recall@5 (%)", "all-avg"), "weak"])   # a value the run lacks: NaN, not 0
