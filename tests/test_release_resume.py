"""The release's resume setting (release/fresh.py): `python -m release PROFILE DIR resume=auto|never`, parsed by
train/resume.py as every trainer's; never removes what the pipeline built in DIR, naming it, and refuses a folder
that is not a release folder; a PATH is refused naming the accepted values; every stage runs with resume=auto."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, real_data_dir
from parser_helpers import compose_cfg

TRAINERS = {"parser": "train_parser", "detector": "train_predicates", "entailment": "train_entailment",
            "contradiction": "train_contradiction"}


def built_release(folder: Path, profile: str = "tiny") -> Path:
    """A release folder as a run leaves it: every part the pipeline writes, and a file of the user's own."""
    from release.layout import PROFILE_MARKER, RELEASE_PARTS

    folder.mkdir(parents=True)
    (folder / PROFILE_MARKER).write_text(profile + "\n")
    for part in RELEASE_PARTS:
        if "." in part[1:]:
            (folder / part).write_text("{}")
        else:
            (folder / part / "inner").mkdir(parents=True)
            (folder / part / "inner" / "file.txt").write_text("x")
    (folder / "notes.txt").write_text("mine")
    return folder


def run_main(*argv: str) -> str:
    from release.__main__ import main

    with pytest.raises(SystemExit) as e:
        main(list(argv))
    return str(e.value)


def test_a_path_or_an_old_value_is_refused_naming_the_accepted_ones(tmp_path):
    from release.fresh import parse_release_resume

    assert parse_release_resume("auto").mode == "auto" and parse_release_resume("never").fresh
    msg = run_main("tiny", str(tmp_path / "r"), f"resume={tmp_path}/checkpoint-9")
    assert msg.startswith(f"release refused: resume={tmp_path}/checkpoint-9") and "resume=auto" in msg \
        and "resume=never" in msg, msg
    assert "use resume=never" in run_main("tiny", str(tmp_path / "r"), "resume=none")
    assert not (tmp_path / "r").exists()  # refused before anything is written


def test_never_refuses_a_folder_that_is_not_a_release_and_removes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("QASEM_DATA_DIR", str(real_data_dir()))
    folder = tmp_path / "mine"
    (folder / "runs").mkdir(parents=True)
    (folder / "thesis.tex").write_text("x")
    msg = run_main("tiny", str(folder), "resume=never")
    assert f"{folder} is not a release folder (no .profile; it holds runs, thesis.tex)" in msg, msg
    assert sorted(p.name for p in folder.iterdir()) == ["runs", "thesis.tex"]


def test_never_removes_what_the_pipeline_built_and_keeps_the_rest(tmp_path):
    from release.fresh import start_afresh
    from release.layout import RELEASE_PARTS

    folder = built_release(tmp_path / "r")
    assert [p.name for p in start_afresh(folder, dry_run=True)] == list(RELEASE_PARTS)
    assert all((folder / p).exists() for p in RELEASE_PARTS)  # a dry run only names them
    assert [p.name for p in start_afresh(folder)] == list(RELEASE_PARTS)
    assert sorted(p.name for p in folder.iterdir()) == [".profile", "notes.txt"]
    assert start_afresh(folder) == []


@pytest.mark.parametrize("profile", ["tiny", "quick", "full"])
def test_every_trainer_stage_runs_with_resume_auto(profile):
    """The release's never removes the stages' folders; it never reaches a stage's command, since a stage given never
    would throw away what an earlier stage of the same run wrote (the encoder folds of the contradiction run)."""
    import yaml

    recipe = yaml.safe_load((ROOT / "release" / "profiles" / f"{profile}.yaml").read_text())
    for family, root in TRAINERS.items():
        overrides = recipe["train"][family]
        assert not any(o.split("=", 1)[0].lstrip("+~") == "resume" for o in overrides), (profile, family)
        assert compose_cfg(root, list(overrides)).resume == "auto", (profile, family)


@pytest.mark.slow  # one Snakemake dry run of the tiny profile (about 20 s on 2 shared cores)
def test_a_dry_run_with_never_names_what_it_would_remove_lists_every_stage_and_changes_nothing(tmp_path):
    from release.layout import RELEASE_PARTS

    folder = built_release(tmp_path / "r")
    (folder / "stages" / "data.json").write_text("{}")  # a stage stamped as done: never runs it again too
    before = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if ".inputs" not in p.parts)
    done = subprocess.run([sys.executable, "-m", "release", "tiny", str(folder), "--dry-run", "resume=never"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "QASEM_DATA_DIR": str(real_data_dir()), "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"resume=never would remove {', '.join(RELEASE_PARTS)} in {folder}" in done.stderr, done.stderr[-2000:]
    table = done.stdout.split("Job stats:")[1].split("total")[0].splitlines()[3:]  # the rows after the header
    jobs = dict(line.split()[:2] for line in table if line.strip())
    assert jobs == {"all": "1", "build_data": "1", "parser": "1", "detector": "1", "entailment": "1", "encoder": "2",
                    "contradiction": "1", "evaluate": "7", "encoder_seed": "2", "contradiction_seed": "1",
                    "evaluate_seed": "1", "contradiction_ensemble": "1", "evaluate_ensemble": "1",
                    "contradiction_seeds": "1", "manifest": "1"}, done.stdout[-3000:]
    after = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if ".inputs" not in p.parts)
    # a dry run writes Snakemake's records and DIR's lock file; nothing of the stages' is gone
    kept = [p for p in after if not p.startswith((".snakemake", ".run.lock"))]
    assert [p for p in before if not p.startswith(".snakemake")] == kept
