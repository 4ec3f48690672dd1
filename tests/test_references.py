"""A clone that stands on its own: no code or notebook points at a file outside the repository (the papers are
cited by title and arXiv id, the design by the code that holds it) or at an issue tracker's numbers."""
from __future__ import annotations

import re

from toolkit.paths import REPO

OUTSIDE = re.compile(r"\.\./shared/papers|DESIGN(\.md)? §|[Ii]ssues? \d")


def test_no_reference_outside_the_repository():
    bad = []
    for root in ("toolkit", "notebooks"):
        for p in sorted((REPO / root).rglob("*")):
            if p.suffix not in (".py", ".md", ".ipynb") or "__pycache__" in p.parts:
                continue
            for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
                if OUTSIDE.search(line):
                    bad.append(f"{p.relative_to(REPO)}:{n}: {line.strip()[:100]}")
    assert not bad, "references a clone cannot follow:\n" + "\n".join(bad)
