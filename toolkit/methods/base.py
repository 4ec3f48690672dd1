"""One interface for every retrieval method: an offline step, an online step and a cost record.

    class MyMethod(Method):
        name = "my method"
        def offline(self, corpus):             # {doc_id: Document}: index, expand, train
            ...
        def online(self, queries):             # {qid: text} -> run {qid: {doc_id: score}}
            ...

The benchmark (:mod:`toolkit.methods.benchmark`) builds one instance per corpus (the 16,427-API library, UltraTool's
436 tools), calls ``offline`` once and ``online`` once per query set, and times both. A method fills in the part of
its :class:`Cost` the benchmark cannot see (LLM seconds and tokens, training minutes); a field it leaves ``None`` is
measured by the benchmark. A method whose inputs are not available (an LLM answer that was never generated, a model
that was never trained) raises :class:`MethodPending` from either step, with the command that would produce them and
an estimate of what that costs: the benchmark lists it as pending and never fills its numbers in.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Mapping

from toolkit.data.contract import Document, Run


@dataclass(frozen=True)
class Cost:
    """What a method costs. Offline (once per library): ``llm_seconds`` / ``llm_tokens`` of LLM calls (document
    expansion, training feedback), ``training_minutes``, ``index_seconds`` (building the index: encoding or
    tokenizing the documents). Online (per query): ``ms_per_query`` of retrieval (encoding the query, search,
    reranking) and ``llm_seconds_per_query`` / ``llm_tokens_per_query`` of LLM calls. ``None``: not known (tokens a
    trace did not record) or, for ``index_seconds`` and ``ms_per_query``, left to the benchmark to measure.
    ``ms_as``: (method name, multiplier) -- the online retrieval time is that of another method of the benchmark
    (a replayed fine-tuned MiniLM searches as fast as off-the-shelf MiniLM), times the multiplier (retrieval rounds)."""
    llm_seconds: float = 0.0
    llm_tokens: float | None = 0.0
    training_minutes: float = 0.0
    index_seconds: float | None = None
    ms_per_query: float | None = None
    llm_seconds_per_query: float = 0.0
    llm_tokens_per_query: float | None = 0.0
    ms_as: tuple[str, float] | None = None
    note: str = ""

    @property
    def offline_minutes(self) -> float:
        """LLM time, training and indexing, in minutes (an unmeasured index counts 0)."""
        return self.llm_seconds / 60 + self.training_minutes + (self.index_seconds or 0.0) / 60

    @property
    def online_seconds_per_query(self) -> float | None:
        """Retrieval plus LLM seconds per query (None while the retrieval time is unknown)."""
        if self.ms_per_query is None:
            return None
        return self.ms_per_query / 1000 + self.llm_seconds_per_query

    def __add__(self, other: "Cost") -> "Cost":
        """Two methods run one after the other (a combination): every field summed; unknown stays unknown."""
        def plus(a, b):
            return None if a is None or b is None else a + b
        notes = "; ".join(n for n in (self.note, other.note) if n)
        return Cost(**{f.name: plus(getattr(self, f.name), getattr(other, f.name))
                       for f in fields(self) if f.name not in ("ms_as", "note")}, note=notes)

    def resolved(self, measured: Mapping[str, "Cost"]) -> "Cost":
        """``ms_per_query`` from ``ms_as`` and the costs measured for the other methods (unchanged without ``ms_as``)."""
        if self.ms_as is None or self.ms_per_query is not None:
            return self
        ref = measured.get(self.ms_as[0])
        if ref is None or ref.ms_per_query is None:
            return self
        return replace(self, ms_per_query=ref.ms_per_query * self.ms_as[1])


@dataclass(frozen=True)
class Pending:
    """Why a method has no numbers yet, what produces its inputs, and what that costs (``estimate``:
    a :class:`Cost`; ``estimate_note`` says how it was measured or estimated)."""
    reason: str
    command: str
    estimate: Cost = field(default_factory=Cost)
    estimate_note: str = ""


class MethodPending(Exception):
    """Raised by ``offline`` or ``online`` when the method's inputs are not available."""

    def __init__(self, pending: Pending):
        if not isinstance(pending, Pending):
            raise TypeError(f"MethodPending takes a Pending record, got {type(pending).__name__} {pending!r}: raise "
                            f"MethodPending(Pending(reason={pending!r}, command='<the command that produces the "
                            "inputs>')) (from toolkit.methods import Pending)")
        super().__init__(f"pending: {pending.reason} (produce with: {pending.command})")
        self.pending = pending


class Method:
    """Base class of a benchmark method. Subclasses set ``name`` and implement :meth:`online` (and
    :meth:`offline` when they index, expand or train); ``cost`` holds what the benchmark cannot measure."""
    name: str = "method"
    #: cheap: no LLM and no training (the baselines every other method is tested against)
    cheap: bool = False
    #: a combination of other methods (the leaderboard lists them apart)
    combination: bool = False

    def __init__(self) -> None:
        self.cost = Cost()

    def offline(self, corpus: Mapping[str, Document]) -> None:
        """Index / expand / train on the corpus ({doc_id: Document}); nothing by default."""

    def online(self, queries: Mapping[str, str]) -> Run:
        """Queries ({qid: text}) -> run ({qid: {doc_id: score}})."""
        raise NotImplementedError(f"{type(self).__name__}.online")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class PendingMethod(Method):
    """A method whose inputs the committed caches do not hold: both steps raise :class:`MethodPending`."""

    def __init__(self, name: str, pending: Pending, cheap: bool = False):
        super().__init__()
        self.name, self.pending, self.cheap = name, pending, cheap
        self.cost = pending.estimate

    def offline(self, corpus):
        raise MethodPending(self.pending)

    def online(self, queries):
        raise MethodPending(self.pending)
