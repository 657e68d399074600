"""The layers point one way (README, Layout): data_prep/ and metrics/ at the bottom, models/ above
them, common/ above models/, train/ and evaluation/ above that (never importing each other), then
benchmarks/. Checked on every import statement of every module, lazy ones inside functions included."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# package -> packages it may not import
FORBIDDEN = {
    "data_prep": {"models", "common", "train", "evaluation", "benchmarks"},
    "metrics": {"models", "common", "train", "evaluation", "benchmarks"},
    "models": {"common", "train", "evaluation", "benchmarks"},
    "common": {"train", "evaluation", "benchmarks"},
    "train": {"evaluation", "benchmarks"},
    "evaluation": {"train", "benchmarks"},
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
