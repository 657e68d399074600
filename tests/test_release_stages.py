"""A release stage on its own (release/stage.py, release/stamps.py): its stamp, a failure that names the
stage and its cause, and the stamps of stages whose files changed dropped (the full pipeline:
tests/test_release.py)."""
import sys

import pytest

from release.stage import run_stage
from release.stamps import read_stamp, stale_stamps, stamp_path

WRITE = "import pathlib; p = pathlib.Path('out'); p.mkdir(exist_ok=True); (p / 'a.txt').write_text('weights')"


def test_a_stage_stamps_its_command_time_memory_and_files(tmp_path):
    stamp = run_stage("toy", ["out"], [sys.executable, "-c", WRITE], root=tmp_path)
    assert read_stamp(tmp_path, "toy") == stamp and "-c" in stamp["command"]
    assert stamp["wall_s"] >= 0 and stamp["peak_rss_mb"] > 1 and list(stamp["files"]) == ["out/a.txt"]
    assert (tmp_path / "logs" / "toy.log").exists()


def test_a_rerun_that_leaves_the_files_as_they_were_keeps_the_time_that_made_them(tmp_path):
    first = run_stage("toy", ["out"], [sys.executable, "-c", WRITE], root=tmp_path)
    again = run_stage("toy", ["out"], [sys.executable, "-c", WRITE], root=tmp_path)
    assert (again["wall_s"], again["finished"]) == (first["wall_s"], first["finished"]) and len(again["reruns"]) == 1
    changed = run_stage("toy", ["out"], [sys.executable, "-c", WRITE.replace("'weights'", "'other weights'")], root=tmp_path)
    assert "reruns" not in changed
    # under Snakemake the stamp (the job's output) is deleted before the job runs again: the kept copy answers
    stamp_path(tmp_path, "toy").unlink()
    snakemake_rerun = run_stage("toy", ["out"], [sys.executable, "-c", WRITE.replace("'weights'", "'other weights'")], root=tmp_path)
    assert snakemake_rerun["wall_s"] == changed["wall_s"] and len(snakemake_rerun["reruns"]) == 1


@pytest.mark.parametrize("message,cause", [("No space left on device", "(the disk is full)"), ("boom", "")])
def test_a_failed_stage_names_itself_and_its_cause_and_leaves_no_stamp(tmp_path, message, cause):
    cmd = [sys.executable, "-c", f"import sys; print({message!r}); sys.exit(3)"]
    with pytest.raises(SystemExit) as err:
        run_stage("parser", ["out"], cmd, root=tmp_path)
    text = str(err.value)
    assert text.startswith(f"release stage parser failed with exit code 3 {cause}".replace("  ", " ").rstrip())
    assert message in text and "Finished stages are kept" in text and read_stamp(tmp_path, "parser") is None


def test_a_stage_that_writes_nothing_of_its_outputs_is_not_done(tmp_path):
    with pytest.raises(FileNotFoundError, match="did not write it"):
        run_stage("toy", ["out"], [sys.executable, "-c", "pass"], root=tmp_path)
    assert read_stamp(tmp_path, "toy") is None


def test_only_the_stamps_of_changed_files_are_dropped(tmp_path):
    run_stage("a", ["out"], [sys.executable, "-c", WRITE], root=tmp_path)
    other = WRITE.replace("'out'", "'other'")
    run_stage("b", ["other"], [sys.executable, "-c", other], root=tmp_path)
    assert stale_stamps(tmp_path) == {}  # nothing changed: nothing hashed again, nothing dropped
    (tmp_path / "out" / "a.txt").write_text("weighty")  # same size or not, the content differs
    assert stale_stamps(tmp_path) == {"a": ["out/a.txt"]}
    assert read_stamp(tmp_path, "a") is None and read_stamp(tmp_path, "b") is not None
    (tmp_path / "other" / "a.txt").unlink()
    assert stale_stamps(tmp_path) == {"b": ["other/a.txt"]}


def test_the_release_writes_the_models_the_loader_reads():
    from models.release import MODELS
    from release.layout import MODEL_FOLDERS

    assert tuple(MODEL_FOLDERS) == MODELS
