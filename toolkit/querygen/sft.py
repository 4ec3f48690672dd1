"""Supervised fine-tuning of the query generator (Kachuee et al. 2025, §3.2, App. A.2).

Each training request becomes one chat: the Fig. 2 instruction with the request as the user turn
(the prompt is kept, §3.2) and, as the assistant turn, its gold API descriptions one per line
(:func:`toolkit.querygen.data.api_description`). The loss is computed on the assistant tokens only
("only computing the loss for generated tokens"), for one epoch, with weight decay, a constant
learning rate, gradient clipping and batch 32 (App. A.2). The learning rate, weight-decay and
clipping values were lost in the text; ours are :class:`SFTConfig`'s defaults.

CPU notes: bf16 autocast; the LM head is applied only at answer positions (the vocabulary
projection of a 0.5B model dominates the step otherwise); micro-batches accumulate to the batch.
Alignment (:mod:`toolkit.querygen.alignment`) fine-tunes on its kept drafts with the same loop.

    base = base_model_dir("qwen-0.5b")                       # GGUF -> safetensors directory, once
    examples = sft_examples(split.train, split.corpus)
    out = train(base, examples, cache_dir() / "querygen" / "sft-...", SFTConfig())
"""
from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from toolkit.llm.prompts import querygen_prompt

IGNORE = -100


@dataclass(frozen=True)
class SFTConfig:
    """Training settings; defaults are ours where App. A.2 lost the value (lr, weight decay, clip)."""
    epochs: int = 1                 # App. A.2: one epoch
    batch_size: int = 32            # App. A.2
    micro_batch: int = 4            # accumulated to batch_size (memory)
    lr: float = 2e-5                # constant (App. A.2); value lost
    weight_decay: float = 0.01      # value lost
    clip_value: float = 1.0         # "clip values outside the range [-c, c]" (App. A.2); value lost
    max_length: int = 384
    seed: int = 0
    bf16: bool = True

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size", "micro_batch", "max_length"):
            if getattr(self, name) < 1:
                raise ValueError(f"SFTConfig.{name} must be >= 1, got {getattr(self, name)}")
        if self.batch_size % self.micro_batch:
            raise ValueError(f"SFTConfig.batch_size ({self.batch_size}) must be a multiple of micro_batch "
                             f"({self.micro_batch})")
        if self.lr <= 0 or self.weight_decay < 0 or self.clip_value <= 0:
            raise ValueError("SFTConfig: lr and clip_value must be > 0, weight_decay >= 0")


@dataclass(frozen=True)
class Example:
    qid: str
    prompt: str          # the user turn (Fig. 2 instruction + request)
    target: str          # the assistant turn (queries, one per line)


def sft_examples(ds, corpus, kind: str = "description", target_words: int | None = None) -> list[Example]:
    """One example per request: Fig. 2 prompt -> its gold API descriptions, one per line. ``corpus``
    is the split's (:func:`toolkit.querygen.data.make_split`), whose texts are the descriptions.
    ``target_words`` (None: the whole index text, as in the committed run): each line trimmed to the tool,
    the API and the description's first sentence, at most that many words per line
    (:func:`toolkit.querygen.data.trimmed_description`)."""
    from toolkit.querygen.data import trimmed_description
    out = []
    for qid, q in ds.queries.items():
        gold = [d for d, r in ds.qrels[qid].items() if r > 0]
        lines = [corpus[d].text if target_words is None else trimmed_description(corpus[d], target_words) for d in gold]
        out.append(Example(qid, querygen_prompt(q.text, kind), "\n".join(lines)))
    return out


def encode_example(tok, ex: Example, max_length: int) -> tuple[list[int], list[int]]:
    """(input ids, labels): the chat-templated prompt with labels ``IGNORE``, then the answer and
    the end-of-turn token with labels = ids. Truncation cuts the answer's tail, never the prompt."""
    prompt_ids = list(tok.apply_chat_template([{"role": "user", "content": ex.prompt}], add_generation_prompt=True,
                                              tokenize=True, return_dict=False))
    full = list(tok.apply_chat_template([{"role": "user", "content": ex.prompt},
                                         {"role": "assistant", "content": ex.target}], tokenize=True,
                                        return_dict=False))
    if full[:len(prompt_ids)] != prompt_ids:
        raise ValueError("chat template: the prompt is not a prefix of prompt + answer; cannot mask the prompt")
    # drop what the template appends after the end-of-turn token (e.g. a trailing newline)
    eot = getattr(tok, "eos_token_id", None)
    answer = full[len(prompt_ids):]
    if eot is not None and eot in answer:
        answer = answer[:answer.index(eot) + 1]
    if len(prompt_ids) >= max_length:
        raise ValueError(f"request {ex.qid}: prompt alone is {len(prompt_ids)} tokens >= max_length {max_length}")
    ids = (prompt_ids + answer)[:max_length]
    labels = ([IGNORE] * len(prompt_ids) + answer)[:max_length]
    return ids, labels


def answer_loss(model, input_ids, attention_mask, labels):
    """Mean next-token cross-entropy over answer tokens, computing the LM head only there."""
    import torch
    import torch.nn.functional as F
    hidden = model.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    target = labels[:, 1:]
    keep = target != IGNORE
    h = hidden[:, :-1][keep]
    logits = model.lm_head(h).float()
    return F.cross_entropy(logits, target[keep]), int(keep.sum())


def _collate(batch: Sequence[tuple[list[int], list[int]]], pad_id: int):
    import torch
    n = max(len(i) for i, _ in batch)
    ids = torch.full((len(batch), n), pad_id, dtype=torch.long)
    lab = torch.full((len(batch), n), IGNORE, dtype=torch.long)
    att = torch.zeros((len(batch), n), dtype=torch.long)
    for r, (i, l) in enumerate(batch):
        ids[r, :len(i)] = torch.tensor(i)
        lab[r, :len(l)] = torch.tensor(l)
        att[r, :len(i)] = 1
    return ids, att, lab


def train_examples(model, tok, examples: Sequence[Example], cfg: SFTConfig = SFTConfig(), out_dir: Path | None = None,
                   log: Callable[[str], None] | None = print, checkpoint_every: int = 0) -> dict:
    """Fine-tune ``model`` in place on ``examples`` with the suite's one loop (:func:`toolkit.training.train_loop`:
    constant rate, clipping by value, micro-batches accumulated to ``cfg.batch_size``, each weighted
    by its share of the batch's answer tokens so the step's loss is the mean over all of them).
    Returns the loop's stats plus the loss of every step, examples, tokens and tokens/s."""
    import tempfile

    from toolkit.training import train_loop
    encoded = [encode_example(tok, ex, cfg.max_length) for ex in examples]
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    order = list(range(len(encoded)))
    batches = []
    for epoch in range(cfg.epochs):
        random.Random(cfg.seed + epoch).shuffle(order)
        batches += [order[s:s + cfg.batch_size] for s in range(0, len(order), cfg.batch_size)]
    answer_tokens = [sum(1 for x in lab[1:] if x != IGNORE) for _, lab in encoded]

    def micro_batches(batch):
        batch = sorted(batch, key=lambda i: len(encoded[i][0]))      # less padding per micro-batch
        total = max(1, sum(answer_tokens[i] for i in batch))
        parts = [batch[m:m + cfg.micro_batch] for m in range(0, len(batch), cfg.micro_batch)]
        return [(p, sum(answer_tokens[i] for i in p) / total) for p in parts]

    import torch

    def loss_fn(part):
        ids, att, lab = _collate([encoded[i] for i in part], pad)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=cfg.bf16):
            return answer_loss(model, ids, att, lab)[0]

    steps: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        stats = train_loop(model, loss_fn, batches, Path(out_dir or tmp), lr=cfg.lr, weight_decay=cfg.weight_decay,
                           max_grad_norm=cfg.clip_value, clip="value", schedule="constant", micro_batches=micro_batches,
                           checkpoint_every=checkpoint_every, log_every=max(1, len(batches) // 20), log=log,
                           seed=cfg.seed, on_step=steps.append)
    model.eval()
    tokens = sum(len(encoded[i][0]) for b in batches for i in b)
    return {**stats, "steps_log": steps, "examples": len(encoded), "tokens": tokens,
            "tokens_per_s": round(tokens / stats["seconds"], 1) if stats["seconds"] else None, "config": asdict(cfg)}


# --------------------------------------------------------------------------------------------
# Models on disk
# --------------------------------------------------------------------------------------------

def base_model_dir(name: str = "qwen-0.5b", root: Path | None = None) -> Path:
    """The local GGUF of ``name`` as a plain safetensors directory (made once, then reused).

    transformers dequantizes the GGUF (``gguf_file=``, needs the ``gguf`` package); a model loaded
    that way refuses ``save_pretrained`` while its GGUF quantizer is attached, so it is detached."""
    from toolkit.llm import models as M
    from toolkit.paths import cache_dir
    gguf = M.gguf_path(name)
    out = (root or cache_dir() / "querygen" / "models") / (M.canonical_id(name) + "-f32")
    if (out / "config.json").is_file():
        return out
    from transformers import AutoModelForCausalLM, AutoTokenizer
    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    lm = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
    for attr in ("hf_quantizer", "quantization_method"):
        if hasattr(lm, attr):
            setattr(lm, attr, None)
    if getattr(lm.config, "quantization_config", None) is not None:
        del lm.config.quantization_config
    tmp = out.with_name(out.name + ".tmp")
    lm.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    (tmp / "toolkit_source.json").write_text(json.dumps({"gguf": gguf.name, "sha256": M.lookup(name).sha256}))
    tmp.rename(out)
    return out


def load(model_dir: Path) -> tuple[Any, Any]:
    from transformers import AutoModelForCausalLM, AutoTokenizer
    tok = AutoTokenizer.from_pretrained(model_dir)
    lm = AutoModelForCausalLM.from_pretrained(model_dir)
    return lm, tok


def train(base_dir: Path, examples: Sequence[Example], out_dir: Path, cfg: SFTConfig = SFTConfig(),
          progress: bool = True) -> dict:
    """Fine-tune the model in ``base_dir`` on ``examples`` and save it to ``out_dir`` (with its
    training log in ``train_log.json``); reuses ``out_dir`` when it already holds a finished run."""
    log_path = Path(out_dir) / "train_log.json"
    if log_path.is_file():
        return json.loads(log_path.read_text())
    lm, tok = load(base_dir)
    result = train_examples(lm, tok, examples, cfg, out_dir=Path(out_dir).with_name(Path(out_dir).name + ".run"),
                            log=print if progress else None, checkpoint_every=25)
    tmp = Path(out_dir).with_name(Path(out_dir).name + ".tmp")
    lm.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    (tmp / "train_log.json").write_text(json.dumps({**result, "base": str(base_dir)}, indent=1))
    tmp.rename(out_dir)
    return json.loads(log_path.read_text())
