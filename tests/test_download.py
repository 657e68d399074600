"""python -m data_prep.download against a local HTTP server (tests/http_file_server.py) that serves
fixture releases made from the real data dir, at the paths conf/download.yaml names below its mirrors:
a full download into the build layout, a second run that fetches nothing, resume after a cut
(Range), checksum refusal, a pinned checksum that changes upstream, 404, a stall (timeout)."""
from __future__ import annotations

import gzip
import hashlib
import json
import io
import os
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path
from urllib.parse import urlparse

import pytest
from hydra import compose, initialize_config_dir

from data_prep.download import DownloadError, download
from http_file_server import run_file_server

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"
CONSISTENCY_DEV = "qasem-consistency/dev.jsonl"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def make_cfg(data_dir, base, *overrides):
    """The download config pointed at the test server: no waiting, no progress bars, one try."""
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(config_name="download", overrides=[
            f"paths.data_dir={data_dir}", f"mirrors.qasrl_org={base}/qasrl", f"mirrors.github_raw={base}/gh",
            "retries=0", "backoff_s=0.01", "timeout_s=5", "progress=false", *overrides])


def url_path(cfg, dst: str) -> str:
    """The server path that the file (or archive) landing at `dst` is fetched from."""
    for release in cfg.releases.values():
        for entry in release.files:
            if entry.dst == dst:
                return urlparse(f"{release.base_url}/{entry.src}").path
    raise KeyError(dst)


def member_bytes(data_dir: Path, dst: str) -> bytes:
    """The real file, or for the Bank train split (not offline) a small stand-in cut from dev."""
    if (data_dir / dst).exists():
        return (data_dir / dst).read_bytes()
    lines = gzip.decompress((data_dir / "qasrl-bank-v2/orig/dev.jsonl.gz").read_bytes()).splitlines(True)
    return gzip.compress(b"".join(lines[:20]), mtime=0)


def write_archive(path: Path, members: dict[str, bytes]) -> None:
    if path.suffix == ".zip":
        with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
            for name, data in members.items():
                z.writestr(name, data)
        return
    with tarfile.open(path, "w") as t:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))


@pytest.fixture(scope="module")
def mirror(data_dir, tmp_path_factory):
    """(served folder, overrides): every file of the config under its mirror path; the archives
    rebuilt from the real members (plus one member nobody asked for), so the zip gets its own sha256."""
    root = tmp_path_factory.mktemp("mirror")
    cfg = make_cfg(root / "unused", "http://mirror")
    overrides = []
    for name, release in cfg.releases.items():
        for i, entry in enumerate(release.files):
            served = root / url_path(cfg, entry.dst).lstrip("/")
            served.parent.mkdir(parents=True, exist_ok=True)
            if "members" not in entry:
                os.symlink(data_dir / entry.dst, served)  # served read-only; faults change bytes in flight
                continue
            members = {m.src: member_bytes(data_dir, m.dst) for m in entry.members}
            write_archive(served, {**members, "unlisted/extra.txt": b"not extracted\n"})
            if entry.sha256:
                overrides.append(f"releases.{name}.files.{i}.sha256={sha256(served)}")
    return root, overrides


@pytest.fixture(scope="module")
def server(mirror):
    with run_file_server(mirror[0]) as (base, state):
        yield base, state


@pytest.fixture()
def cfg_for(server, mirror):
    """cfg_for(data_dir, *overrides) -> config for the test server; the request log starts empty."""
    base, state = server
    state.requests.clear()
    state.faults.clear()
    return lambda data_dir, *overrides: make_cfg(data_dir, base, *mirror[1], *overrides)


@pytest.fixture(scope="module")
def downloaded(server, mirror, data_dir, tmp_path_factory):
    """One full download of every source into a fresh data dir: (dir, status, config)."""
    out = tmp_path_factory.mktemp("data")
    cfg = make_cfg(out, server[0], *mirror[1])
    return out, download(cfg), cfg


def test_full_download_lands_in_the_build_layout(downloaded, data_dir):
    out, status, cfg = downloaded
    assert set(status.values()) == {"downloaded"}
    for dst in status:
        if (data_dir / dst).exists():  # every file of the offline copy, byte for byte
            assert sha256(out / dst) == sha256(data_dir / dst), dst
    train = out / "qasrl-bank-v2/orig/train.jsonl.gz"
    assert len(gzip.decompress(train.read_bytes()).splitlines()) == 20
    # no published checksum: pinned at first download, the tarball's too (though the tarball is gone)
    pinned = json.loads((out / cfg.lock_file).read_text())
    assert pinned["qasrl-bank-v2/orig/train.jsonl.gz"] == sha256(train)
    assert set(pinned) == {"qasrl-bank-v2/orig/train.jsonl.gz", ".downloads/qasrl-v2.tar"}
    files = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert files == set(status) | {cfg.lock_file}  # no .part, no archive, no unlisted member


def test_second_run_fetches_nothing(downloaded, cfg_for, server):
    out, _, _ = downloaded
    status = download(cfg_for(out))
    assert set(status.values()) == {"present"}
    assert server[1].requests == []


def test_build_reads_the_downloaded_gs(downloaded, tmp_path):
    from data_prep.build import build

    stats = build(downloaded[0], tmp_path, sources=("qasrl-gs",))
    assert stats["qasrl-gs"]["dev"]["predicates"] > 2000


@pytest.mark.parametrize("retries", [0, 2], ids=["rerun", "retry"])
def test_cut_connection_resumes_with_range(cfg_for, server, tmp_path, data_dir, retries):
    cfg = cfg_for(tmp_path, "sources=[consistency]", f"retries={retries}")
    path = url_path(cfg, CONSISTENCY_DEV)
    server[1].faults[path] = ["cut"]
    if retries == 0:
        with pytest.raises(DownloadError, match="connection"):
            download(cfg)
        assert not (tmp_path / CONSISTENCY_DEV).exists()  # only the half-filled .part
        kept = (tmp_path / (CONSISTENCY_DEV + ".part")).stat().st_size
        assert kept > 0
    download(cfg)
    ranges = [r for _, p, r in server[1].requests if p == path]
    assert len(ranges) == 2 and ranges[0] is None
    resumed_at = int(ranges[1].removeprefix("bytes=").removesuffix("-"))
    # the half sent before the cut, less at most the chunk being read when it came
    assert (data_dir / CONSISTENCY_DEV).stat().st_size // 2 - cfg.chunk_bytes < resumed_at
    if retries == 0:
        assert resumed_at == kept
    assert sha256(tmp_path / CONSISTENCY_DEV) == sha256(data_dir / CONSISTENCY_DEV)


def test_checksum_mismatch_is_refused(cfg_for, server, tmp_path):
    cfg = cfg_for(tmp_path, "sources=[consistency]")
    server[1].faults[url_path(cfg, CONSISTENCY_DEV)] = ["corrupt"]
    with pytest.raises(DownloadError, match="sha256 .* expected .*: refused"):
        download(cfg)
    assert not (tmp_path / CONSISTENCY_DEV).exists()
    assert not (tmp_path / (CONSISTENCY_DEV + ".part")).exists()  # a rerun starts clean


def test_archive_member_mismatch_is_refused(cfg_for, tmp_path):
    cfg = cfg_for(tmp_path, "sources=[qasrl-bank]", "releases.qasrl-bank.files.0.members.1.sha256=" + "0" * 64)
    with pytest.raises(DownloadError, match="orig/dev.jsonl.gz of .*: refused"):
        download(cfg)
    assert not (tmp_path / "qasrl-bank-v2/orig/dev.jsonl.gz").exists()
    assert not (tmp_path / ".downloads/qasrl-v2.tar").exists()  # unverified archive: fetched afresh next time


def test_pinned_checksum_refuses_a_changed_upstream(cfg_for, server, tmp_path):
    cfg = cfg_for(tmp_path, "sources=[qasrl-bank]")
    download(cfg)  # pins the tarball and the train split
    train = tmp_path / "qasrl-bank-v2/orig/train.jsonl.gz"
    train.unlink()
    server[1].faults[url_path(cfg, ".downloads/qasrl-v2.tar")] = ["corrupt"]
    with pytest.raises(DownloadError, match="refused"):
        download(cfg)
    assert not train.exists()


def test_404_names_the_url_and_the_target(cfg_for, tmp_path):
    cfg = cfg_for(tmp_path, "sources=[consistency]", "releases.consistency.base_url=${mirrors.github_raw}/nowhere")
    with pytest.raises(DownloadError) as e:
        download(cfg)
    assert f"{cfg.releases.consistency.base_url}/dev.jsonl" in str(e.value)
    assert "404" in str(e.value) and str((tmp_path / CONSISTENCY_DEV).resolve()) in str(e.value)


def test_cli_failure_is_one_clear_message(server, tmp_path):
    base = server[0]
    proc = subprocess.run(
        [sys.executable, "-m", "data_prep.download", f"paths.data_dir={tmp_path}", "sources=[consistency]",
         f"mirrors.github_raw={base}/nowhere", "retries=0", f"hydra.run.dir={tmp_path}/run"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 1
    assert f"{base}/nowhere/ariecattan/qasem_consistency/" in proc.stderr
    assert str((tmp_path / CONSISTENCY_DEV).resolve()) in proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr


def test_stalled_server_times_out(cfg_for, server, tmp_path):
    cfg = cfg_for(tmp_path, "sources=[consistency]", "timeout_s=0.3", "retries=1")
    server[1].faults[url_path(cfg, CONSISTENCY_DEV)] = ["stall", "stall"]
    start = time.monotonic()
    with pytest.raises(DownloadError, match="timed out.*after 2 tries"):
        download(cfg)
    assert time.monotonic() - start < 5
    assert not (tmp_path / CONSISTENCY_DEV).exists()


def test_chatprotect_is_not_downloadable(cfg_for, tmp_path):
    with pytest.raises(DownloadError, match="chatprotect is not downloadable: .*converted copy"):
        download(cfg_for(tmp_path, "sources=[chatprotect]"))
