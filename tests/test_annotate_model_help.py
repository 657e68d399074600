"""benchmarks.annotate_model_help: the label-collection strategies replayed on votes, and a run on the release."""
import json

from benchmarks.annotate_model_help import main, simulate


def test_strategies_count_the_labels_they_ask_for():
    votes = [[0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 0]]
    model = [0, 0, 1, 1]
    # no model: two votes where the first two agree, three where they do not
    assert simulate(votes, model, [0, 1, 2, 3], 0.0) == (2 + 3 + 2 + 3, [0, 1, 1, 0])
    # the model votes on all: one human vote when it agrees with the model, else the second decides
    assert simulate(votes, model, [0, 1, 2, 3], 1.0) == (1 + 2 + 1 + 2, [0, 0, 1, 1])


def test_the_release_run(data_dir, tmp_path):
    out = main(["--data-dir", str(data_dir), "--out", str(tmp_path / "r.json")])
    overall = out["by_dataset"]["overall"]
    assert overall["qas"] == 3098 and overall["fixed3"] == 3 * 3098
    assert overall["stop_at_2"] < overall["fixed3"]
    s = overall["saved_at_target"]
    assert s["target"] == 0.99 and s["saved_vs_stop_at_2"] >= 0
    assert json.loads((tmp_path / "r.json").read_text())["classifier"] == "lexical"
