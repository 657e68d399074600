"""The repo's import graph, read from the source (every import statement, lazy ones inside functions
included): what tests/test_layers.py checks for layering and cycles, and what the release pipeline takes
as a stage's code (release/inputs.py: the modules its entry module reaches, through any chain)."""
from __future__ import annotations

import ast
import hashlib
from pathlib import Path

PACKAGES = ("data_prep", "metrics", "models", "common", "train", "evaluation", "annotate", "release", "benchmarks")


def module_files(root: Path, packages=PACKAGES) -> dict[str, Path]:
    """module name -> its file; a package is named by its folder and stands for its __init__.py."""
    return {".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__"): p
            for pkg in packages for p in sorted((Path(root) / pkg).rglob("*.py")) if "__pycache__" not in p.parts}


def lazy_exports(tree: ast.Module) -> dict[str, str]:
    """A package's `__getattr__ = lazy_exports(__name__, {submodule: [names]})` (models/exports.py) as
    {name: submodule}: the names its __init__ imports only when asked for them."""
    return file_facts(tree)["lazy"]


def _lazy_call(node: ast.AST) -> dict[str, str] | None:
    if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "lazy_exports" and len(node.args) == 2
            and isinstance(node.args[1], ast.Dict)):
        return {name: sub.value for sub, names in zip(node.args[1].keys, node.args[1].values)
                if isinstance(sub, ast.Constant) and isinstance(names, (ast.List, ast.Tuple))
                for name in (n.value for n in names.elts if isinstance(n, ast.Constant))}
    return None


def file_facts(tree: ast.Module) -> dict:
    """What the graph needs of one file, read in one walk of its tree: its import statements (`import a.b, c` as
    ["import", ["a.b", "c"]]; `from m import x, y` at level 0 as ["from", m, [x, y]]) and its lazy exports (the first lazy_exports call)."""
    imports, lazy = [], None
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imports.append(["import", [a.name for a in node.names]])
        elif isinstance(node, ast.ImportFrom):
            if node.module and not node.level:
                imports.append(["from", node.module, [a.name for a in node.names]])
        elif lazy is None:
            lazy = _lazy_call(node)
    return {"imports": imports, "lazy": lazy or {}}


def source_facts(path: Path, cache: dict | None = None) -> dict:
    """file_facts of a source file; with `cache` ({sha256 of its text: facts}), a file already read is not parsed."""
    text = path.read_text(encoding="utf-8")
    if cache is None:
        return file_facts(ast.parse(text))
    key = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if key not in cache:
        cache[key] = file_facts(ast.parse(text))
    return cache[key]


def module_graph(root: Path, packages=PACKAGES, lazy: bool = False, cache: dict | None = None) -> dict[str, set[str]]:
    """module -> the project modules it imports (lazy imports inside functions included). `from a.b import c`
    points at a.b.c where that is a module, else at a.b (a package points at its __init__). With `lazy`, a name
    that a package exports lazily points at the submodule that defines it too (what runs when it is used),
    and a plain `import a.b` of such a package at all of them. `cache`: source_facts's, kept by the caller."""
    names = module_files(root, packages)
    facts = {name: source_facts(path, cache) for name, path in names.items()}
    exports = {name: f["lazy"] for name, f in facts.items()} if lazy else {}
    graph = {}
    for name, f in facts.items():
        out = set()
        for imp in f["imports"]:
            if imp[0] == "from":
                _, module, imported = imp
                subs = {f"{module}.{a}" for a in imported} & names.keys()
                out |= subs or ({module} & names.keys())
                if module in names and len(subs) < len(imported):
                    out.add(module)  # names taken from the module itself, beside its submodules
                lazy_of = exports.get(module, {})
                out |= {f"{module}.{lazy_of[a]}" for a in imported if a in lazy_of} & names.keys()
                continue
            for a in imp[1]:
                if a in names:
                    out.add(a)
                    out |= {f"{a}.{sub}" for sub in exports.get(a, {}).values()} & names.keys()
        graph[name] = out - {name}
    return graph


def closure(graph: dict[str, set[str]], starts) -> set[str]:
    """Every module that importing `starts` runs: what they import through any chain, and the __init__ of
    every package on the way (importing a.b.c runs a and a.b first)."""
    seen, todo = set(), [s for s in starts if s in graph]
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        parts = m.split(".")
        todo += [p for p in (".".join(parts[:k]) for k in range(1, len(parts))) if p in graph and p not in seen]
        todo += [d for d in graph[m] if d not in seen]
    return seen


def entry_modules(module: str, graph: dict[str, set[str]]) -> list[str]:
    """What `python -m module` imports first: the module, and its __main__ when it is a package."""
    return [m for m in (module, f"{module}.__main__") if m in graph]
