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



def test_free_memory_is_handed_back_where_glibc_is(monkeypatch):
    """models.memory.release_free_memory: with QASEM_MALLOC_TRIM=1, glibc's malloc_trim on Linux (the
    scoring loops call it once per response); off by default and elsewhere, and then says so."""
    import ctypes.util
    import platform

    from models import memory

    assert memory.release_free_memory() is False  # off unless QASEM_MALLOC_TRIM=1
    monkeypatch.setenv("QASEM_MALLOC_TRIM", "1")
    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        assert isinstance(memory.release_free_memory(), bool) and memory._trim() is not None
    memory._trim.cache_clear()
    monkeypatch.setattr(ctypes.util, "find_library", lambda name: "/nonexistent/libc.so")
    assert memory.release_free_memory() is False
    memory._trim.cache_clear()
