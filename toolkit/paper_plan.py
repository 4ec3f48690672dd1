"""The paper profile's work per notebook, counted from its configuration and the data (``python -m toolkit paper-plan``).

For each notebook: the training examples its models see (pairs or examples, times epochs), the LLM calls it makes
(each a request to the server: one sample of one prompt) and their tokens. Prompt tokens are estimated from the
prompts themselves, built with the notebooks' own templates from the data: characters / :data:`CHARS_PER_TOKEN`
(Qwen's and Llama's tokenizers give 3.5-4.5 characters a token on this English text); a multi-turn chat resends the
whole conversation each turn. Completion tokens are bounded by each call's ``max_tokens`` (the upper bound the server
must allow for). Nothing here is typed by hand: change a profile and the plan follows.
"""
from __future__ import annotations

CHARS_PER_TOKEN = 4.0


def _tok(chars: float) -> int:
    return int(round(chars / CHARS_PER_TOKEN))


def _row(notebook: str, training: int = 0, calls: int = 0, prompt_chars: float = 0, completion_cap: int = 0,
         note: str = "") -> dict:
    return {"notebook": notebook, "training_examples": int(training), "llm_calls": int(calls),
            "prompt_tokens": _tok(prompt_chars), "completion_tokens_max": int(completion_cap), "note": note}


def plan_toolrerank() -> dict:
    """ToolRerank (paper Setup): DPR on every (query, gold API) pair x ``de_epochs``; the reranker on each gold API
    and ``ce_neg`` hard negatives per positive x ``ce_epochs``; the classifier on every training query x
    ``cl_epochs``. No LLM."""
    from toolkit.toolrerank.config import config_for
    from toolkit.toolrerank.experiment import toollens_split
    s = config_for("paper").setup
    split = toollens_split(s)
    pos = sum(len(r) for r in split.train.qrels.values())
    nq = len(split.train.queries)
    per_pos = 1 + s.ce_neg if s.ce_neg_per == "positive" else None
    ce = pos * per_pos if per_pos else pos + nq * s.ce_neg
    train = pos * s.de_epochs + ce * s.ce_epochs + nq * s.cl_epochs
    return _row("10_toolrerank", train, note=f"{s.base}: DPR {pos:,} pairs x {s.de_epochs} epochs, reranker "
                f"{ce:,} pairs x {s.ce_epochs}, classifier {nq:,} queries x {s.cl_epochs}")


def plan_reinvoke() -> dict:
    """Re-Invoke (paper): synthetic queries, ``m`` per tool document of every corpus (ToolE's tools, the ToolBench
    library), and one intent extraction per query of every evaluation set (HyDE's documents as many again)."""
    from toolkit.llm.tasks import HYDE, INTENTS, SYNTHETIC_QUERIES
    from toolkit.reinvoke.config import config_for
    from toolkit.reinvoke.experiment import eval_sets
    cfg = config_for("paper")
    sets = eval_sets(cfg)
    calls = chars = cap = 0
    done: set[tuple[str, str]] = set()         # ToolE single and multi share their 199 tools: expanded once
    for name, es in sets.items():
        m = cfg.m if not name.startswith("toolbench") or cfg.m_toolbench is None else cfg.m_toolbench
        family = name.split("-")[0]
        fresh = [d for d in es.all.corpus.values() if (family, d.doc_id) not in done]
        done.update((family, d.doc_id) for d in fresh)
        chars += sum(len(SYNTHETIC_QUERIES.build(d.text)) for d in fresh) * m
        calls += len(fresh) * m
        cap += len(fresh) * m * SYNTHETIC_QUERIES.sampling.max_tokens
        for q in es.llm.queries.values():
            for task in (INTENTS, HYDE):
                chars += len(task.build(q.text))
                calls += 1
                cap += task.sampling.max_tokens
    return _row("20_reinvoke", 0, calls, chars, cap,
                note=f"m={cfg.m} synthetic queries per tool ({cfg.toolbench_corpus} corpus for ToolBench), "
                     "intents + HyDE per query, for each backbone")


def plan_feedback() -> dict:
    """Iterative feedback (paper): the warm-up on every (instruction, gold API) pair of the training set, then
    ``rounds`` feedback rounds per training instruction (offline feedback) and per test query, each round 3-4 turns
    of one chat (comprehension, assessment, decision, refinement) resending the conversation, and a retraining per
    round."""
    from toolkit.feedback.config import config_for
    from toolkit.feedback.data import test_sets, training_set
    from toolkit.llm import prompts
    cfg = config_for("paper")
    train = training_set("train")
    pos = sum(len(r) for r in train.qrels.values())
    n_train = len(train.queries) if cfg.train_feedback_requests is None else min(cfg.train_feedback_requests,
                                                                                  len(train.queries))
    tests = test_sets(corpus=cfg.toolbench_corpus)
    n_test = sum(len(ds.queries) if cfg.sample_size(g) is None else min(cfg.sample_size(g), len(ds.queries))
                 for g, ds in tests.items())
    from toolkit.feedback.round import first_turn
    fb, rounds = cfg.feedback, cfg.training.rounds
    caps = [fb.comprehension_tokens, fb.assessment_tokens, fb.decision_tokens, fb.refinement_tokens]
    later = [prompts.FEEDBACK_STEP_ASSESSMENT + prompts.FEEDBACK_BREVITY[fb.brevity][1],
             prompts.FEEDBACK_STEP_DECISION, prompts.FEEDBACK_REFINE_WORDINGS[fb.refine_wording]]

    def round_chars(ds, qid) -> float:
        """One round's prompt characters: the first turn as the round builds it (the instruction and K tools: its
        gold APIs, then others of the corpus), each later turn resending the chat with answers at their caps."""
        gold = [ds.corpus[d] for d in ds.qrels.get(qid, {}) if d in ds.corpus][:fb.k]
        fill = [d for d in list(ds.corpus.values())[:fb.k] if d not in gold][:fb.k - len(gold)]
        history = len(first_turn(ds.queries[qid].text, gold + fill, fb))
        total = history
        for turn, cap_prev in zip(later, caps):
            history += cap_prev * CHARS_PER_TOKEN + len(turn)
            total += history
        return total
    chars = sum(round_chars(train, q) for q in list(train.queries)[:n_train])
    for g, ds in tests.items():
        n = cfg.sample_size(g)
        chars += sum(round_chars(ds, q) for q in list(ds.queries)[:n])
    instructions = n_train + n_test
    calls = instructions * rounds * len(caps)
    chars *= rounds
    cap = instructions * rounds * sum(caps)
    training = pos * cfg.training.epochs * (1 + rounds)
    return _row("30_feedback", training, calls, chars, cap,
                note=f"{cfg.base} + {cfg.llm}: {n_train:,} training instructions and {n_test:,} test queries x "
                     f"{rounds} rounds x 4 turns (at most); warm-up + {rounds} retrainings on {pos:,} pairs")


def plan_querygen() -> dict:
    """Query generation (paper): per method (zero-shot descriptions, zero-shot intents, SFT, alignment) the dev
    requests at each calibration temperature and the test requests once; SFT on every training request; alignment
    ``n_drafts`` drafts per training request per iteration, then training on the kept ones."""
    from toolkit.querygen.config import config_for
    from toolkit.querygen.data import make_split
    from toolkit.querygen.generation import TASKS
    cfg = config_for("paper")
    split = make_split(cfg.split)
    dev = list(split.dev.queries.values())[:cfg.dev_requests] if cfg.dev_requests else list(split.dev.queries.values())
    tests = [q for ds in (split.test_in, split.test_out) for q in
             (list(ds.queries.values())[:cfg.test_requests] if cfg.test_requests else ds.queries.values())]
    train = list(split.train.queries.values())
    n_sft = len(train) if cfg.sft_train_requests is None else min(cfg.sft_train_requests, len(train))
    n_align = len(train) if cfg.align.train_size is None else min(cfg.align.train_size, len(train))
    calls = chars = cap = 0
    methods = [("description", 1), ("intent", 1), ("description", 1), ("description", 1)]   # zero-shot x2, SFT, align
    for kind, _ in methods:
        task = TASKS[kind]
        for q in dev:
            chars += len(task.build(q.text)) * len(cfg.temperatures)
        for q in tests:
            chars += len(task.build(q.text))
        n = len(dev) * len(cfg.temperatures) + len(tests)
        calls += n
        cap += n * task.sampling.max_tokens
    drafts = n_align * cfg.align.n_drafts * cfg.align.iterations
    per = sum(len(TASKS["description"].build(q.text)) for q in train[:n_align]) / max(1, n_align)
    calls += drafts
    chars += drafts * per
    cap += drafts * TASKS["description"].sampling.max_tokens
    training = n_sft * cfg.sft.epochs + drafts            # SFT examples + at most every draft kept
    return _row("40_querygen", training, calls, chars, cap,
                note=f"{cfg.generator_base}: SFT on {n_sft:,} requests, alignment {cfg.align.n_drafts} drafts x "
                     f"{n_align:,} requests x {cfg.align.iterations} iterations; {len(dev)} dev x "
                     f"{len(cfg.temperatures)} temperatures + {len(tests):,} test requests per method")


PLANS = {"10_toolrerank": plan_toolrerank, "20_reinvoke": plan_reinvoke, "30_feedback": plan_feedback,
         "40_querygen": plan_querygen}


def plan(notebooks=None) -> list[dict]:
    return [PLANS[nb]() for nb in (notebooks or PLANS)]


def render(rows: list[dict], markdown: bool = False) -> str:
    head = ["notebook", "training examples", "LLM calls", "prompt tokens (est.)", "completion tokens (max)"]
    body = [[r["notebook"], f"{r['training_examples']:,}", f"{r['llm_calls']:,}", f"{r['prompt_tokens']:,}",
             f"{r['completion_tokens_max']:,}"] for r in rows]
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
        lines += ["| " + " | ".join(b) + " |" for b in body]
        return "\n".join(lines)
    w = [max(len(x) for x in col) for col in zip(head, *body)]
    out = ["  ".join(x.ljust(n) for x, n in zip(head, w))]
    out += ["  ".join(x.ljust(n) for x, n in zip(b, w)) for b in body]
    out += [f"  {r['notebook']}: {r['note']}" for r in rows]
    return "\n".join(out)
