"""benchmarks.step_times reads the seconds per step back from tqdm's progress bar in a training log."""
import json

import pytest

from benchmarks import step_times


def fake_log(step_seconds):
    """A tqdm-like log with carriage-return updates, one per step, elapsed as MM:SS or H:MM:SS."""
    parts, t = [], 0.0
    for i, dt in enumerate(step_seconds, 1):
        t += dt
        s = int(t)
        clock = f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60:02d}:{s % 60:02d}"
        parts.append(f"  1%|          | {i}/20100 [{clock}<9:00:00,  3.00s/it]")
    return "\r".join(["  0%|          | 0/20100 [00:00<?, ?it/s]", *parts, "{'loss': '1.0'}\n"])


def test_sawtooth_has_flat_window_means_and_a_falling_profile():
    # 50-step megabatches sorted longest first: 10 steps of 6 s, then 10 of 4, 3, 1, 1 (mean 3.0 s)
    saw = ([6] * 10 + [4] * 10 + [3] * 10 + [1] * 10 + [1] * 10) * 30  # 1,500 steps, past an hour
    elapsed = step_times.elapsed_by_step(fake_log(saw))
    assert elapsed[0] == 0 and elapsed[1500] == 4500 and elapsed[1300] == 3900  # H:MM:SS parsed
    means = step_times.window_means(elapsed, 50)
    assert len(means) == 30 and all(m == pytest.approx(3.0) for _, m in means)
    assert step_times.profile(elapsed, 50, 10) == [6.0, 4.0, 3.0, 1.0, 1.0]


def test_a_real_slowdown_shows_in_the_last_quarter(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(fake_log([2] * 300 + [4] * 100))
    assert step_times.main([str(log), "--name", "t", "--out", str(tmp_path / "r.json")]) == 0
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["first_quarter_median"] == 2.0 and result["last_quarter_median"] == 4.0


def test_a_log_without_a_progress_bar_is_named_in_the_error(tmp_path):
    log = tmp_path / "empty.log"
    log.write_text("no bar here\n")
    with pytest.raises(SystemExit, match="empty.log: 0 progress-bar steps"):
        step_times.main([str(log), "--name", "t"])
