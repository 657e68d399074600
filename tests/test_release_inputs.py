"""A release stage's inputs come from the code (release/inputs.py): the modules its entry module imports
through any chain, sub-packages and lazily exported names included, and the configs it composes. Checked by
Snakemake's dry run over a prepared `tiny` release folder whose every stage is done, on a copy of the repo's
code: an edit reruns exactly the stages that import the edited module; an edit no stage imports reruns
nothing; a folder whose stages were built from other inputs says which stages run again and why."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import ROOT, real_data_dir
from release.imports import PACKAGES

pytestmark = pytest.mark.slow  # five Snakemake dry runs, each parsing the repo's imports and composing every stage

# the scoring pipeline, reached only through models/consistency/__init__.py's lazy exports
SUB_PACKAGE_MODULE = "models/consistency/pipeline.py"
IMPORTING_STAGES = {"eval_consistency_benchmark", "eval_copula", "eval_decomp_score", "eval_external"}
# the language-model generators of evaluation.self_contradiction, which is no release stage
UNIMPORTED_MODULE = "models/generate/openai_endpoint.py"


def dry_run(repo: Path, release: Path) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(repo / "release" / "Snakefile"), "--directory",
           str(release), "--cores", "1", "--config", "profile=tiny", f"repo={repo}", f"data_dir={real_data_dir()}",
           "extra_seeds=[]", "--dry-run", "--nolock"]
    done = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(repo)})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def rerun(done: subprocess.CompletedProcess) -> set[str]:
    """The stages a dry run would run (each job's output is its stamp)."""
    return set(re.findall(r"output: stages/(\w+)\.json", done.stdout))


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> tuple[Path, Path]:
    """(a copy of the repo's code and configs, a tiny release folder whose every stage is stamped as done)."""
    if not (real_data_dir() / "qasem-consistency").is_dir():
        pytest.fail(f"real data directory {real_data_dir()} is missing (set QASEM_DATA_DIR)")
    base = tmp_path_factory.mktemp("inputs")
    repo, release = base / "repo", base / "release"
    for part in (*PACKAGES, "conf"):
        shutil.copytree(ROOT / part, repo / part, ignore=shutil.ignore_patterns("__pycache__"))
    release.mkdir()
    first = dry_run(repo, release)  # writes the input digests and what each stage reads
    record = json.loads((release / ".inputs" / "stages.json").read_text())
    assert set(record) == rerun(first)
    (release / "stages").mkdir()
    for name, built in record.items():
        (release / "stages" / f"{name}.json").write_text(json.dumps({"stage": name, "files": {}, "built_with": built}))
    for name in ("manifest.json", "README.md"):
        (release / name).write_text("{}")
    settle(release)
    assert "Nothing to be done" in dry_run(repo, release).stdout
    return repo, release


def settle(release: Path) -> None:
    """Every stamp newer than every input digest, in the order of the stages, then the manifest: all done."""
    latest = max(p.stat().st_mtime_ns for p in (release / ".inputs").rglob("*") if p.is_file())
    record = json.loads((release / ".inputs" / "stages.json").read_text())
    for k, name in enumerate([*[f"stages/{n}.json" for n in record], "manifest.json", "README.md"], 1):
        os.utime(release / name, ns=(latest + k * 10**6, latest + k * 10**6))  # never ahead of the next edit's digest


@contextmanager
def edited(repo: Path, release: Path, rel: str):
    """`rel` edited for the block, then as it was, its digest too, and the folder settled again."""
    path, digest = repo / rel, release / ".inputs" / "repo" / f"{rel}.sha256"
    text, recorded = path.read_text(), digest.read_text() if digest.exists() else None
    path.write_text(text + "\n# an edit\n")
    try:
        yield
    finally:
        path.write_text(text)
        if recorded is not None:
            digest.write_text(recorded)
        settle(release)


def test_an_edit_reached_only_through_a_sub_package_reruns_exactly_the_stages_importing_it(prepared):
    repo, release = prepared
    with edited(repo, release, SUB_PACKAGE_MODULE):
        done = dry_run(repo, release)
    assert rerun(done) == IMPORTING_STAGES, done.stdout[-3000:]


def test_an_edit_to_a_module_no_stage_imports_reruns_nothing(prepared):
    repo, release = prepared
    assert (repo / UNIMPORTED_MODULE).is_file()
    with edited(repo, release, UNIMPORTED_MODULE):
        done = dry_run(repo, release)
    assert "Nothing to be done" in done.stdout, done.stdout[-3000:]


def test_a_stage_built_from_other_inputs_says_why_it_runs_again(prepared):
    repo, release = prepared
    stamp = release / "stages" / "eval_copula.json"
    kept = stamp.read_text()
    old = json.loads(kept)
    old["built_with"]["inputs"] = [i for i in old["built_with"]["inputs"] if "consistency/pipeline.py" not in i]
    st = stamp.stat()
    stamp.write_text(json.dumps(old))
    os.utime(stamp, ns=(st.st_atime_ns, st.st_mtime_ns))
    older = release / "stages" / "eval_parser.json"
    older_text = older.read_text()
    st_older = older.stat()
    older.write_text(json.dumps({"stage": "eval_parser", "files": {}}))  # a stamp of a pipeline before the record
    os.utime(older, ns=(st_older.st_atime_ns, st_older.st_mtime_ns))
    try:
        done = dry_run(repo, release)
    finally:
        stamp.write_text(kept)
        os.utime(stamp, ns=(st.st_atime_ns, st.st_mtime_ns))
        older.write_text(older_text)
        os.utime(older, ns=(st_older.st_atime_ns, st_older.st_mtime_ns))
    assert "release: stage eval_copula runs again: reads now models/consistency/pipeline.py" in done.stderr, done.stderr[-2000:]
    assert "release: stage eval_parser runs again: its stamp does not record what it read" in done.stderr
    assert stamp.exists() and older.exists()  # a dry run says so and changes nothing
