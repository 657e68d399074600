"""The layers point one way (README, Layout): data_prep/ and metrics/ at the bottom, models/ above
them, common/ above models/, train/, evaluation/ and annotate/ above that (never importing each other), then
release/ and benchmarks/; and no module imports itself through any chain of imports. Checked on every import statement of
every module, lazy ones inside functions included."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# package -> packages it may not import
FORBIDDEN = {
    "data_prep": {"models", "common", "train", "evaluation", "annotate", "release", "benchmarks"},
    "metrics": {"models", "common", "train", "evaluation", "annotate", "release", "benchmarks"},
    "models": {"common", "train", "evaluation", "annotate", "release", "benchmarks"},
    "common": {"train", "evaluation", "annotate", "release", "benchmarks"},
    "train": {"evaluation", "annotate", "release", "benchmarks"},
    "evaluation": {"train", "annotate", "release", "benchmarks"},
    # the annotation app sits beside train/ and evaluation/: it imports neither, and they do not import it
    "annotate": {"train", "evaluation", "release", "benchmarks"},
    "release": {"benchmarks"},  # the release pipeline runs the entry points above it as processes
}


def imported_packages(path: Path) -> set[tuple[str, int]]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {(a.name.split(".")[0], node.lineno) for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add((node.module.split(".")[0], node.lineno))
    return out


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_no_module_imports_a_layer_above_or_beside_it(package):
    bad = [f"{p.relative_to(ROOT)}:{line} imports {name}" for p in sorted((ROOT / package).rglob("*.py"))
           for name, line in imported_packages(p) if name in FORBIDDEN[package]]
    assert not bad, "\n".join(bad)


# ---------------------------------------------------------------------------- import cycles
# the graph reader is shared with the release pipeline, which takes a stage's code from it (release/imports.py)
from release.imports import module_graph  # noqa: E402


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected group of modules that import each other (Tarjan), as a path a -> .. -> a."""
    index, low, stack, on, groups = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(group)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    cycles = []
    for group in groups:  # a shortest way back to the group's first module, through the group
        start = min(group)
        paths, seen = [[start]], {start}
        while paths:
            path = paths.pop(0)
            nxt = sorted(graph[path[-1]] & group)
            if start in nxt:
                cycles.append(path + [start])
                break
            for w in nxt:
                if w not in seen:
                    seen.add(w)
                    paths.append(path + [w])
    return cycles


def test_no_module_imports_itself_through_a_chain():
    cycles = import_cycles(module_graph(ROOT))
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_a_planted_cycle_is_found_and_named(tmp_path):
    (tmp_path / "models" / "fam").mkdir(parents=True)
    (tmp_path / "models" / "__init__.py").write_text("")
    (tmp_path / "models" / "fam" / "__init__.py").write_text("from models.fam.a import f\n")
    (tmp_path / "models" / "fam" / "a.py").write_text("def f():\n    from models.fam.b import g\n")
    (tmp_path / "models" / "fam" / "b.py").write_text("from models.fam import a\nfrom models import text\n")
    (tmp_path / "models" / "text.py").write_text("import models.fam\n")
    graph = module_graph(tmp_path, ("models",))
    assert graph["models.fam.b"] == {"models.fam.a", "models.text"}  # `from models.fam import a`: the submodule
    assert import_cycles(graph) == [["models.fam", "models.fam.a", "models.fam.b", "models.text", "models.fam"]]
    (tmp_path / "models" / "text.py").write_text("")
    assert import_cycles(module_graph(tmp_path, ("models",))) == [["models.fam.a", "models.fam.b", "models.fam.a"]]
