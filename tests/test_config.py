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


def test_baselines_config_profiles_and_checks():
    from toolkit.baselines import config_for
    assert config_for("smoke").corpus == "pool" and config_for("standard").corpus == "library"
    assert config_for("standard").sample_queries is None
    assert config_for("standard", bm25_stemmer="english").bm25_params()["stemmer"] == "english"
    with pytest.raises(ValueError, match="ties must be one of"):
        config_for("standard", ties="random")
    with pytest.raises(TypeError, match="'bm25_k1' must be float"):
        config_for("standard", bm25_k1="high")


def test_toolrerank_config_routes_setup_fields():
    from toolkit.toolrerank.config import config_for
    c = config_for("standard", ce_neg_pool="all", subset_queries=None)
    assert c.setup.ce_neg_pool == "all" and c.subset_queries is None and c.setup.reranker_dir != \
        config_for("standard").setup.reranker_dir
    with pytest.raises(ValueError, match="or a training Setup field"):
        config_for("standard", epochs=3)
    with pytest.raises(ValueError, match="depth must be >= 10"):
        config_for("standard", depth=5)


def test_toolrerank_split_seed_and_evaluation_seed_are_separate_parameters():
    from toolkit.toolrerank.config import config_for
    c = config_for("standard", seed=2, eval_seed=1)                   # seed: the held-out draw (training Setup)
    assert c.setup.seed == 2 and c.eval_seed == 1
