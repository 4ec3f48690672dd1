"""CPU hours of a query-generation configuration, from the rates measured in the committed caches.

Nothing here runs a model. The rates come from what the committed runs recorded:

- training: tokens per second of the committed SFT log (``querygen_sft/querygen-sft-<tag>.train.json``, its earlier
  training included) and of the alignment histories (``train_tokens_per_s``); the slowest measured rate is used;
- tokens per SFT example: the committed SFT run's tokens / examples, scaled to another target set by characters
  (tokens per character of the committed run's 500 examples, prompt and target);
- seconds per answer: a least-squares line ``seconds = a + b * completion tokens`` over the cached answers of the
  model that will answer (the base model's drafts at the drafting temperature, the fine-tuned models' greedy and
  sampled answers, the 1.5B zero-shot answers), evaluated at the mean completion tokens that answers would have
  under the configuration's line stop -- each cached answer cut as :func:`toolkit.llm.base.truncate_at_lines` cuts
  it, its tokens scaled by the characters kept (:func:`simulate_line_stop`).

    python -m toolkit.querygen size --fair        # the fair test's hours, stage by stage
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

from toolkit.llm.base import truncate_at_lines

DRAFT_TEMPERATURE = 1.0


def _cache_root() -> Path:
    from toolkit.llm.client import default_cache_root
    return Path(default_cache_root())


def cached_answers(namespace: str, model_contains: str = "", kind: str = "description",
                   temperature: float | None = None, root: Path | None = None) -> list[dict]:
    """The standard-decoding answers of every cache file in ``namespace`` whose model id contains
    ``model_contains``, to prompts of ``kind``, at ``temperature`` (None: any), with ``text``, ``fin``, ``ntok``,
    ``ms``."""
    import json

    from toolkit.llm.cache import ResponseCache, prompt_user_text
    from toolkit.querygen.experiment import decoded_with
    from toolkit.querygen.generation import task_for
    root = Path(root or _cache_root())
    marker = "\x00"
    head = task_for(kind).build(marker).split(marker)[0]
    out = []
    for path in sorted((root / namespace).glob("*.jsonl")):
        with open(path) as f:
            model = json.loads(f.readline()).get("model", "")
        if model_contains not in model:
            continue
        for a in ResponseCache(root, namespace, model, readonly=True).answers():
            s = a.get("sampling") or {}
            if a.get("ms") is None or not decoded_with(s) or not prompt_user_text(a.get("prompt")).startswith(head):
                continue
            if temperature is not None and s.get("temperature") != temperature:
                continue
            out.append(a)
    return out


def simulate_line_stop(answers: Sequence[Mapping], max_lines: int) -> dict:
    """What a stop after ``max_lines`` lines would have done to ``answers`` (cached, decoded without it): an
    answer that hit the token cap stays capped only if the cap came before its ``max_lines``-th line ended;
    completion tokens are scaled by the share of characters the cut keeps. ``parse_changed``: answers whose
    parsed queries (:func:`toolkit.llm.parsers.parse_api_descriptions`) differ after the cut."""
    from toolkit.llm.parsers import parse_api_descriptions
    n = len(answers)
    if not n:
        return {"answers": 0}
    capped = capped_after = parse_changed = 0
    tok_before = tok_after = 0.0
    for a in answers:
        text = a.get("text") or ""
        ntok = float(a.get("ntok") or 0)
        cut_text, cut = truncate_at_lines(text, max_lines) if max_lines else (text, False)
        was_capped = a.get("fin") == "length"
        capped += was_capped
        capped_after += was_capped and not cut
        tok_before += ntok
        tok_after += ntok * (len(cut_text) / len(text) if cut and text else 1.0)
        parse_changed += cut and parse_api_descriptions(cut_text) != parse_api_descriptions(text)
    return {"answers": n, "capped": capped / n, "capped_after": capped_after / n,
            "tokens": tok_before / n, "tokens_after": tok_after / n, "parse_changed": parse_changed / n}


def seconds_line(answers: Sequence[Mapping]) -> tuple[float, float]:
    """(a, b) of the least-squares line ``seconds = a + b * completion tokens`` over ``answers``; with one
    distinct token count, (0, mean seconds per token)."""
    x = np.array([float(a.get("ntok") or 0) for a in answers])
    y = np.array([float(a["ms"]) / 1000 for a in answers])
    if len(set(x.tolist())) < 2:
        return 0.0, float(y.sum() / max(x.sum(), 1.0))
    b, a = np.polyfit(x, y, 1)
    return max(float(a), 0.0), float(b)


def seconds_per_answer(answers: Sequence[Mapping], max_lines: int) -> tuple[float, dict]:
    """Predicted seconds per answer under the line stop, and :func:`simulate_line_stop`'s figures."""
    sim = simulate_line_stop(answers, max_lines)
    if not sim["answers"]:
        raise ValueError("no cached answers to measure the rate on")
    a, b = seconds_line(answers)
    return a + b * sim["tokens_after"], {**sim, "a": a, "b": b}


@dataclass
class Stage:
    name: str
    count: float          # answers, drafts or tokens
    unit: str
    seconds_each: float
    source: str

    @property
    def hours(self) -> float:
        return self.count * self.seconds_each / 3600


def training_rate(root: Path | None = None) -> tuple[float, str]:
    """The slowest training tokens/s measured in the committed SFT log and alignment histories, and where."""
    import json
    root = Path(root or _cache_root())
    rates = []
    for p in sorted((root / "querygen_sft").glob("*.train.json")):
        d = json.loads(p.read_text())
        rates += [(float(r["tokens_per_s"]), p.name) for r in [d, *d.get("earlier_training", [])] if r.get("tokens_per_s")]
    for p in sorted((root / "querygen_align").glob("*.history.json")):
        for h in json.loads(p.read_text()).get("history", []):
            rates += [(float(r["train_tokens_per_s"]), p.name) for r in [h, *h.get("earlier_training", [])]
                      if r.get("train_tokens_per_s")]
    if not rates:
        raise ValueError(f"no training rate in {root}/querygen_sft or querygen_align")
    return min(rates)


def sft_tokens_per_example(cfg, split=None, root: Path | None = None) -> tuple[float, int, str]:
    """(tokens per SFT example of ``cfg``'s target set, examples, source): the committed SFT run's tokens per
    example, scaled by characters of prompt + target (its own examples against ``cfg``'s)."""
    import json

    from toolkit.querygen.config import config_for
    from toolkit.querygen.data import make_split
    from toolkit.querygen.sft import sft_examples
    root = Path(root or _cache_root())
    std = config_for("standard")
    log_path = root / "querygen_sft" / f"querygen-sft-{std.sft_tag()}.train.json"
    log = json.loads(log_path.read_text())
    split = split or make_split(cfg.split)
    ref = sft_examples(split.train.nested_sample(std.sft_train_requests, seed=std.sample_seed), split.corpus)
    per_char = log["tokens"] / sum(len(e.prompt) + len(e.target) for e in ref)
    mine = sft_examples(split.train.nested_sample(cfg.sft_train_requests, seed=cfg.sample_seed), split.corpus,
                        target_words=cfg.sft_target_words)
    chars = sum(len(e.prompt) + len(e.target) for e in mine) / len(mine)
    return chars * per_char, len(mine), f"{log_path.name}: {log['tokens']} tokens / {log['examples']} examples"


def answers_per_method(cfg) -> int:
    """Answers one calibrated method writes: the dev grid, both test samples, the four authored requests."""
    from toolkit.querygen.data import make_split
    split = make_split(cfg.split)
    dev = len(split.dev.nested_sample(cfg.dev_requests, seed=cfg.sample_seed).queries)
    tests = sum(len(ds.nested_sample(cfg.test_requests, seed=cfg.sample_seed).queries)
                for ds in (split.test_in, split.test_out))
    return len(cfg.temperatures) * dev + tests + 4


def sizing(cfg, split=None, root: Path | None = None) -> list[Stage]:
    """The stages of ``cfg``'s SFT, alignment and answer generation with their measured unit costs."""
    from toolkit.querygen.data import make_split
    split = split or make_split(cfg.split)
    rate, rate_src = training_rate(root)
    per_ex, n_ex, ex_src = sft_tokens_per_example(cfg, split, root)
    lines_sft, lines_align = cfg.decoding.max_lines, cfg.align.decoding.max_lines
    stages = [Stage(f"SFT: 1 epoch, {n_ex} examples ({math.ceil(n_ex / cfg.sft.batch_size)} steps)", n_ex * per_ex,
                    "tokens", 1 / rate, f"{per_ex:.0f} tokens/example ({ex_src}); {rate} tokens/s ({rate_src})")]
    sft_ans = cached_answers("querygen_sft", root=root)
    s_sft, sim = seconds_per_answer(sft_ans, lines_sft)
    per_method = answers_per_method(cfg)
    stages.append(Stage(f"SFT answers: dev grid x {len(cfg.temperatures)}, test samples, authored", per_method, "answers",
                        s_sft, _src("querygen_sft", sim, lines_sft)))
    zs_ans = cached_answers("querygen_zeroshot", root=root)
    s_zs, sim = seconds_per_answer(zs_ans, lines_sft)
    if lines_sft or cfg.decoding.repeat_penalty != 1.0:      # the committed zero-shot answers have the old decoding
        stages.append(Stage("Zero-shot answers again (new decoding)", per_method, "answers", s_zs,
                            _src("querygen_zeroshot", sim, lines_sft)))
    a = cfg.align
    base_drafts = cached_answers("querygen_align", "qwen2.5-coder-0.5b", temperature=a.temperature, root=root)
    tuned_drafts = cached_answers("querygen_align", "querygen-align-", temperature=a.temperature, root=root)
    s_d0, sim0 = seconds_per_answer(base_drafts, lines_align)
    s_dt, simt = seconds_per_answer(tuned_drafts or base_drafts, lines_align)
    pool = len(split.train.queries)
    req = min(a.train_size or pool, pool)
    stages.append(Stage(f"Alignment drafts, iteration 1 (base model): {req} requests x {a.n_drafts}", req * a.n_drafts,
                        "drafts", s_d0, _src("querygen_align base model, T=%g" % a.temperature, sim0, lines_align)))
    if a.iterations > 1:
        stages.append(Stage(f"Alignment drafts, iterations 2-{a.iterations} (fine-tuned)",
                            (a.iterations - 1) * req * a.n_drafts, "drafts", s_dt,
                            _src("querygen_align fine-tuned models, T=%g" % a.temperature, simt, lines_align)))
    kept_tokens = _align_tokens_per_example(root)
    stages.append(Stage(f"Alignment fine-tuning: {a.iterations} x <= {req * a.filter.keep_per_sample} kept drafts",
                        a.iterations * req * a.filter.keep_per_sample * kept_tokens, "tokens", 1 / rate,
                        f"{kept_tokens:.0f} tokens/example (committed histories); {rate} tokens/s"))
    eval_ans = cached_answers("querygen_align", "querygen-align-", temperature=cfg.align_eval_temperature, root=root)
    s_ev, sim = seconds_per_answer(eval_ans, lines_align)
    tests = per_method - len(cfg.temperatures) * len(split.dev.nested_sample(cfg.dev_requests, seed=cfg.sample_seed).queries)
    stages.append(Stage(f"Alignment test answers: {a.iterations} iterations", a.iterations * tests, "answers", s_ev,
                        _src("querygen_align fine-tuned models, T=%g" % cfg.align_eval_temperature, sim, lines_align)))
    return stages


def _src(where: str, sim: dict, max_lines: int) -> str:
    stop = (f"stop at {max_lines} lines: capped {sim['capped']:.0%} -> {sim['capped_after']:.0%}, "
            f"{sim['tokens']:.0f} -> {sim['tokens_after']:.0f} tokens/answer, parse changed {sim['parse_changed']:.1%}"
            if max_lines else f"no line stop: capped {sim['capped']:.0%}, {sim['tokens']:.0f} tokens/answer")
    return f"{where}: {sim['answers']} cached answers, {sim['a']:.2f} s + {sim['b'] * 1000:.0f} ms/token; {stop}"


def _align_tokens_per_example(root: Path | None = None) -> float:
    import json
    root = Path(root or _cache_root())
    tok = kept = 0
    for p in sorted((root / "querygen_align").glob("*.history.json")):
        for h in json.loads(p.read_text()).get("history", []):
            if h.get("train_tokens") and h.get("kept"):
                tok, kept = tok + h["train_tokens"], kept + h["kept"]
    return tok / kept if kept else 250.0


def format_sizing(stages: Iterable[Stage], budget_hours: float | None = 20.0) -> str:
    stages = list(stages)
    lines = [f"{'stage':<72} {'count':>12} {'s each':>9} {'hours':>7}"]
    for s in stages:
        lines.append(f"{s.name:<72} {s.count:>12,.0f} {s.seconds_each:>9.4f} {s.hours:>7.2f}  [{s.unit}]")
        lines.append(f"    {s.source}")
    total = sum(s.hours for s in stages)
    lines.append(f"{'total (GGUF exports and retrieval not counted)':<72} {'':>12} {'':>9} {total:>7.2f}")
    if budget_hours is not None:
        lines.append(f"budget {budget_hours:.0f} h: {'within' if total <= budget_hours else 'OVER'}")
    return "\n".join(lines)
