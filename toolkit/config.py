"""Checked overrides: one checker for every notebook's configuration object and for the runner's
``-p name=value`` parameters, so a typo or a value of the wrong type is refused the same way
everywhere, naming the parameter, what it expects and the default.

    cfg = overridden("40_querygen", PROFILES["standard"], {"test_requests": 100})
    check_value("01_baselines.ipynb: parameter 'k'", 3, default=100)

Types come from the dataclass annotations (``int | None`` accepts None); an int is accepted where a
float is expected, a list where a tuple is (converted), never a bool for a number or the reverse.
"""
from __future__ import annotations

import types
import typing
from dataclasses import fields, is_dataclass, replace
from typing import Any, Iterable


def _fits(value: Any, t: Any) -> bool:
    t = typing.get_origin(t) or t
    if t is Any:
        return True
    if t is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if t is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if t is tuple:
        return isinstance(value, (tuple, list))
    return isinstance(t, type) and isinstance(value, t)


def _type_name(expected: Iterable[Any]) -> str:
    names = [getattr(typing.get_origin(t) or t, "__name__", str(t)) for t in expected]
    return " or ".join(names) or "any value"


def check_value(what: str, value: Any, default: Any, expected: tuple = (), optional: bool = False) -> None:
    """Raise ``TypeError`` unless ``value`` fits ``expected`` (default: the type of ``default``);
    ``None`` fits only when ``optional`` (or nothing is known about the type). ``what`` names the
    parameter in the message, e.g. ``"40_querygen parameter 'k'"``."""
    expected = expected or ((type(default),) if default is not None else ())
    if (bad := non_finite(value)) is not None:
        raise ValueError(f"{what} must be a finite number, got {bad!r} (nan and inf are not parameter values)")
    if value is None:
        if optional or not expected:
            return
    elif not expected or any(_fits(value, t) for t in expected):
        return
    got = "None" if value is None else f"{type(value).__name__} {value!r}"
    raise TypeError(f"{what} must be {_type_name(expected)}{' or None' if optional else ''} "
                    f"(default {default!r}), got {got}")


def non_finite(value: Any) -> float | str | None:
    """The first non-finite float (nan, inf, -inf: ``-p k1=1e999``, papermill's ``-p k1 nan``) in ``value`` or in the
    lists, tuples and dict values it holds; None when every number is finite."""
    import math
    if isinstance(value, float) and not math.isfinite(value):
        return value
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        for v in value:
            if (bad := non_finite(v)) is not None:
                return bad
    return None


def _annotation(cls: type, name: str) -> tuple[tuple, bool]:
    """(accepted types, None accepted) from a dataclass field's annotation."""
    hint = typing.get_type_hints(cls).get(name, Any)
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = typing.get_args(hint)
        return tuple(a for a in args if a is not type(None)), type(None) in args
    return (hint,), False


def overridden(where: str, base: Any, overrides: dict, fixed: Iterable[str] = ("profile", "extra")) -> Any:
    """``base`` (a frozen dataclass instance) with ``overrides`` applied after checking each name
    and type; ``where`` names the notebook in the messages. Range checks stay in the dataclass's
    ``__post_init__``, which ``replace`` runs."""
    known = [f.name for f in fields(base) if f.init and f.name not in set(fixed)]
    out = {}
    for name, value in overrides.items():
        if name not in known:
            raise ValueError(f"{where} has no parameter {name!r}; its parameters: {', '.join(known)}")
        expected, optional = _annotation(type(base), name)
        current = getattr(base, name)
        if isinstance(value, dict) and is_dataclass(current) and not isinstance(current, type):
            # a nested configuration (-p 'training={"rounds": 2}'): its fields are checked as the top level's
            out[name] = overridden(f"{where} {name}", current, value, fixed=())
            continue
        check_value(f"{where} parameter {name!r}", value, current, expected, optional)
        if isinstance(value, list) and any((typing.get_origin(t) or t) is tuple for t in expected):
            value = tuple(value)
        out[name] = value
    return replace(base, **out)


def check_sizes(where: str, obj: Any, names: Iterable[str]) -> None:
    """Each of ``obj``'s fields ``names`` is a size: an int >= 1, or None for "all" (``where`` names the notebook)."""
    for name in names:
        v = getattr(obj, name)
        if v is not None and v < 1:
            raise ValueError(f"{where} parameter {name} must be >= 1 or None (all), got {v}")


def int_at_least(minimum: int):
    """An argparse ``type=`` for integer options with a lower bound (``--k``, ``--limit``, ``--threads``)."""
    import argparse
    bound = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"

    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {bound}, got {text!r}") from None
        if v < minimum:
            raise argparse.ArgumentTypeError(f"must be {bound}, got {v}")
        return v
    return parse


def finite_at_least(minimum: float):
    """An argparse ``type=`` for a finite float with a lower bound (``--tolerance``): "nan" and "inf" parse as floats
    but make every comparison false or true, so they are refused here."""
    import argparse
    import math

    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number >= {minimum}, got {text!r}") from None
        if not math.isfinite(v) or v < minimum:
            raise argparse.ArgumentTypeError(f"must be a finite number >= {minimum}, got {text!r}")
        return v
    return parse


# notebooks whose parameters cell is ``profile`` + ``overrides``: their configuration object checks
# the overrides before anything runs
CONFIGS = {"01_baselines": "toolkit.baselines", "10_toolrerank": "toolkit.toolrerank.config", "20_reinvoke": "toolkit.reinvoke.config", "30_feedback": "toolkit.feedback.config",
           "40_querygen": "toolkit.querygen.config", "50_headtohead": "toolkit.methods.benchmark"}
