import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture
def no_llm(monkeypatch):
    """Replay only: the standard profile's backend, and every LLM backend's ``generate`` patched to fail
    if called (a replay test that passes with it read everything from the committed caches)."""
    from toolkit.llm import backends

    monkeypatch.delenv("TOOLKIT_LLM_BACKEND", raising=False)

    def no_model(*a, **k):
        raise AssertionError("a replay must not call a model")
    for cls in (backends.LocalGGUFBackend, backends.TransformersBackend, backends.OpenAIBackend):
        monkeypatch.setattr(cls, "generate", no_model)


@pytest.fixture(autouse=True)
def _fresh_provenance():
    """Each test starts with an empty record of inputs read and LLM clients opened (toolkit.provenance is
    process-wide, as in a notebook kernel: one test's echo client or damaged probe must not reach another's
    Recorder)."""
    from toolkit import provenance
    provenance.reset()
    yield
    provenance.reset()
