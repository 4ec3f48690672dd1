"""Types shared by the client and the backends: sampling parameters, requests, answers, errors."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any, Union

Messages = list[dict[str, str]]
Prompt = Union[str, Messages]


class LLMError(RuntimeError):
    """Any failure of an LLM backend (server down, bad request, model missing)."""


class ServerUnavailable(LLMError):
    """The backend could not be reached after all retries."""


class ReplayMiss(LLMError):
    """Replay mode was asked for an answer that is not in the cache."""


@dataclass(frozen=True)
class Sampling:
    """Decoding parameters; every field is part of the cache key.

    ``temperature=0`` is greedy decoding. ``seed`` is the seed of sample 0; sample ``i`` uses
    ``seed + i`` so that n samples are distinct and each is reproducible on its own.
    ``top_k=0`` and ``min_p=0`` mean "off"; they are sent explicitly to the local backend because
    llama.cpp's own defaults (top_k=40, min_p=0.05) would otherwise apply silently.

    ``max_lines`` (0 = off) ends the answer once it holds that many non-empty lines (:func:`truncate_at_lines`
    says what a line is): a stop rule that no stop string can express, since a string stop cannot count lines.
    The local backend stops decoding there (a llama.cpp grammar, :func:`lines_grammar`, whose completion forces
    the end-of-turn token), the others cut the text after decoding, exactly as they treat ``stop`` strings.
    ``repeat_penalty`` is llama.cpp's (and transformers' ``repetition_penalty``); 1.0 is off, the value the local
    backend always sent. ``dry_multiplier`` (0 = off) is llama.cpp's DRY sampler ("don't repeat yourself",
    base 1.75, allowed length 2, over the whole slot context): it penalises a token that would extend a sequence
    already seen in the context, so it ends the paragraph-long verbatim loops that a windowed repetition penalty
    (64 tokens) does not see; only the llama.cpp backends have it. These were added after the first caches: at their
    defaults they stay out of :meth:`key` (:data:`LATER_SAMPLING_DEFAULTS`), so every committed answer keeps its key.
    """

    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0
    max_tokens: int = 256
    stop: tuple[str, ...] = ()
    seed: int | None = 0
    max_lines: int = 0
    repeat_penalty: float = 1.0
    dry_multiplier: float = 0.0

    def __post_init__(self) -> None:
        if isinstance(self.stop, str):
            object.__setattr__(self, "stop", (self.stop,))
        else:
            object.__setattr__(self, "stop", tuple(self.stop))
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.top_k < 0:
            raise ValueError(f"top_k must be >= 0 (0 = off), got {self.top_k}")
        if not 0 <= self.min_p < 1:
            raise ValueError(f"min_p must be in [0, 1), got {self.min_p}")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens}")
        if self.max_lines < 0:
            raise ValueError(f"max_lines must be >= 0 (0 = off), got {self.max_lines}")
        if not self.repeat_penalty > 0:
            raise ValueError(f"repeat_penalty must be > 0 (1.0 = off), got {self.repeat_penalty}")
        if not self.dry_multiplier >= 0:
            raise ValueError(f"dry_multiplier must be >= 0 (0 = off), got {self.dry_multiplier}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def key(self) -> dict:
        d = asdict(self)
        d["stop"] = list(self.stop)
        # float formatting must not make 0.7 and 0.70000001 different keys
        for k in ("temperature", "top_p", "min_p", "repeat_penalty", "dry_multiplier"):
            d[k] = round(float(d[k]), 6)
        for k, old in LATER_SAMPLING_DEFAULTS.items():
            if d[k] == old:
                del d[k]
        return d

    def seed_for(self, index: int) -> int | None:
        return None if self.seed is None else int(self.seed) + int(index)

    def with_(self, **kw: Any) -> "Sampling":
        return replace(self, **{k: v for k, v in kw.items() if v is not None})


# Sampling fields added after answers were cached, with the value those answers were made with: at that value a
# field is left out of the cache key, so the committed caches keep their keys
LATER_SAMPLING_DEFAULTS = {"max_lines": 0, "repeat_penalty": 1.0, "dry_multiplier": 0.0}

GREEDY = Sampling()


@dataclass
class Request:
    kind: str            # "chat" (messages) or "completion" (raw text)
    prompt: Prompt
    sampling: Sampling
    index: int = 0       # sample index; the backend uses sampling.seed_for(index)

    def messages(self) -> Messages:
        if self.kind != "chat":
            raise ValueError("not a chat request")
        return as_messages(self.prompt)


@dataclass
class Answer:
    text: str
    finish_reason: str | None = None
    completion_tokens: int | None = None
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    seconds: float | None = None
    extra: dict = field(default_factory=dict)


def as_messages(prompt: Prompt) -> Messages:
    """A bare string is one user message; a list of {role, content} is checked and copied."""
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    out = []
    for m in prompt:
        if not isinstance(m, dict) or "role" not in m or "content" not in m:
            raise ValueError(f"chat messages must be dicts with 'role' and 'content', got {m!r}")
        if m["role"] not in ("system", "user", "assistant"):
            raise ValueError(f"unknown chat role {m['role']!r}")
        out.append({"role": str(m["role"]), "content": str(m["content"])})
    return out


def truncate_at_stop(text: str, stop: tuple[str, ...]) -> tuple[str, bool]:
    """Cut ``text`` at the first stop string (backends that cannot stop on strings)."""
    cut = min((i for i in (text.find(s) for s in stop if s) if i >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


def truncate_at_lines(text: str, max_lines: int) -> tuple[str, bool]:
    """Cut ``text`` after its ``max_lines``-th non-empty line (a line: the characters between two newlines;
    empty lines are not counted, a line of spaces is). Returns (text, cut); ``max_lines=0`` is off. The
    kept text ends with that line, without the newline that followed it."""
    if max_lines <= 0:
        return text, False
    seen, pos = 0, 0
    while True:
        end = text.find("\n", pos)
        line = text[pos:] if end < 0 else text[pos:end]
        if line:
            seen += 1
            if seen == max_lines:
                stop = len(text) if end < 0 else end
                return text[:stop], bool(text[stop:].strip("\n"))
        if end < 0:
            return text, False
        pos = end + 1


def lines_grammar(max_lines: int) -> str:
    """A llama.cpp GBNF grammar that admits at most ``max_lines`` non-empty lines (empty lines between them
    allowed, one final newline): once the last line's newline is written the grammar is complete and only the
    end-of-turn token can follow, so decoding stops where :func:`truncate_at_lines` would cut."""
    if max_lines < 1:
        raise ValueError(f"max_lines must be >= 1, got {max_lines}")
    more = f' ("\\n"+ line){{0,{max_lines - 1}}}' if max_lines > 1 else ""
    return f'root ::= "\\n"* line{more} "\\n"?\nline ::= [^\\n]+\n'
