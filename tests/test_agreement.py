"""evaluation.agreement / metrics.agreement: Fleiss' kappa of the QASemConsistency votes.

On the released benchmark (dev + test) the QA kappas are the paper's Table 3 (0.72 / 0.78 / 0.67) and
27% of predicates have QAs with mixed majority labels."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from metrics.agreement import agreement, fleiss_kappa, majority

ROOT = Path(__file__).resolve().parents[1]


def _fleiss_by_hand(votes):
    n, N = len(votes[0]), len(votes)
    p1 = sum(map(sum, votes)) / (n * N)
    P = [(sum(v) * (sum(v) - 1) + (n - sum(v)) * (n - sum(v) - 1)) / (n * (n - 1)) for v in votes]
    pe = p1 ** 2 + (1 - p1) ** 2
    return (sum(P) / N - pe) / (1 - pe)


def test_kappa_matches_the_formula_and_edge_cases():
    votes = [[1, 1, 1], [0, 0, 1], [0, 0, 0], [1, 0, 1], [0, 0, 0]]
    assert fleiss_kappa(votes)[0] == pytest.approx(_fleiss_by_hand(votes))
    assert fleiss_kappa([[1, 1, 1], [0, 0, 0]])[0] == pytest.approx(1.0)
    assert fleiss_kappa([[0, 0, 0], [0, 0, 0]])[0] is None  # no variation: undefined, not a crash
    k, left_out = fleiss_kappa(votes + [[1, 0]])  # a subject with fewer votes is left out and counted
    assert left_out == 1 and k == pytest.approx(_fleiss_by_hand(votes))
    assert majority([1, 1, 0]) == 1 and majority([0, 1, 0]) == 0 and majority([1, 0]) is None


def test_mixed_predicates_and_counts():
    resp = {"dataset": "cliff", "qas": [
        {"predicate_idx": 2, "sent_id": 0, "annotations": [1, 1, 0]},
        {"predicate_idx": 2, "sent_id": 0, "annotations": [0, 0, 0]},   # predicate 2: mixed
        {"predicate_idx": 5, "sent_id": 0, "annotations": [0, 0, 1]}],  # predicate 5: not mixed
        "spans": [{"annotations": [1, 1, 1]}]}
    out = agreement([resp])
    assert out["cliff"]["mixed_predicates"] == 0.5 and out["cliff"]["predicates"] == 2
    assert out["cliff"]["unanimous"] == pytest.approx(1 / 3) and out["overall"]["items"] == 1


def test_released_benchmark_reproduces_table_3(data_dir, tmp_path):
    files = [data_dir / "qasem-consistency" / f"{s}.jsonl" for s in ("dev", "test")]
    run = subprocess.run([sys.executable, "-m", "evaluation.agreement", *map(str, files),
                          "--majority", str(tmp_path / "maj.jsonl")],
                         cwd=ROOT, capture_output=True, text=True, check=True)
    out = json.loads(run.stdout)
    assert list(out) == ["cliff", "factscore", "verifiability", "overall"]
    assert [round(out[d]["qa_kappa"], 2) for d in ("cliff", "factscore", "verifiability")] == [0.72, 0.78, 0.67]
    assert [round(out[d]["qa_kappa"], 3) for d in ("cliff", "factscore", "verifiability")] == [0.719, 0.784, 0.671]
    assert round(out["overall"]["mixed_predicates"], 2) == 0.27  # the paper's 27%
    assert out["overall"]["qas"] == 1542 + 1556 and out["overall"]["items"] == 148 + 151
    assert {"qa_kappa", "span_kappa", "unanimous", "items", "qas", "mixed_predicates"} <= set(out["overall"])
    assert "Verifiability" in run.stderr  # the table
    majority_rows = (tmp_path / "maj.jsonl").read_text().splitlines()
    assert len(majority_rows) == 3098


def test_a_malformed_line_is_named(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"source": [], "summary": [], "qas": []}\n{"oops": 1}\n')
    run = subprocess.run([sys.executable, "-m", "evaluation.agreement", str(bad)], cwd=ROOT,
                         capture_output=True, text=True)
    assert run.returncode != 0 and f"{bad}:2" in run.stderr
