"""Defaults live in YAML: a key that a config under conf/ declares is read as `cfg.key` (struct mode: a
missing key is an error that names it), never as `cfg.get("key", default)`, which would repeat (and can
drift from) the YAML's default. The scan is static: every Python file outside tests/ and every
`.get("key"` on a config object (a name ending in `cfg`, or an attribute chain off one).
"""
from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SKIP_DIRS = {"tests", ".venv", ".git", "node_modules", "__pycache__", ".snakemake"}
# a config object: `cfg`, `model_cfg`, `self.cfg`, `cfg.hub`, `cfg["x"]` ... followed by .get("key"
GET_ON_CONFIG = re.compile(r"\b(\w*cfg(?:\.\w+|\[[^\]]+\])*)\.get\(\s*[\"'](\w+)[\"']")
# (file, key) left as they are, each with its reason: keep this list short
KNOWN = {
    ("annotate/serve.py", "release"): "the annotation app is its maintainers' to change",
}


def declared_keys(conf: Path) -> set[str]:
    """Every mapping key, at any depth, of every YAML file under conf/ (hydra's own block included)."""
    keys: set[str] = set()

    def walk(node):
        if isinstance(node, dict):
            for k, v in node.items():
                keys.add(str(k))
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    for path in sorted(conf.rglob("*.yaml")):
        walk(yaml.safe_load(path.read_text()))
    return keys


def python_files(root: Path):
    for path in sorted(root.rglob("*.py")):
        if not SKIP_DIRS & set(path.relative_to(root).parts):
            yield path


def gets_of_declared_keys(root: Path) -> list[str]:
    """'file:line: cfg.get("key") but conf/ declares key' for every offending call."""
    declared = declared_keys(root / "conf")
    found = []
    for path in python_files(root):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            for m in GET_ON_CONFIG.finditer(line):
                if m.group(2) in declared and (path.relative_to(root).as_posix(), m.group(2)) not in KNOWN:
                    found.append(f"{path.relative_to(root)}:{n}: {m.group(1)}.get({m.group(2)!r}) but conf/ "
                                 f"declares {m.group(2)!r}: read it as {m.group(1)}.{m.group(2)}")
    return found


def test_no_get_with_default_for_a_declared_key():
    found = gets_of_declared_keys(ROOT)
    assert not found, "defaults written twice (YAML and code):\n" + "\n".join(found)


def test_the_scan_catches_a_get_of_a_declared_key(tmp_path):
    """The check fails on a `cfg.get` of a key some YAML declares, and passes an undeclared one."""
    (tmp_path / "conf" / "model").mkdir(parents=True)
    (tmp_path / "conf" / "model" / "m.yaml").write_text("# a model\nname: x\nnested:\n  precision: auto\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text(
        "x = cfg.get('name')\ny = cfg.model.get(\"precision\", 'auto')\nz = cfg.get('undeclared', 1)\n"
        "w = {}.get('name')\n")
    found = gets_of_declared_keys(tmp_path)
    assert [f.split(": ")[0] for f in found] == ["pkg/a.py:1", "pkg/a.py:2"]
    assert "'precision'" in found[1]
