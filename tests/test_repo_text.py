"""No tracked file holds a merge's conflict markers (a merge committed half-resolved: seen once in docs/)."""
import subprocess

from conftest import ROOT


def test_no_conflict_markers_are_committed():
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    bad = []
    for name in files:
        path = ROOT / name
        if path.suffix in (".py", ".md", ".yaml", ".toml", ".sh", ".json", ".js", ".txt", "") and path.is_file():
            for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                if line.startswith(("<<<<<<< ", ">>>>>>> ")):
                    bad.append(f"{name}:{n}")
    assert not bad, f"conflict markers: {bad}"
