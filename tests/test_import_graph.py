"""The package's import graph (issue 51): no module imports itself back through others, and no method package
imports another's. Every import is read, the ones inside functions too (a lazy import still ties two modules)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "toolkit"
# each paper's package keeps its own algorithms; what two of them share lives outside them (toolkit.retrieval, ...)
METHOD_PACKAGES = ("toolrerank", "reinvoke", "feedback", "querygen")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in ROOT.rglob("*.py")}


def imports_of(path: Path, name: str, known: set[str]) -> set[str]:
    """The toolkit modules ``path`` imports (``from a import b`` is module ``a.b`` when that is a module)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "toolkit"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                src = ".".join(base + ([node.module] if node.module else []))
            else:
                src = node.module or ""
            if src.split(".")[0] != "toolkit":
                continue
            subs = {f"{src}.{a.name}" for a in node.names if f"{src}.{a.name}" in known}
            out |= subs or {src}
            if len(subs) < len(node.names):
                out.add(src)
    return {m for m in out if m in known and m != name}


def graph() -> dict[str, set[str]]:
    mods = modules()
    return {n: imports_of(p, n, set(mods)) for n, p in mods.items()}


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    import sys
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 10_000))
    try:
        for v in sorted(g):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(old)
    return out


def _without_packages(g: dict[str, set[str]]) -> dict[str, set[str]]:
    """Edges into a package's ``__init__`` are left out: ``from toolkit.feedback import stages`` names the package
    only to reach its submodule, and an ``__init__`` that re-exports its modules would make every one a circle."""
    packages = {n for n, p in modules().items() if p.name == "__init__.py"}
    return {n: {m for m in e if m not in packages} for n, e in g.items()}


def test_the_graph_is_read_as_it_is():
    g = graph()
    assert len(g) > 50
    # a known edge, an in-function one, and a relative one resolve
    assert "toolkit.feedback.experiment" in g["toolkit.feedback.stages"]
    assert "toolkit.feedback.stages" in g["toolkit.feedback.collect"]


def test_no_import_circle():
    found = cycles(_without_packages(graph()))
    assert not found, "import circles: " + "; ".join(" <-> ".join(c) for c in found)


def test_the_cycle_finder_finds_a_lazy_circle():
    g = _without_packages(graph())
    g["toolkit.feedback.experiment"] = g["toolkit.feedback.experiment"] | {"toolkit.feedback.stages"}
    assert ["toolkit.feedback.experiment", "toolkit.feedback.stages"] in cycles(g)


@pytest.mark.parametrize("package", METHOD_PACKAGES)
def test_no_method_package_imports_another(package):
    g = graph()
    others = [p for p in METHOD_PACKAGES if p != package]
    bad = sorted((n, m) for n, e in g.items() if n.startswith(f"toolkit.{package}")
                 for m in e if any(m == f"toolkit.{o}" or m.startswith(f"toolkit.{o}.") for o in others))
    assert not bad, f"toolkit.{package} imports another method's package: {bad}"
