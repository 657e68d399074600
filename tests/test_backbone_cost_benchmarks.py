"""The two backbone cost benchmarks run end to end on real data with MiniLM alone (one step, a few texts): the
pair encoder built as train.contradiction builds it takes a training step, and the embedder cost is per text."""
from __future__ import annotations

import json

import pytest


@pytest.mark.slow
def test_pair_encoder_step_cost_runs(data_dir, tmp_path):
    from benchmarks.pair_encoder_step_cost import main

    out = tmp_path / "step.json"
    main(["--models", "minilm", "--rounds", "1", "--steps", "1", "--override", f"paths.data_dir={data_dir}",
          "--out", str(out)])
    r = json.loads(out.read_text())
    m = r["models"]["minilm"]
    assert m["steps_timed"] == 1 and m["ratio_to_minilm"] == 1.0 and m["median_step_cpu_s"] > 0
    assert r["full_run_steps"] > 0 and m["trained_parameters"] == m["parameters"]


@pytest.mark.slow
def test_embedder_cost_runs(data_dir, tmp_path):
    from benchmarks.embedder_cost import main

    out = tmp_path / "emb.json"
    r = main(["--models", "minilm", "--texts", "16", "--repeats", "1", "--threads", "1",
              "--data", str(data_dir / "qasem-consistency" / "dev.jsonl"), "--out", str(out)])
    assert r["texts"] == 16 and r["models"]["minilm"]["cpu_ratio"] == 1.0
    assert json.loads(out.read_text())["models"]["minilm"]["s_per_text"] > 0
