"""Replaying the committed query-generation caches reproduces the standard run's Table 1 cells with no
model: every LLM backend is patched to fail if called, the zero-shot and SFT answers come from
``data/llm_cache/querygen_*`` through the replay backend, and the retrieval is recomputed."""
from __future__ import annotations

import json

import pytest

from toolkit.paths import REPO

STANDARD = REPO / "results" / "40_querygen" / "standard.json"
pytestmark = pytest.mark.slow


def test_replay_reproduces_the_standard_table1(no_llm):
    from toolkit.querygen import experiment as E
    from toolkit.querygen import tables as T
    from toolkit.querygen.config import config_for

    data = json.loads(STANDARD.read_text())
    cfg = config_for("standard", **data["parameters"].get("overrides", {}))
    s = E.setup(cfg)
    s.tests = {n: ds for n, ds in s.tests.items() if n == "querygen-in-domain"}   # one set keeps it quick
    gens = [g for g in (E.zero_shot(cfg, s), E.sft(cfg, s)) if g.queries]
    assert gens, "the standard run has no generated rows to replay"
    values = E.evaluate_conditions(cfg, s, {g.method: g.queries for g in gens})
    ours = {(r.dataset, r.method, T.paper_metric(r.metric)): r.value for r in T.main_rows(values).itertuples()}
    recorded = {(c["dataset"], c["method"], c["metric"]): c["value"] for c in data["cells"]
                if c["paper"] == "querygen" and c["table"] == "1" and c["dataset"] == "querygen-in-domain"
                and c["method"] in {g.method for g in gens}}
    assert recorded and set(recorded) <= set(ours)
    for key, value in recorded.items():
        assert ours[key] == pytest.approx(value, abs=1e-9), key


def test_replay_reproduces_the_standard_ablation_deltas(no_llm):
    """Tables 3-5: every ablation row's answers (its own aligned model's, and the baseline's) replay from
    the committed cache with no model, and the recorded deltas come out again."""
    from toolkit.querygen import experiment as E
    from toolkit.querygen import tables as T
    from toolkit.querygen.config import config_for

    data = json.loads(STANDARD.read_text())
    recorded = {(c["table"], c["dataset"], c["method"], c["metric"]): c["value"] for c in data["cells"]
                if c["paper"] == "querygen" and c["table"] in ("3", "4", "5") and c["metric"].startswith("delta_")}
    assert recorded, "the standard run has no ablation row to replay"
    cfg = config_for("standard", **data["parameters"].get("overrides", {}))
    abl_s = E.ablation_setup(cfg, E.setup(cfg))
    abl, _ = E.ablations(cfg, abl_s)
    values = E.evaluate_conditions(cfg, abl_s, {T.ablation_method(t, r): q for t, rows in abl.items()
                                                for r, q in rows.items()})
    from toolkit.querygen.alignment import ABLATION_TABLES
    ours = {}
    for table, settings in ABLATION_TABLES.items():
        for r in T.ablation_table(values, table, list(settings)).itertuples():
            ours[table, r.dataset, r.method, r.metric] = r.delta
    assert set(recorded) <= set(ours)
    for key, value in recorded.items():
        assert ours[key] == pytest.approx(value, abs=1e-9), key
