"""docs/results.md and each family page show the shipped figures of the release manifest the README names,
in blocks written by python -m release.docs_figures; a block that drifts from the manifest fails here."""
import json
import shutil
import subprocess
import sys

from conftest import ROOT
from release.docs_figures import PAGES, begin
from test_readme import committed_manifest


def run(manifest, root):
    return subprocess.run([sys.executable, "-m", "release.docs_figures", str(manifest), "--root", str(root), "--check"],
                          cwd=ROOT, capture_output=True, text=True)


def test_every_page_holds_its_block():
    for family, page in PAGES.items():
        assert (ROOT / page).read_text().count(begin(family)) == 1, f"{page}: no block {begin(family)}"


def test_every_block_is_the_committed_releases():
    done = run(committed_manifest(), ROOT)
    assert done.returncode == 0, done.stderr


def test_a_changed_figure_is_caught_on_every_page_that_shows_it(tmp_path):
    for page in ["README.md", *PAGES.values()]:
        (tmp_path / page).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / page, tmp_path / page)
    m = json.loads(committed_manifest().read_text())
    m["metrics"]["contradiction"]["f1"] = 0.999
    m["metrics"]["parser"]["qanom"]["ua_f1"] = 0.111
    (tmp_path / "m.json").write_text(json.dumps(m))
    done = run(tmp_path / "m.json", tmp_path)
    assert done.returncode == 1
    for page in ("README.md", "docs/results.md", "docs/contradiction.md", "docs/parser.md"):
        assert page in done.stderr, done.stderr
    assert "docs/entailment.md" not in done.stderr and "docs/scoring.md" not in done.stderr


def test_a_manifest_names_no_machine_path():
    """Stage commands and configs as a reader runs them: `python -m ...`, the data folder as $QASEM_DATA_DIR."""
    import json

    from release.manifest import portable

    assert portable("/x/.venv/bin/python -m train.parser paths.data_dir=/d/data a=/d/data/chatprotect/f.jsonl",
                    "/d/data/") == "python -m train.parser paths.data_dir=$QASEM_DATA_DIR a=$QASEM_DATA_DIR/chatprotect/f.jsonl"
    for path in sorted((ROOT / "docs" / "results").glob("*.json")):
        m = json.loads(path.read_text())
        assert m.get("data_dir", "$QASEM_DATA_DIR") == "$QASEM_DATA_DIR", path
        for name, stage in m.get("stages", {}).items():
            assert stage["command"].startswith("python -m "), (path, name)
            assert not any(p in stage["command"] + (stage.get("config") or "") for p in ("/home/", "/root/", "/work/",
                                                                                      "/tmp/", "/.venv/")), (path, name)
