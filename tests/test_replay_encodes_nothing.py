"""A standard replay encodes no text on a fresh clone: every vector it looks up is in the committed layer
(``data/embeddings/``), whatever this machine's own cache holds. Each standard results file records, per
embedding namespace, how many distinct texts it looked up that no committed shard holds."""
import json
from pathlib import Path

import pytest

from toolkit.paths import RESULTS

STANDARD = sorted(Path(RESULTS).glob("*/standard.json"))


@pytest.mark.parametrize("path", STANDARD, ids=lambda p: p.parent.name)
def test_standard_replay_needs_no_encoding(path):
    doc = json.loads(path.read_text())
    assert "embeddings_not_committed" in doc, (
        f"{path}: no 'embeddings_not_committed' record; re-run the notebook's standard profile")
    missing = {k: v for k, v in doc["embeddings_not_committed"].items() if v}
    assert not missing, (
        f"{path}: a fresh clone would encode {missing} (texts not in data/embeddings/); run "
        "'TOOLKIT_EMBEDDING_LOG=/tmp/emb python -m toolkit run <nb> --profile standard' and "
        "'python -m toolkit embeddings commit --log /tmp/emb', then re-run the notebook")


def test_counter_counts_uncommitted_lookups(tmp_path, monkeypatch):
    """The counter itself: texts outside the committed layer are counted once each, committed ones not at all."""
    from toolkit import provenance
    from toolkit.retrieval import embedding_cache as E
    provenance.reset()
    monkeypatch.setenv("TOOLKIT_CACHE", str(tmp_path))
    monkeypatch.setenv("TOOLKIT_COMMITTED_EMBEDDINGS", "0")          # no committed layer: everything counts
    E.encode("minilm", ["alpha tool", "beta tool", "alpha tool"])
    assert sum(provenance.uncommitted_vectors().values()) == 2
    provenance.reset()
    assert provenance.uncommitted_vectors() == {}
