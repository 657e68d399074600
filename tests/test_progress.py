"""Progress bars and the summary line every evaluation run ends with (models/progress.py)."""
import logging

from models import progress as P


def test_the_summary_line_names_items_time_and_rate(caplog):
    with caplog.at_level(logging.INFO):
        line = P.log_summary(logging.getLogger("t"), "evaluation.x", 30, "pairs", 12.0, ", 90 QAs")
    assert line == "evaluation.x: 30 pairs in 12.0 s (2.50 pairs/s), 90 QAs" and line in caplog.text


def test_bars_are_off_under_the_switch_and_per_call():
    try:
        P.set_enabled(False)
        assert P.progress(range(3), "x").disable
        P.set_enabled(True)
        assert P.progress(range(3), "x", enabled=False).disable
        assert list(P.progress(range(3), "x")) == [0, 1, 2]
    finally:
        P.set_enabled(True)
