"""The README is a front page: about 150 lines, nothing outside the repo, and its results table is the
one the committed release manifest it names gives (python -m release.readme_table docs/results/release-PROFILE.json;
the other profiles' manifests may sit beside it)."""
import json
import re
import subprocess
import sys

from conftest import ROOT

README = ROOT / "README.md"


def committed_manifest():
    named = re.findall(r"its manifest: `(docs/results/release-[a-z]+\.json)`", README.read_text())
    assert len(named) == 1, f"the README's table names one committed release manifest, found {named}"
    assert (ROOT / named[0]).is_file(), f"{named[0]}: the manifest the README names is not committed"
    return ROOT / named[0]


def test_the_results_table_is_the_committed_releases():
    done = subprocess.run([sys.executable, "-m", "release.readme_table", str(committed_manifest()), "--readme",
                           str(README), "--check"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_a_changed_figure_is_caught(tmp_path):
    m = json.loads(committed_manifest().read_text())
    m["metrics"]["contradiction"]["f1"] = 0.999
    (tmp_path / "m.json").write_text(json.dumps(m))
    done = subprocess.run([sys.executable, "-m", "release.readme_table", str(tmp_path / "m.json"), "--readme",
                           str(README), "--check"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 1 and "not" in done.stderr


def test_the_committed_manifest_holds_no_weights_and_every_metric():
    m = json.loads(committed_manifest().read_text())
    assert {"profile", "git_commit", "stages", "metrics"} <= set(m)
    assert all({"command", "wall_s", "peak_rss_mb"} <= set(s) for s in m["stages"].values())
    assert not [p for p in (ROOT / "docs" / "results").rglob("*") if p.suffix in (".safetensors", ".bin", ".pt")]


def test_the_readme_is_a_front_page():
    text = README.read_text()
    assert len(text.splitlines()) <= 150
    assert "../shared" not in text and not re.search(r"\b(lent|carried)\b", text)
    for link in re.findall(r"\]\(([^)#]+)\)", text):
        assert link.startswith("http") or (ROOT / link).exists(), link
