"""The one override checker (toolkit.config) used by the notebook configurations and the runner."""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from toolkit.config import check_value, overridden


@dataclass(frozen=True)
class _Cfg:
    profile: str = "smoke"
    n: int = 3
    cap: int | None = None
    rate: float = 0.5
    flag: bool = False
    grid: tuple[float, ...] = (0.0, 0.5)

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ValueError(f"n must be >= 1, got {self.n}")


@pytest.mark.parametrize("overrides, error, text", [
    ({"m": 1}, ValueError, "nb has no parameter 'm'; its parameters: n, cap, rate, flag, grid"),
    ({"n": "three"}, TypeError, "nb parameter 'n' must be int (default 3), got str 'three'"),
    ({"n": True}, TypeError, "must be int"),
    ({"n": None}, TypeError, "got None"),
    ({"flag": 1}, TypeError, "must be bool"),
    ({"cap": 2.5}, TypeError, "must be int or None"),
    ({"profile": "paper"}, ValueError, "no parameter 'profile'"),
    ({"n": 0}, ValueError, "n must be >= 1"),           # the dataclass's own range check still runs
])
def test_bad_overrides_are_refused_naming_the_parameter(overrides, error, text):
    with pytest.raises(error) as e:
        overridden("nb", _Cfg(), overrides)
    assert text in str(e.value)


def test_good_overrides_are_applied_and_converted():
    c = overridden("nb", _Cfg(), {"n": 5, "cap": None, "rate": 1, "grid": [0.1, 0.2]})
    assert (c.n, c.cap, c.rate, c.grid) == (5, None, 1, (0.1, 0.2))
    assert overridden("nb", _Cfg(), {"cap": 7}).cap == 7


def test_check_value_without_a_known_type_accepts_anything():
    check_value("p", "x", None)
    check_value("p", None, None)
    with pytest.raises(TypeError, match="p must be float"):
        check_value("p", "x", 0.5)


def test_reinvoke_config_refuses_bad_values_and_uses_none_for_all():
    from toolkit.reinvoke.config import config_for
    assert config_for("paper").toole_single_sample is None and config_for("paper").m_toolbench is None
    assert config_for("standard", backbones=["qwen-0.5b"]).main_backbone == "qwen-0.5b"
    with pytest.raises(ValueError, match="toolbench_corpus must be pool or library"):
        config_for("standard", toolbench_corpus="web")
    with pytest.raises(ValueError, match="m_toolbench must be >= 1 or None"):
        config_for("standard", m_toolbench=0)
    with pytest.raises(TypeError, match="20_reinvoke parameter 'backbones' must be tuple"):
        config_for("standard", backbones="qwen-1.5b")
