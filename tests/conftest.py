"""Shared test fixtures: where the real data lives, and a loud failure when CI lacks it."""
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def real_data_dir() -> Path:
    return Path(os.environ.get("QASEM_DATA_DIR") or ROOT.parent / "shared" / "data")


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The real releases. In CI (CI=true) a missing directory is a failure, never a skip."""
    d = real_data_dir()
    if not (d / "qasrl-gs").is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"real data directory {d} is missing (set QASEM_DATA_DIR)")
        pytest.skip(f"real data directory {d} not present")
    return d


@pytest.fixture(scope="session")
def processed_dir(data_dir, tmp_path_factory) -> Path:
    """Processed records built once per test session from the real data."""
    from data_prep.build import build

    out = tmp_path_factory.mktemp("processed")
    build(data_dir, out)
    return out


@pytest.fixture()
def fixtures() -> Path:
    return FIXTURES


@pytest.fixture()
def hub(tmp_path, monkeypatch):
    """A local Hub API server (tests/hub_server.py) that huggingface_hub talks to for one test:
    (endpoint, store). Fails the test if the client sent a request the server does not speak."""
    from huggingface_hub.utils import close_session

    from hub_server import run_hub_server, use_hub_endpoint

    with run_hub_server(tmp_path) as (endpoint, store):
        use_hub_endpoint(monkeypatch, endpoint, tmp_path / "hf-cache")
        yield endpoint, store
        close_session()
    assert not store.unhandled, f"requests the test server does not speak: {store.unhandled}"
