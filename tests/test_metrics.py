"""toolkit.metrics against pytrec_eval (trec_eval), ranx, sklearn and hand-computed examples."""
import numpy as np
import pytest
import pytrec_eval

from toolkit.metrics import evaluate, metric_names, rank

KS = (1, 3, 5, 10)


def random_data(seed, n_q=50, n_docs=40, graded=False, tie_free=False):
    """Seeded run/qrels with tied integer scores (or distinct ones), doc ids d0..d39 (so that
    "d9" vs "d10" exercises string order), 0-12 relevant docs per query (often more than k),
    judged-nonrelevant and negative judgments, short and empty runs, a qrels query missing from
    the run and a run query missing from the qrels."""
    rng = np.random.default_rng(seed)
    docs = [f"d{i}" for i in range(n_docs)]
    run, qrels = {}, {}
    for q in range(n_q):
        qid = f"q{q}"
        rel = rng.choice(n_docs, rng.integers(0 if not tie_free else 1, 13), replace=False)
        qrels[qid] = {docs[j]: int(rng.integers(1, 4)) if graded else 1 for j in rel}
        for j in rng.choice(n_docs, 3, replace=False):
            qrels[qid].setdefault(docs[j], int(rng.integers(-1, 1)))
        if q % 10 == 9 and not tie_free:
            continue                                   # qrels query missing from the run
        if q % 10 == 8 and not tie_free:
            run[qid] = {}                              # empty run
            continue
        ret = rng.choice(n_docs, rng.integers(0 if not tie_free else 1, 31), replace=False)
        scores = rng.permutation(len(ret)) / 7.0 if tie_free else rng.integers(0, 5, len(ret))
        run[qid] = {docs[j]: float(s) for j, s in zip(ret, scores)}
    if not tie_free:
        run["not_in_qrels"] = {"d1": 1.0}
    return run, qrels


def pytrec(run, qrels, measures):
    return pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)


# --- tie rule -----------------------------------------------------------------------------------

def test_rank_tie_rule_examples():
    assert rank({"a": 1, "b": 1, "c": 2}) == ["c", "b", "a"]
    assert rank({"d10": 0.5, "d9": 0.5, "d1": 0.7}) == ["d1", "d9", "d10"]
    assert rank({"a": 1.0 + 1e-9, "b": 1.0}) == ["b", "a"]      # equal as float32: a tie
    assert rank({"a": 1.0 + 1e-6, "b": 1.0}) == ["a", "b"]
    assert rank({"x": 3, "y": 2, "z": 1}, k=2) == ["x", "y"]
    assert rank({}) == []


@pytest.mark.parametrize("kind", ["integers", "near_ties"])
def test_rank_order_matches_trec_eval(kind):
    # One query per doc, same run, that doc the only relevant one: trec_eval's recip_rank gives
    # the doc's position, which must be where rank() puts it.
    rng = np.random.default_rng(1)
    docs = [f"d{i}" for i in range(30)] + ["D", "a", "Zz", "é"]
    if kind == "integers":
        scores = rng.integers(0, 4, len(docs)).astype(float)
    else:  # float64 scores that differ below float32 resolution, plus exact ties
        scores = 0.5 + rng.integers(0, 3, len(docs)) * 1e-9 + rng.integers(0, 2, len(docs)) * 1e-3
    run_q = dict(zip(docs, scores.tolist()))
    res = pytrec({d: run_q for d in docs}, {d: {d: 1} for d in docs}, {"recip_rank"})
    trec_order = sorted(docs, key=lambda d: 1 / res[d]["recip_rank"])
    assert rank(run_q) == trec_order
    assert rank(run_q, k=7) == trec_order[:7]


# --- agreement with trec_eval / ranx / sklearn --------------------------------------------------

@pytest.mark.parametrize("graded", [False, True])
def test_ndcg_recall_precision_map_match_pytrec_eval_with_ties(graded):
    run, qrels = random_data(seed=7 + graded, graded=graded)
    # the data covers the cases that matter
    assert any(len([v for v in r.values() if v > 0]) > 10 for r in qrels.values())
    assert any(q not in run for q in qrels) and any(run.get(q) == {} for q in qrels)
    assert any(run.get(q) and not any(qrels[q].get(d, 0) > 0 for d in run[q]) for q in qrels)
    ks = ",".join(map(str, KS))
    ref = pytrec(run, qrels, {f"ndcg_cut.{ks}", f"recall.{ks}", f"P.{ks}", f"map_cut.{ks}"})
    names = {"ndcg": "ndcg_cut", "recall": "recall", "precision": "P", "map": "map_cut"}
    ours = evaluate(run, qrels, [f"{m}@{k}" for m in names for k in KS], per_query=True)
    for m, tm in names.items():
        for k in KS:
            exp = np.array([ref.get(q, {}).get(f"{tm}_{k}", 0.0) for q in qrels])
            got = np.array([ours[f"{m}@{k}"][q] for q in qrels])
            np.testing.assert_allclose(got, exp, rtol=0, atol=1e-9, err_msg=f"{m}@{k}")


def test_mrr_matches_pytrec_recip_rank():
    run, qrels = random_data(seed=11)
    ref = pytrec(run, qrels, {"recip_rank"})
    for k in KS:
        ours = evaluate(run, qrels, [f"mrr@{k}"], per_query=True)[f"mrr@{k}"]
        # full-run reciprocal rank counts only if the first relevant doc is within the top k ...
        rr = {q: ref.get(q, {}).get("recip_rank", 0.0) for q in qrels}
        exp = [v if v >= 1 / k - 1e-12 else 0.0 for v in rr.values()]
        np.testing.assert_allclose([ours[q] for q in qrels], exp, rtol=0, atol=1e-9)
        # ... and equals trec_eval on the run cut at k
        cut = {q: {d: run[q][d] for d in rank(run[q], k)} for q in run}
        ref_cut = pytrec(cut, qrels, {"recip_rank"})
        exp = [ref_cut.get(q, {}).get("recip_rank", 0.0) for q in qrels]
        np.testing.assert_allclose([ours[q] for q in qrels], exp, rtol=0, atol=1e-9)


# ranx JIT-compiles with numba: ~5 s with a warm cache, 81 s cold (a fresh machine); pytrec_eval above checks every
# metric, ties included, so make test leaves this second reference to make test-references (CI runs both)
@pytest.mark.reference
def test_matches_ranx_on_tie_free_runs():
    ranx = pytest.importorskip("ranx")
    run, qrels = random_data(seed=5, tie_free=True)
    names = [f"{m}@{k}" for m in ("ndcg", "recall", "precision", "mrr", "map") for k in KS]
    ref = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), names, make_comparable=True)
    ours = evaluate(run, qrels, names)
    for n in names:
        assert ours[n] == pytest.approx(float(ref[n]), abs=1e-9), n


def test_sklearn_ties_match_sklearn_ndcg_score():
    from sklearn.metrics import ndcg_score

    rng = np.random.default_rng(3)
    docs = [f"t{i}" for i in range(30)]
    n_diff = 0
    for q in range(50):
        y_true = np.zeros(len(docs))
        y_true[rng.choice(len(docs), rng.integers(1, 9), replace=False)] = rng.integers(1, 3)
        y_score = rng.integers(0, 4, len(docs)).astype(float)
        qrels = {"q": {d: int(t) for d, t in zip(docs, y_true) if t > 0}}
        # whole candidate set scored, as in ToolBench's evaluator
        run = {"q": dict(zip(docs, y_score))}
        # the same query with a run omitting low-scored docs (>= 10 kept): sklearn scores them
        # below everything else
        keep = y_score >= np.sort(y_score)[-10]
        run_part = {"q": {d: s for d, s, kp in zip(docs, y_score, keep) if kp}}
        y_part = np.where(keep, y_score, y_score.min() - 1)
        for k in KS:
            exp = ndcg_score([y_true], [y_score], k=k)
            got = evaluate(run, qrels, [f"ndcg@{k}"], ties="sklearn")[f"ndcg@{k}"]
            assert got == pytest.approx(exp, abs=1e-9)
            got = evaluate(run_part, qrels, [f"ndcg@{k}"], ties="sklearn")[f"ndcg@{k}"]
            assert got == pytest.approx(ndcg_score([y_true], [y_part], k=k), abs=1e-9)
            n_diff += abs(evaluate(run, qrels, [f"ndcg@{k}"])[f"ndcg@{k}"] - exp) > 1e-6
    assert n_diff > 0  # ties do change the value, so the two modes are really different


def test_sklearn_ties_recall_precision_are_expectations_over_tie_orders():
    run = {"q": {"a": 1.0, "b": 1.0, "c": 1.0, "d": 0.0}}
    qrels = {"q": {"a": 1, "d": 1}}
    res = evaluate(run, qrels, "recall@1,precision@2,recall@4", ties="sklearn")
    assert res == pytest.approx({"recall@1": 1 / 6, "precision@2": 1 / 3, "recall@4": 1.0})
    # trec order is c, b, a, d
    assert evaluate(run, qrels, "recall@3,mrr@5") == pytest.approx({"recall@3": 0.5, "mrr@5": 1 / 3})


# --- querygen.md §2.2 MMRR / MAP, by hand ------------------------------------------------------

def test_mmrr_map_hand_computed():
    qrels = {"A": {"a": 1, "b": 1, "c": 1}, "B": {"a": 1, "b": 1}, "C": {d: 1 for d in "abcd"},
             "D": {"a": 1}, "E": {"a": 1}}
    run = {
        "A": {"a": 5, "x": 4, "b": 3, "y": 2, "z": 1},  # c missing
        "B": {"a": 3, "b": 2, "x": 1},                  # perfect
        "C": {"a": 2, "b": 1},                          # perfect within k=2, |rel| = 4 > k+1
        "D": {"x": 1},                                  # nothing relevant retrieved
        "E": {"x": 2, "a": 1},                          # single relevant at rank 2
    }
    k5 = evaluate(run, qrels, "mmrr@5,map@5", per_query=True)
    # A: numerator (1+2+3)/3 = 2, denominator (1+3+6)/3 = 10/3 (c clipped to k+1 = 6)
    assert k5["mmrr@5"]["A"] == pytest.approx(0.6)
    assert k5["map@5"]["A"] == pytest.approx((1 + 2 / 3) / 3)  # P@1 + P@3, over |rel| = 3
    assert k5["mmrr@5"]["B"] == pytest.approx(1.0) and k5["map@5"]["B"] == pytest.approx(1.0)
    assert k5["mmrr@5"]["D"] == pytest.approx(1 / 6) and k5["map@5"]["D"] == 0.0
    assert k5["mmrr@5"]["E"] == pytest.approx(0.5) and k5["map@5"]["E"] == pytest.approx(0.5)
    k2 = evaluate(run, qrels, "mmrr@2,map@2", per_query=True)
    assert k2["mmrr@2"]["C"] == pytest.approx(1.0)             # (1+2+3+3)/(1+2+3+3)
    assert k2["map@2"]["C"] == pytest.approx(0.5)              # (1 + 1) / 4
    assert k2["mmrr@2"]["A"] == pytest.approx(2 / ((1 + 3 + 3) / 3))  # b and c clipped to 3
    assert k5["mmrr@5"]["C"] == pytest.approx((10 / 4) / (15 / 4))  # c, d clipped to 6
    assert evaluate(run, qrels, "mmrr@5")["mmrr@5"] == pytest.approx((0.6 + 1 + 2 / 3 + 1 / 6 + .5) / 5)


def test_mmrr_is_mrr_with_a_single_relevant_document():
    run, qrels = random_data(seed=13)
    single = {q: {max(r, key=r.get): 1} for q, r in qrels.items() if any(v > 0 for v in r.values())}
    res = evaluate(run, single, "mmrr@10,mrr@10", per_query=True)
    for q in single:
        if res["mrr@10"][q] > 0:
            assert res["mmrr@10"][q] == pytest.approx(res["mrr@10"][q])
        elif run.get(q):
            assert res["mmrr@10"][q] == pytest.approx(1 / 11)  # missing, clipped to rank k+1
        else:
            assert res["mmrr@10"][q] == 0.0                    # query not answered at all


def test_ndcg_gains():
    run = {"q": {"a": 2, "b": 1}}
    binary = {"q": {"b": 1, "c": 1}}
    assert evaluate(run, binary, "ndcg@2", ndcg_gains="exponential") == evaluate(run, binary, "ndcg@2")
    graded = {"q": {"a": 1, "b": 2}}
    exp_dcg, exp_idcg = 1 + 3 / np.log2(3), 3 + 1 / np.log2(3)
    assert evaluate(run, graded, "ndcg@2", ndcg_gains="exponential")["ndcg@2"] == pytest.approx(exp_dcg / exp_idcg)


# --- API ----------------------------------------------------------------------------------------

def test_per_query_shape_and_means():
    run, qrels = random_data(seed=2)
    names = "NDCG@5, recall@5,precision@3,mrr@10,map@10,mmrr@10"
    pq = evaluate(run, qrels, names, per_query=True)
    means = evaluate(run, qrels, names)
    expected = ["ndcg@5", "recall@5", "precision@3", "mrr@10", "map@10", "mmrr@10"]
    assert list(pq) == list(means) == expected
    for name in expected:
        assert list(pq[name]) == list(qrels)                 # every qrels query, no run-only one
        assert all(isinstance(v, float) for v in pq[name].values())
        assert means[name] == pytest.approx(np.mean(list(pq[name].values())))
        assert pq[name]["q9"] == 0.0                         # qrels query missing from the run
    assert sorted(metric_names()) == sorted(["ndcg", "recall", "precision", "mrr", "map", "mmrr"])


@pytest.mark.parametrize("bad", ["foo@5", "ndcg", "ndcg@0", "ndcg@-1", "ndcg@x", "ndcg@5.0",
                                 "recall@", "@5", ""])
def test_bad_metric_names(bad):
    with pytest.raises(ValueError, match="valid metrics") as err:
        evaluate({"q": {"a": 1}}, {"q": {"a": 1}}, [bad])
    assert repr(bad) in str(err.value)


def test_other_errors():
    with pytest.raises(ValueError, match="qrels is empty"):
        evaluate({"q": {"a": 1}}, {}, "ndcg@5")
    with pytest.raises(ValueError, match="ties"):
        evaluate({"q": {"a": 1}}, {"q": {"a": 1}}, "ndcg@5", ties="random")
    with pytest.raises(ValueError, match="mrr@5"):
        evaluate({"q": {"a": 1}}, {"q": {"a": 1}}, "ndcg@5,mrr@5", ties="sklearn")
    with pytest.raises(ValueError, match="ndcg_gains"):
        evaluate({"q": {"a": 1}}, {"q": {"a": 1}}, "ndcg@5", ndcg_gains="log")
    with pytest.raises(ValueError, match="NaN"):
        evaluate({"q": {"a": float("nan")}}, {"q": {"a": 1}}, "ndcg@5")
