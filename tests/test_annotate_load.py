"""benchmarks.annotate_load runs: a few annotators at once on a real server, every acknowledged label in the
database exactly once (the 20-annotator figures are in docs/annotation.md)."""
import json

import pytest

from benchmarks import annotate_load

pytestmark = pytest.mark.timeout(120)


def test_a_small_load_run_loses_and_duplicates_nothing(tmp_path):
    result = annotate_load.main(["--annotators", "4", "--items", "6", "--k", "2", "--seconds", "60",
                                 "--out", str(tmp_path / "r.json")])
    assert json.loads((tmp_path / "r.json").read_text())["labels_acked"] == result["labels_acked"]
    assert result["items_submitted"] == result["assignments_finished_in_db"] == 6 * 2  # every item, k times
    assert result["labels_acked"] == 6 * 2 * (4 + 6)  # 4 spans and 6 QAs per item
    assert result["lost"] == result["unexpected"] == result["errors"] == 0
    assert result["save_ms"]["p95"] > 0 and result["labels_per_s"] > 0
