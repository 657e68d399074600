"""evaluation.pipeline_choice on the real dev split: runs whose QAs are the benchmark's own, scored by the
human labels (a perfect run) or with some labels flipped, compared as the tool compares two pipelines."""
import json
import random

import pytest

from evaluation.consistency_benchmark import load_responses
from evaluation.pipeline_choice import main


def write_run(folder, responses, flip: float, seed: int, drop_every: int = 0):
    """A consistency_benchmark run folder: every benchmark QA, P = its human label (flipped with probability
    `flip`); with drop_every, every n-th QA left out (a parser that finds fewer)."""
    rng = random.Random(seed)
    folder.mkdir()
    (folder / "metrics.json").write_text(json.dumps({"split": "dev", "threshold": 0.5}))
    lines = []
    for r in responses:
        sentences = [{"index": j, "predicates": []} for j in range(len(r["sentences"]))]
        for k, qa in enumerate(r["qas"]):
            if drop_every and k % drop_every == 1:
                continue
            p = float(qa["supported_gold"]) if rng.random() >= flip else 1.0 - qa["supported_gold"]
            sentences[qa["sentence"]]["predicates"].append(
                {"predicate_index": qa["predicate_index"], "predicate_type": "verbal",
                 "qas": [{"question": qa["question"], "answer_span": qa["answer_span"], "score": p}]})
        lines.append(json.dumps({"id": r["id"], "sentences": sentences}))
    (folder / "reports.parser.jsonl").write_text("\n".join(lines) + "\n")


def test_a_perfect_run_correlates_fully_and_wins_every_resample(tmp_path, data_dir):
    data = data_dir / "qasem-consistency" / "dev.jsonl"
    responses, _ = load_responses(data, "dev")
    write_run(tmp_path / "noisy", responses, flip=0.3, seed=1, drop_every=4)
    write_run(tmp_path / "perfect", responses, flip=0.0, seed=2)
    out = tmp_path / "choice.json"
    main([f"noisy={tmp_path / 'noisy'}", f"perfect={tmp_path / 'perfect'}", "--data", str(data), "--bootstrap", "200",
          "--out", str(out)])
    result = json.loads(out.read_text())
    perfect = result["runs"]["perfect"]
    assert perfect["all"]["0.5"]["macro"] == pytest.approx(1.0)
    assert result["runs"]["noisy"]["all"]["0.5"]["macro"] < 0.9
    diff = perfect["vs_baseline"]["macro_pearson_difference"]
    assert diff["share_better"] == 1.0 and diff["ci95"][0] > 0
    changes = perfect["vs_baseline"]["qa_changes"]
    assert changes["dropped"]["qas"] == 0
    assert changes["added"]["qas"] == sum(sum(k % 4 == 1 for k in range(len(r["qas"]))) for r in responses)


def test_runs_on_other_responses_are_refused(tmp_path, data_dir):
    data = data_dir / "qasem-consistency" / "dev.jsonl"
    responses, _ = load_responses(data, "dev")
    write_run(tmp_path / "a", responses, flip=0.0, seed=1)
    write_run(tmp_path / "b", responses[:-1], flip=0.0, seed=1)
    with pytest.raises(SystemExit, match="other responses"):
        main([f"a={tmp_path / 'a'}", f"b={tmp_path / 'b'}", "--data", str(data)])
