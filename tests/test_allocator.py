"""The evaluation CLIs re-execute themselves under jemalloc (models/memory.py, use_jemalloc): the library is
really preloaded in the new process, QASEM_ALLOCATOR=glibc keeps glibc's, a missing library is said and
never re-executes, and every evaluation CLI calls it first. jemalloc is a test requirement (scripts/setup.sh
installs Debian's libjemalloc2): missing, the test fails, it never skips."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from models.memory import jemalloc_path, use_jemalloc

ROOT = Path(__file__).resolve().parents[1]
# what the child prints: use_jemalloc's answer, whether jemalloc is mapped, and its arguments (kept by the re-execution)
PROBE = ("import sys; from models.memory import use_jemalloc; r = use_jemalloc(); "
         "print(r, 'libjemalloc' in open('/proc/self/maps').read(), sys.argv[1:])")


def run_probe(**env) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "QASEM_ALLOCATOR", "QASEM_JEMALLOC")}
    return subprocess.run([sys.executable, "-c", PROBE, "a b", "--x=1"], cwd=ROOT, env={**base, **env},
                          capture_output=True, text=True, timeout=60)


def test_reexecutes_with_jemalloc_preloaded():
    if jemalloc_path() is None:
        pytest.fail("no libjemalloc.so.2: bash scripts/system_packages.sh installs Debian's libjemalloc2 as root or with "
                    "passwordless sudo (sudo apt-get install -y libjemalloc2), or set QASEM_JEMALLOC")
    out = run_probe()
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[0] == "jemalloc True ['a b', '--x=1']"  # the same arguments, jemalloc mapped


def test_glibc_on_request():
    out = run_probe(QASEM_ALLOCATOR="glibc")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("glibc False")


def test_bad_settings_are_named():
    out = run_probe(QASEM_ALLOCATOR="tcmalloc")
    assert out.returncode != 0 and "QASEM_ALLOCATOR='tcmalloc'" in out.stderr
    out = run_probe(QASEM_JEMALLOC="/nonexistent/libjemalloc.so.2")
    assert out.returncode != 0 and "QASEM_JEMALLOC=/nonexistent/libjemalloc.so.2: no such file" in out.stderr


def test_missing_library_is_said_and_nothing_reexecutes(monkeypatch, capsys):
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    monkeypatch.delenv("QASEM_ALLOCATOR", raising=False)
    monkeypatch.delenv("QASEM_JEMALLOC", raising=False)
    monkeypatch.setattr(os, "execve", lambda *a: pytest.fail("re-executed without a library"))
    assert use_jemalloc(candidates=("/nonexistent/libjemalloc.so.2",)) == "glibc (no jemalloc found)"
    assert "apt-get install libjemalloc2" in capsys.readouterr().err


def test_every_evaluation_cli_uses_it_first():
    """Each Hydra entry point of evaluation/ calls use_jemalloc before main() in its __main__ block."""
    missing = []
    for path in sorted((ROOT / "evaluation").glob("*.py")):
        tree = ast.parse(path.read_text())
        if not any(ast.unparse(d).startswith("hydra.main") for n in tree.body if isinstance(n, ast.FunctionDef)
                   for d in n.decorator_list):
            continue
        block = next((n for n in tree.body if isinstance(n, ast.If) and "__main__" in ast.unparse(n.test)), None)
        if block is None:
            missing.append(path.name)
            continue
        calls = [ast.unparse(s.value.func) for s in block.body if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)]
        if calls[:2] != ["use_jemalloc", "main"]:
            missing.append(path.name)
    assert not missing, f"these CLIs do not call use_jemalloc() before main(): {missing}"
