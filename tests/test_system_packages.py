"""scripts/system_packages.sh, the step of scripts/setup.sh that installs chromium and libjemalloc2, as a user
who may not install them (not root, no passwordless sudo; as root the test runs it as `nobody`): it installs
nothing, says what is missing, what that disables and the command that installs it, and exits 0, so that
setup, and main.sh and test.sh after it, go on. The whole setup is not rerun here (it installs the venv)."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "system_packages.sh"
CALLED = "APT-GET WAS CALLED"


def run_unprivileged(**env: str) -> subprocess.CompletedProcess:
    """The script read from stdin (no file of this checkout need be readable by the other user), in an empty
    environment plus `env`, as this user if not root, else as nobody."""
    cmd = ["/usr/bin/env", "-i", *(f"{k}={v}" for k, v in env.items()), shutil.which("bash"), "-s"]
    if os.geteuid() == 0:
        if shutil.which("runuser"):
            cmd = ["runuser", "-u", "nobody", "--", *cmd]
        else:
            cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *cmd]
    return subprocess.run(cmd, input=SCRIPT.read_text(), capture_output=True, text=True, timeout=60)


@pytest.fixture()
def bin_dir():
    """A PATH of one folder, readable by nobody: an apt-get that says it was called, no chromium, no sudo."""
    with tempfile.TemporaryDirectory() as d:
        os.chmod(d, 0o755)
        apt = Path(d) / "apt-get"
        apt.write_text(f"#!/bin/sh\necho {CALLED}\nexit 1\n")
        apt.chmod(0o755)
        yield Path(d)


def test_missing_packages_are_named_not_installed(bin_dir):
    out = run_unprivileged(PATH=str(bin_dir), QASEM_JEMALLOC="/nonexistent/libjemalloc.so.2")
    assert out.returncode == 0, out.stderr
    said = out.stdout + out.stderr
    assert CALLED not in said
    assert "chromium libjemalloc2 missing, not installed (not root, and no passwordless sudo)" in said
    assert "without chromium: the browser tests fail" in said
    assert "without libjemalloc2: the evaluation CLIs run on glibc's malloc" in said
    assert "neither is needed by the main job (scripts/main.sh)" in said
    assert "sudo apt-get update && sudo apt-get install -y chromium libjemalloc2" in said


def test_nothing_to_do_when_both_are_there(bin_dir):
    chromium = bin_dir / "chromium"
    chromium.write_text("#!/bin/sh\n")
    chromium.chmod(0o755)
    out = run_unprivileged(PATH=str(bin_dir), QASEM_JEMALLOC=str(chromium))  # any readable file stands in
    assert (out.returncode, out.stdout, out.stderr) == (0, "", "")


def test_setup_installs_system_packages_only_through_the_script():
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    assert "bash scripts/system_packages.sh" in setup
    assert not [line for line in setup.splitlines() if "apt-get" in line and not line.lstrip().startswith("#")]


def test_a_browser_test_names_the_missing_chromium(monkeypatch, tmp_path):
    import browser

    monkeypatch.setattr(browser, "CHROMIUM", str(tmp_path / "no-chromium"))
    with pytest.raises(pytest.fail.Exception) as e:
        browser.open_page(tmp_path / "page.html", tmp_path / "shot.png", lambda page: None)
    assert f"Chromium not found at {tmp_path / 'no-chromium'}" in str(e.value)
    assert "scripts/system_packages.sh" in str(e.value) and "sudo apt-get install -y chromium" in str(e.value)
