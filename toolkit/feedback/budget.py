"""The feedback experiment's LLM budget: how many instructions go through the loop, what a round costs as
measured (``scripts/bench_feedback.py --out``, committed in :data:`BENCH_FILE`), and what the plan then needs.

    plan = planned_instructions(cfg, tests)     # {"training feedback": 500, "test I2": 230, ...}
    rec = bench_record(load_bench(), cfg)        # the benchmark run with this profile's feedback settings
    hours = plan_hours(plan, rounds=3, seconds_per_round=rec["chat"]["seconds per round"])

A round is one instruction's four-turn chat (three when the answer is "N/A"); an instruction costs up to T rounds,
so the plan's hours are an upper bound that the traces' own wall time replaces as they grow."""
from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Mapping

BENCH_FILE = Path(__file__).resolve().parents[2] / "results" / "bench" / "feedback_round.json"


def planned_instructions(cfg, tests: Mapping) -> dict[str, int]:
    """Instructions the profile sends through the LLM loop, per stage: the offline feedback on training
    instructions, each test group's sample, and the Tables 4, 6, 7 conditions' I2 sample each."""
    from toolkit.feedback import experiment as X
    from toolkit.feedback.data import training_set
    n_train = cfg.train_feedback_requests or len(training_set("train").queries)
    plan = {"training feedback": n_train}
    for g in (*X.GROUPS, *X.OUT_OF_DOMAIN):
        plan[f"test {g}"] = len(X.llm_sample(cfg, tests, g))
    n_conditions = sum(len(rows) for rows in X.CONDITIONS.values())
    plan[f"Tables 4, 6, 7 ({n_conditions} conditions)"] = n_conditions * len(X.ablation_sample(cfg, tests))
    return plan


def progress(cfg, tests: Mapping):
    """Per planned stage: instructions planned, traced so far (its trace's meta) and the generation wall hours so
    far -- one row each, so a long run's state is read from the committed traces alone."""
    import pandas as pd

    from toolkit.feedback import experiment as X
    plan = planned_instructions(cfg, tests)
    paths = {"training feedback": [X.train_trace_path(cfg)]}
    for g in (*X.GROUPS, *X.OUT_OF_DOMAIN):
        paths[f"test {g}"] = [X.test_trace_path(cfg, g, cfg.sample_size(g))]
    paths[next(k for k in plan if k.startswith("Tables"))] = [
        X.test_trace_path(X.condition(cfg, t, label), X.ABLATION_GROUP, cfg.ablation_requests)
        for t, rows in X.CONDITIONS.items() for label in rows]
    rows = []
    for stage, n in plan.items():
        metas = [X.load_meta(p) for p in paths[stage] if X.meta_path(p).is_file()]
        rows.append({"stage": stage, "planned": n, "traced": sum(m.get("instructions", 0) for m in metas),
                     "wall h": round(sum(m.get("wall_s", 0.0) for m in metas) / 3600, 2)})
    return pd.DataFrame(rows).set_index("stage")


def chat_speedup(record: dict) -> tuple[float, float]:
    """(rounds per second, tokens per second) of the chat over the independent calls in one benchmark record."""
    c, i = record["variants"]["chat"], record["variants"]["independent"]
    return i["seconds per round"] / c["seconds per round"], (c["tokens out"] / c["total s"]) / (i["tokens out"] / i["total s"])


def plan_hours(plan: Mapping[str, int], rounds: int, seconds_per_round: float) -> float:
    """Upper bound: every instruction through all ``rounds`` (none answers "N/A")."""
    if seconds_per_round <= 0:
        raise ValueError(f"seconds_per_round must be > 0, got {seconds_per_round}")
    return sum(plan.values()) * rounds * seconds_per_round / 3600


def load_bench(path: Path = BENCH_FILE) -> list[dict]:
    """The committed benchmark records (``scripts/bench_feedback.py --out``); [] when there are none."""
    if not path.is_file():
        return []
    try:
        records = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not JSON ({e}); rewrite it with scripts/bench_feedback.py --out {path}") from e
    if not isinstance(records, list) or not all(isinstance(r, dict) and "variants" in r for r in records):
        raise ValueError(f"{path}: expected a list of benchmark records with 'variants'; "
                         f"rewrite it with scripts/bench_feedback.py --out {path}")
    return records


def add_bench(record: dict, path: Path = BENCH_FILE) -> Path:
    """Append ``record``, replacing an earlier one with the same settings (model, threads, slots, n, feedback)."""
    key = ("model", "threads", "slots", "n", "feedback")
    kept = [r for r in load_bench(path) if tuple(r.get(k) for k in key) != tuple(record.get(k) for k in key)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(kept + [record], indent=1) + "\n")
    return path


def bench_record(records: list[dict], cfg, slots: int | None = None, variant: str = "chat") -> dict | None:
    """The latest record measured with ``cfg``'s LLM and feedback settings, ``slots`` slots (default: the
    profile's, 1 when unset) and a ``variant`` timing; None when there is none."""
    slots = slots or cfg.llm_slots or 1
    fb = asdict(cfg.feedback)
    hits = [r for r in records if r.get("model") == cfg.llm and r.get("feedback") == fb and r.get("slots") == slots
            and variant in r["variants"]]
    return hits[-1] if hits else None


def bench_table(records: list[dict]):
    """One row per (record, variant): seconds per round (total wall / rounds, the throughput), tokens generated and
    tokens per second -- the fairer comparison when the variants' decisions differ ("N/A" rounds skip step 4)."""
    import pandas as pd
    rows = []
    for r in records:
        for name, v in r["variants"].items():
            rows.append({"measured": r.get("measured"), "model": r.get("model"), "threads": r.get("threads"),
                         "slots": r.get("slots"), "rounds": r.get("n"), "variant": name,
                         "tool chars": r["feedback"].get("tool_chars"),
                         "caps": "/".join(str(r["feedback"].get(f"{s}_tokens")) for s in
                                          ("comprehension", "assessment", "decision", "refinement")),
                         "s per round": v["seconds per round"], "median round latency s": v["median latency s"],
                         "tokens out": v["tokens out"], "tokens per s": round(v["tokens out"] / v["total s"], 2),
                         "N/A": v["N/A"]})
    return pd.DataFrame(rows)
