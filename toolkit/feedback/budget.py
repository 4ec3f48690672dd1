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
# FeedbackConfig fields that change a prompt's wording, not its length or token caps: a benchmark record measured
# with another wording still prices the round
WORDING_ONLY = ("refine_wording",)
WORDING_FILE = BENCH_FILE.with_name("refine_wording.json")     # scripts/ab_refine_wording.py --out


def planned_instructions(cfg, tests: Mapping) -> dict[str, int]:
    """Instructions the profile sends through the LLM loop, per budget row of
    :func:`toolkit.feedback.experiment.llm_stages` (in generation order): the offline feedback on training
    instructions, each test group's sample, and the Tables 4, 6, 7 conditions' I2 samples together."""
    return progress(cfg, tests).planned.astype(int).to_dict()


def progress(cfg, tests: Mapping, loop_controls: bool = False):
    """Per budget row: instructions planned, traced so far (its traces' meta) and the generation wall hours so
    far -- one row each, in generation order, so a long run's state is read from the committed traces alone.
    ``loop_controls``: also the LLM loop on ToolRetriever per group (the fair LLM step: notebook 30 reads it beside
    either plan), after the plan's stages."""
    import pandas as pd

    from toolkit.feedback import experiment as X
    rows: dict[str, dict] = {}

    def count(row: str, path: Path, qids) -> None:
        r = rows.setdefault(row, {"stage": row, "planned": 0, "traced": 0, "wall s": 0.0, "problem": ""})
        r["planned"] += len(qids)
        # traced = the trace's lines for this stage's instructions (not its meta's count: an emptied or edited
        # trace is not "done"); a damaged trace is a problem named in the row
        try:
            meta = X.load_meta(path) if X.meta_path(path).is_file() else {}
            traced = len(set(X.load_traces(path)) & set(qids)) if path.is_file() else 0
        except ValueError as e:
            meta, traced = {}, 0
            r["problem"] = (r["problem"] + "; " if r["problem"] else "") + str(e).split(";")[0]
        r["traced"] += traced
        r["wall s"] += meta.get("wall_s", 0.0)
    for stage in X.llm_stages(cfg, tests):
        count(stage.row, stage.path, stage.qids)
    if loop_controls:
        from toolkit.feedback import controls as C
        from toolkit.feedback.config import with_fair_feedback
        fair = with_fair_feedback(cfg)
        for g in (g for g in (*X.GROUPS, *X.OUT_OF_DOMAIN) if g in tests):    # the sets given, as llm_stages
            count(f"{C.TOOLRETRIEVER_LOOP} {g} (fair LLM)",
                  C.toolretriever_loop_trace_path(fair, g, cfg.sample_size(g)), X.llm_sample(cfg, tests, g))
    frame = pd.DataFrame(list(rows.values())).set_index("stage")
    frame["wall h"] = (frame.pop("wall s") / 3600).round(2)
    return frame


def left_at_measured_rate(progress) -> dict:
    """What :func:`progress`' plan still needs: instructions left, the measured seconds per instruction over the rows
    traced so far (their traces' wall time over their instructions: every round, retrieval and "N/A" stop included;
    None before any) and the hours left at that rate (None without a rate). A lower bound: a run killed mid-chunk
    loses that chunk's time, and cached answers are served free."""
    left = int((progress.planned - progress.traced).clip(lower=0).sum())
    done = progress[progress["wall h"] > 0]
    rate = float(done["wall h"].sum() * 3600 / done.traced.sum()) if len(done) and done.traced.sum() else None
    return {"left": left, "s per instruction": rate, "hours": None if rate is None else left * rate / 3600}


def loop_cost(traces: Mapping[str, Path]) -> "pd.DataFrame":
    """Per loop trace (row label -> path; a missing file adds no row): the instructions traced, their LLM rounds, the
    generation wall time its meta records (a run killed mid-chunk loses that chunk's time), and the seconds per
    instruction and per round (wall / rounds). With several llama.cpp slots the rounds overlap, so this is what a round
    costs the machine, not how long one takes."""
    import pandas as pd

    from toolkit.feedback import experiment as X
    rows = []
    for label, path in traces.items():
        if not path.is_file():
            continue
        tr, wall = X.load_traces(path), X.load_meta(path).get("wall_s", 0.0)
        rounds = sum(len(t.seconds) for t in tr.values())
        rows.append({"row": label, "instructions": len(tr), "LLM rounds": rounds, "wall h": round(wall / 3600, 2),
                     "s per instruction": round(wall / len(tr), 1) if tr else float("nan"),
                     "s per round": round(wall / rounds, 1) if rounds else float("nan")})
    return pd.DataFrame(rows, columns=["row", "instructions", "LLM rounds", "wall h", "s per instruction",
                                       "s per round"])


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


def _priced(feedback: dict) -> dict:
    """The feedback settings that decide what a round costs (:data:`WORDING_ONLY` left out)."""
    from toolkit.feedback.experiment import LATER_FEEDBACK_FIELDS
    # a record measured before a field existed was measured at the field's old value
    return {k: v for k, v in {**LATER_FEEDBACK_FIELDS, **feedback}.items() if k not in WORDING_ONLY}


def bench_record(records: list[dict], cfg, slots: int | None = None, variant: str = "chat") -> dict | None:
    """The latest record measured with ``cfg``'s LLM and feedback settings (:data:`WORDING_ONLY` aside), ``slots``
    slots (default: the profile's, 1 when unset) and a ``variant`` timing; None when there is none."""
    slots = slots or cfg.llm_slots or 1
    fb = _priced(asdict(cfg.feedback))
    hits = [r for r in records if r.get("model") == cfg.llm and _priced(r.get("feedback") or {}) == fb
            and r.get("slots") == slots and variant in r["variants"]]
    return hits[-1] if hits else None


def wording_table(path: Path = WORDING_FILE):
    """``scripts/ab_refine_wording.py --out``'s record as a table (one row per step-4 wording, on the same recorded
    rounds: how many refinements changed the instruction, how many by extending it, median words) and the record;
    (None, None) when it was not run."""
    import pandas as pd
    if not path.is_file():
        return None, None
    rec = json.loads(path.read_text())
    table = pd.DataFrame.from_dict(rec["wordings"], orient="index").rename_axis("refine_wording")
    table.insert(0, "rounds", rec["rounds"])
    return table, rec


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


def answer_step(prompt) -> str:
    """The loop's step a cached feedback answer belongs to, read off its chat (:mod:`toolkit.feedback.round`): the
    first user turn is comprehension; later turns are told apart by their fixed wording."""
    from toolkit.llm import prompts
    users = [m.get("content", "") for m in (prompt or []) if isinstance(m, dict) and m.get("role") == "user"]
    if len(users) <= 1:
        return "comprehension"
    last = users[-1]
    if last.startswith(prompts.FEEDBACK_STEP_ASSESSMENT):      # with or without a brevity request
        return "assessment"
    if last == prompts.FEEDBACK_STEP_DECISION:
        return "decision"
    if last in prompts.FEEDBACK_REFINE_WORDINGS.values() or last == prompts.FEEDBACK_STEP_REFINEMENT:
        return "refinement"
    return "other"


def answer_setting(prompt) -> str:
    """Which LLM step asked: "fair" (the fair step, :data:`toolkit.feedback.config.FAIR_FEEDBACK`, whose first turn ends
    with the request to be brief) or "first generation" (every trace committed before it)."""
    from toolkit.feedback.config import FAIR_FEEDBACK
    from toolkit.llm import prompts
    first = next((m.get("content", "") for m in prompt or [] if isinstance(m, dict) and m.get("role") == "user"), "")
    brief = prompts.FEEDBACK_BREVITY[FAIR_FEEDBACK.brevity][0]
    return "fair" if brief and str(first).endswith(brief) else "first generation"


def answer_decoding(sampling: Mapping) -> str:
    """The decoding an answer was made with beyond greedy, from its cached sampling: "repeat 1.1, DRY 0.8"
    (:class:`toolkit.llm.base.Sampling`'s ``repeat_penalty`` and ``dry_multiplier``), or "greedy"."""
    parts = [f"repeat {sampling['repeat_penalty']:g}" if sampling.get("repeat_penalty", 1.0) != 1.0 else "",
             f"DRY {sampling['dry_multiplier']:g}" if sampling.get("dry_multiplier") else ""]
    return ", ".join(p for p in parts if p) or "greedy"


def cap_rates(cache) -> "pd.DataFrame":
    """Per LLM setting (:func:`answer_setting`), step of the loop, decoding (:func:`answer_decoding`) and token cap:
    the cached answers and the share that
    ended at the cap (finish reason "length"), from the committed cache (``cache``: a
    :class:`toolkit.llm.cache.ResponseCache`). An answer cut at its cap is a defect: the decision and the refinement
    then rest on reasoning that stopped mid-way."""
    import pandas as pd
    rows: dict[tuple, dict] = {}
    for a in cache.answers():
        prompt = a.get("prompt")
        setting, step = answer_setting(prompt if isinstance(prompt, list) else None), answer_step(prompt)
        sampling = a.get("sampling") or {}
        cap, decoding = sampling.get("max_tokens"), answer_decoding(sampling)
        r = rows.setdefault((setting, step, decoding, cap), {"setting": setting, "step": step, "decoding": decoding,
                                                             "cap (tokens)": cap, "answers": 0, "at the cap": 0})
        r["answers"] += 1
        r["at the cap"] += a.get("fin") == "length"
    order = {s: i for i, s in enumerate(("comprehension", "assessment", "decision", "refinement", "other"))}
    out = pd.DataFrame(sorted(rows.values(), key=lambda r: (r["setting"] != "fair", order[r["step"]],
                                                            r["decoding"], r["cap (tokens)"] or 0)),
                       columns=["setting", "step", "decoding", "cap (tokens)", "answers", "at the cap"])
    out["share at the cap"] = out["at the cap"] / out["answers"].where(out["answers"] > 0)
    return out


def cap_rates_by_llm(cfg, llms) -> "pd.DataFrame":
    """:func:`cap_rates` of each LLM in ``llms`` (its committed feedback cache; an LLM with no answers yet adds no
    row), with an ``llm`` column first."""
    from dataclasses import replace

    import pandas as pd
    frames = [cap_rates(feedback_cache(replace(cfg, llm=m))).assign(llm=m) for m in dict.fromkeys(llms)]
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame(columns=["llm", "setting", "step", "decoding", "cap (tokens)", "answers", "at the cap",
                                     "share at the cap"])
    out = pd.concat(frames, ignore_index=True)
    return out[["llm", *[c for c in out.columns if c != "llm"]]]


def feedback_cache(cfg):
    """The profile's feedback answers, read-only: the committed cache (smoke: the echo answers' cache outside the
    repository, :func:`toolkit.feedback.stages.llm_client`), opened without loading a model."""
    from toolkit.llm.client import get_client
    from toolkit.paths import cache_dir
    echo = cfg.llm_backend == "echo"
    root = cache_dir() / "llm_cache_smoke" if echo else None
    if echo:
        root.mkdir(parents=True, exist_ok=True)
    return get_client(cfg.llm, "echo" if echo else "replay", namespace="feedback", cache_root=root,
                      mode="replay").cache()
