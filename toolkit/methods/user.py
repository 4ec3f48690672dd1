"""Your methods on notebook 50's leaderboard without editing it: ``methods`` names classes to import.

    python -m toolkit run 50_headtohead --profile smoke -p methods='["mypackage.module:MyMethod"]'
    papermill notebooks/50_headtohead.ipynb out.ipynb -p methods '["examples/word_overlap.py:WordOverlap"]'

Each entry is ``module.path:ClassName`` (imported with the clone and the working directory on ``sys.path``) or
``path/to/file.py:ClassName`` (a path relative to the working directory or to the clone). The class must be a
subclass of :class:`toolkit.methods.Method` whose constructor takes no argument, with a ``name`` that no built-in
method and no other entry uses. A user method runs wherever the built-ins run (every set, the leaderboard, the
Pareto figure, the cost growth) but is never the reference baseline the p values are computed against
(:data:`toolkit.methods.benchmark.REFERENCE_CANDIDATES`).
"""
from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from pathlib import Path
from typing import Callable, Iterable

from toolkit.methods.base import Method

PARAMETER = "50_headtohead parameter methods"


def parse_specs(methods) -> list[str]:
    """``methods`` as a list of ``module:Class`` strings: a list, or (papermill's ``-p methods '[...]'`` passes a
    string) a JSON / Python list in a string, or one ``module:Class`` string."""
    if isinstance(methods, str):
        text = methods.strip()
        if text.startswith("["):
            try:
                methods = json.loads(text)
            except json.JSONDecodeError:
                import ast
                try:
                    methods = ast.literal_eval(text)
                except (ValueError, SyntaxError):
                    raise ValueError(f"{PARAMETER}: {methods!r} is not a list; give "
                                     f"'[\"mypackage.module:MyMethod\"]'") from None
        else:
            methods = [text] if text else []
    if not isinstance(methods, (list, tuple)) or not all(isinstance(m, str) for m in methods):
        raise TypeError(f"{PARAMETER} must be a list of 'module:Class' strings, e.g. "
                        f"'[\"mypackage.module:MyMethod\"]', got {type(methods).__name__} {methods!r}")
    return list(methods)


def import_class(spec: str):
    """The object ``spec`` (``module.path:Name`` or ``file.py:Name``) names."""
    from toolkit.paths import REPO
    if spec.count(":") != 1 or not all(spec.split(":")):
        raise ValueError(f"{PARAMETER}: {spec!r} must look like 'mypackage.module:MyMethod' or "
                         f"'path/to/file.py:MyMethod'")
    target, name = spec.split(":")
    if target.endswith(".py"):
        path = next((p for p in (Path(target), REPO / target) if p.is_file()), None)
        if path is None:
            raise FileNotFoundError(f"{PARAMETER}: no file {target!r} (looked in {Path.cwd()} and {REPO})")
        mod_name = f"_user_method_{path.stem}"
        loader = importlib.util.spec_from_file_location(mod_name, path)
        module = importlib.util.module_from_spec(loader)
        sys.modules[mod_name] = module
        loader.loader.exec_module(module)
    else:
        for p in (str(Path.cwd()), str(REPO)):
            if p not in sys.path:
                sys.path.append(p)
        try:
            module = importlib.import_module(target)
        except ModuleNotFoundError as e:
            raise ModuleNotFoundError(f"{PARAMETER}: cannot import {target!r} ({e}); install the package or put it "
                                      f"on PYTHONPATH, or give 'path/to/file.py:{name}'") from None
    if not hasattr(module, name):
        raise AttributeError(f"{PARAMETER}: module {target!r} has no {name!r}")
    return getattr(module, name)


def load_methods(methods, reserved: Iterable[str] = ()) -> dict[str, Callable[[], Method]]:
    """name -> class of each entry of ``methods``, imported and checked: a :class:`Method` subclass, built without
    arguments, with ``online`` implemented and a ``name`` not in ``reserved`` (the built-ins) nor used twice."""
    out: dict[str, Callable[[], Method]] = {}
    reserved = set(reserved)
    for spec in parse_specs(methods):
        cls = import_class(spec)
        if not (isinstance(cls, type) and issubclass(cls, Method)):
            raise TypeError(f"{PARAMETER}: {spec!r} is not a subclass of toolkit.methods.Method "
                            f"(got {cls!r}); subclass it and implement online(queries)")
        if cls.online is Method.online:
            raise TypeError(f"{PARAMETER}: {spec!r} does not implement online(queries) -> run")
        try:
            instance = cls()
        except TypeError as e:
            raise TypeError(f"{PARAMETER}: {spec!r} must be built without arguments ({e}); give its parameters "
                            f"defaults") from None
        name = instance.name
        if not isinstance(name, str) or not name.strip() or name == Method.name:
            raise ValueError(f"{PARAMETER}: {spec!r} needs a name of its own (set the class attribute name = '...')")
        if name in reserved:
            raise ValueError(f"{PARAMETER}: {spec!r} is named {name!r} like a built-in method; rename it")
        if name in out:
            raise ValueError(f"{PARAMETER}: two entries are named {name!r}; rename one")
        out[name] = cls
    return out
