"""Fetch the raw releases that data_prep.build reads, from their official places, into paths.data_dir:

    python -m data_prep.download [paths.data_dir=DIR] [sources=[qasrl-gs,qanom]]

URLs, target paths and sha256 sums live in conf/download.yaml (`mirrors.*` or a release's `base_url`
points it at a mirror). Bytes go to `<target>.part` first (a cut download resumes from there with an
HTTP Range request), are checked, and only then os.replace'd onto the target: a half or unverified
file never sits under its final name. Files with no published checksum are pinned at first download
in DATA_DIR/.download-checksums.json and checked against it on later runs. Files already present with
the right checksum are skipped, so a second run fetches nothing.

An archive member with `convert` is not a copy: data_prep.chatprotect.release_jsonl makes it from the release
folders it names (ChatProtect's pair files become JSONL), read from the archive in one pass; its sha256 is that of
the offline copy. A member that fails is named and refused; the others are still written.

A file with `parts` (SummEdits' evaluation.jsonl) is made by data_prep.summedits.release_jsonl from several
files of the release (src with `{part}` filled in per part), fetched to `raw_dir` and always deleted again
(whatever keep_archives says): they hold the benchmark's test split, which is never kept.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import tarfile
import time
import zipfile
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import hydra
import requests
from omegaconf import DictConfig
from tqdm import tqdm

from data_prep import chatprotect, summedits
from data_prep.checksums import sha256_of
from data_prep.records import DataFormatError

log = logging.getLogger(__name__)


class DownloadError(RuntimeError):
    """A file could not be fetched or failed its check; the message says what to do by hand."""


class _AttemptFailed(Exception):
    """One HTTP attempt failed; `retry` says whether another attempt may succeed."""

    def __init__(self, reason: str, retry: bool):
        super().__init__(reason)
        self.retry = retry


class Checksums:
    """The sha256 a file must have: the config's, else the one pinned in the lock file at first download."""

    def __init__(self, lock_path: Path):
        self.lock_path = lock_path
        self.pinned = json.loads(lock_path.read_text()) if lock_path.exists() else {}

    def expected(self, published: str | None, key: str) -> str | None:
        return published or self.pinned.get(key)

    def pin(self, key: str, digest: str) -> None:
        if self.pinned.get(key) == digest:
            return  # nothing new: leave a read-only data dir untouched
        self.pinned[key] = digest
        tmp = self.lock_path.with_name(self.lock_path.name + ".tmp")
        tmp.write_text(json.dumps(self.pinned, indent=2, sort_keys=True) + "\n")
        os.replace(tmp, self.lock_path)
        log.info("%s: sha256 %s pinned in %s", key, digest, self.lock_path)


def by_hand(url: str, dst: Path, expected: str | None, reason: str) -> str:
    sha = f" (sha256 {expected})" if expected else ""
    return (f"could not download {url}: {reason}\n"
            f"  fetch it by hand and put it at {dst.resolve()}{sha}, then rerun python -m data_prep.download")


def present_digest(path: Path, expected: str | None) -> str | None:
    """The sha256 of a file already in place, or None when it is missing or wrong (then it is fetched again)."""
    if not path.exists():
        return None
    digest = sha256_of(path)
    if expected and digest != expected:
        log.warning("%s: sha256 %s, expected %s: fetching it again", path, digest, expected)
        return None
    log.info("%s: present, sha256 %s, skipped", path, "ok" if expected else "not yet pinned")
    return digest


def install(tmp: Path, dst: Path, expected: str | None, what: str) -> str:
    """Move a finished temp file onto dst if its sha256 is right; refuse (and delete it) otherwise."""
    digest = sha256_of(tmp)
    if expected and digest != expected:
        tmp.unlink()  # a rerun starts clean rather than resuming bad bytes
        raise DownloadError(f"{what}: sha256 {digest}, expected {expected}: refused, nothing written to "
                            f"{dst.resolve()}")
    os.replace(tmp, dst)  # same directory, so atomic: dst is either absent or whole and checked
    return digest


def get_once(url: str, part: Path, cfg: DictConfig) -> None:
    """One HTTP attempt that appends to `part`, resuming from its size with a Range request."""
    offset = part.stat().st_size if part.exists() else 0
    # identity: byte offsets must count the file's bytes, not those of a gzip-encoded transfer
    headers = {"Accept-Encoding": "identity", **({"Range": f"bytes={offset}-"} if offset else {})}
    try:
        with requests.get(url, headers=headers, stream=True, timeout=cfg.timeout_s) as r:
            if r.status_code == 416 and offset:
                return  # the .part already holds every byte; its checksum decides
            if r.status_code >= 500 or r.status_code in (408, 429):
                raise _AttemptFailed(f"HTTP {r.status_code} {r.reason}", retry=True)
            if r.status_code not in (200, 206):
                raise _AttemptFailed(f"HTTP {r.status_code} {r.reason}", retry=False)
            if r.status_code == 200:
                offset = 0  # a full body (the server ignored Range): start the file over
            size = int(r.headers["Content-Length"]) + offset if "Content-Length" in r.headers else None
            with open(part, "ab" if offset else "wb") as f, tqdm(
                    total=size, initial=offset, unit="B", unit_scale=True, desc=part.name[:-len(".part")],
                    disable=not cfg.progress, leave=False) as bar:
                for chunk in r.iter_content(cfg.chunk_bytes):
                    f.write(chunk)
                    bar.update(len(chunk))
    except requests.Timeout as e:
        raise _AttemptFailed(f"timed out (no data for {cfg.timeout_s}s): {e}", retry=True) from None
    except (requests.ConnectionError, requests.exceptions.ChunkedEncodingError) as e:
        # a stalled body read surfaces as ConnectionError("... Read timed out")
        raise _AttemptFailed(f"connection failed: {e}", retry=True) from None
    except requests.RequestException as e:
        raise _AttemptFailed(str(e), retry=False) from None
    if size is not None and part.stat().st_size < size:
        raise _AttemptFailed(f"connection closed after {part.stat().st_size} of {size} bytes", retry=True)


def fetch(url: str, dst: Path, expected: str | None, cfg: DictConfig) -> str:
    """Download url onto dst (retrying with exponential backoff, each try resuming); its sha256."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    part = dst.with_name(dst.name + ".part")
    log.info("%s -> %s", url, dst)
    for attempt in range(cfg.retries + 1):
        try:
            get_once(url, part, cfg)
            break
        except _AttemptFailed as e:
            if not e.retry or attempt == cfg.retries:
                tries = f" (after {attempt + 1} tries)" if attempt else ""
                raise DownloadError(by_hand(url, dst, expected, f"{e}{tries}")) from None
            wait = cfg.backoff_s * 2 ** attempt
            log.warning("%s: %s; retry %d/%d in %.1fs", url, e, attempt + 1, cfg.retries, wait)
            time.sleep(wait)
    return install(part, dst, expected, url)


@contextmanager
def open_member(archive: Path, name: str):
    """One member of a zip or tar, read by name: the archive's own paths never touch the disk."""
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as z, z.open(name) as f:
            yield f
    else:
        with tarfile.open(archive) as t:
            f = t.extractfile(name)
            if f is None:
                raise KeyError(f"{name} is not a regular file")
            yield f


def extract(archive: Path, member: str, dst: Path, expected: str | None) -> str:
    """Copy one archive member onto dst through a temp file in dst's directory; its sha256."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(dst.name + ".part")
    with open_member(archive, member) as src, open(tmp, "wb") as out:
        shutil.copyfileobj(src, out)
    return install(tmp, dst, expected, f"{member} of {archive}")


def read_folders(archive: Path, root: str, folders: list[str]) -> dict[str, bytes]:
    """Every file of the archive below one of `folders` (paths below `root`, the archive's top folder), read
    in one pass: {path below root: bytes}."""
    prefixes = tuple(f"{root}{f}" for f in folders)
    wanted = lambda name: any(name == p or name.startswith(p + "/") for p in prefixes)
    files = {}
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as z:
            for name in z.namelist():
                if not name.endswith("/") and wanted(name):
                    files[name[len(root):]] = z.read(name)
        return files
    with tarfile.open(archive) as t:
        for info in t:
            if info.isfile() and wanted(info.name):
                files[info.name[len(root):]] = t.extractfile(info).read()
    return files


def convert(files: dict[str, bytes], member: DictConfig, dst: Path, expected: str | None, what: str) -> str:
    """Write the member that data_prep.chatprotect.release_jsonl makes from the release's files; its sha256."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(dst.name + ".part")
    tmp.write_bytes(chatprotect.release_jsonl(files, member.src, **member.convert))
    return install(tmp, dst, expected, what)


def fetch_file(url: str, entry: DictConfig, data_dir: Path, sums: Checksums, cfg: DictConfig) -> dict[str, str]:
    expected = sums.expected(entry.sha256, entry.dst)
    digest = present_digest(data_dir / entry.dst, expected)
    status = "present"
    if digest is None:
        digest, status = fetch(url, data_dir / entry.dst, expected, cfg), "downloaded"
    if not entry.sha256:
        sums.pin(entry.dst, digest)
    return {entry.dst: status}


def fetch_archive(url: str, entry: DictConfig, data_dir: Path, sums: Checksums, cfg: DictConfig) -> dict[str, str]:
    """Extract the archive's listed members that are missing or wrong; fetch the archive only if one is."""
    status, todo = {}, []
    for member in entry.members:
        digest = present_digest(data_dir / member.dst, sums.expected(member.sha256, member.dst))
        if digest is None:
            todo.append(member)
            continue
        status[member.dst] = "present"
        if not member.sha256:
            sums.pin(member.dst, digest)
    if not todo:
        return status
    archive = data_dir / entry.dst
    expected = sums.expected(entry.sha256, entry.dst)
    digest = present_digest(archive, expected) or fetch(url, archive, expected, cfg)
    root = f"{entry.root}/" if entry.get("root") else ""  # a GitHub archive's top folder
    bad = (DownloadError, DataFormatError, KeyError, OSError, EOFError, tarfile.TarError, zipfile.BadZipFile)
    new, failed = {}, []
    try:
        converted = [m for m in todo if "convert" in m]
        files = read_folders(archive, root, [f for m in converted for f in chatprotect.release_folders(
            m.src, **m.convert)]) if converted else {}
        for m in todo:
            member_expected = sums.expected(m.sha256, m.dst)
            try:  # each member alone: one that fails is named, the good ones are written all the same
                if "convert" in m:
                    new[m.dst] = convert(files, m, data_dir / m.dst, member_expected, f"made from {m.src} of {archive}")
                else:
                    new[m.dst] = extract(archive, root + m.src, data_dir / m.dst, member_expected)
            except bad as e:
                failed.append(f"{m.dst}: {e}")
    except bad as e:  # the archive itself cannot be read
        failed.append(str(e))
    if failed:
        if expected is None:  # unverified, perhaps truncated: a rerun fetches it again, not reuses it
            archive.unlink(missing_ok=True)
            note = f"deleted {archive}; a rerun fetches it again"
        else:
            note = f"{archive} has its expected sha256: check the member entries in conf/download.yaml"
        kept = f"; {len(new)} other file(s) written" if new else ""
        raise DownloadError(f"{archive.name} from {url}: refused {len(failed)} file(s){kept}:\n  "
                            + "\n  ".join(failed) + f"\n  ({note})") from None
    # pinned only after extraction worked, so a truncated archive is never taken as the reference
    if not entry.sha256:
        sums.pin(entry.dst, digest)
    for member in todo:
        if not member.sha256:
            sums.pin(member.dst, new[member.dst])
        status[member.dst] = "downloaded"
    if not cfg.keep_archives:
        archive.unlink()
    return status


def fetch_parts(url: str, entry: DictConfig, data_dir: Path, sums: Checksums, cfg: DictConfig) -> dict[str, str]:
    """Make entry.dst from the release files `url` names with {part} filled in (data_prep.summedits.release_jsonl).
    The fetched files hold SummEdits' test split: they are deleted however this ends (written, refused,
    interrupted), with any .part, and keep_archives does not keep them; only the evaluation split is written."""
    expected = sums.expected(entry.sha256, entry.dst)
    digest = present_digest(data_dir / entry.dst, expected)
    if digest is None:
        raw_dir = data_dir / entry.raw_dir
        try:
            files, names = {}, {}
            for part in entry.parts:
                part_url = url.format(part=part)
                raw = raw_dir / Path(urlsplit(part_url).path).name
                if not raw.exists():  # one put there by hand is used (and deleted like the others)
                    fetch(part_url, raw, None, cfg)
                files[part], names[part] = raw.read_bytes(), part_url
            dst = data_dir / entry.dst
            dst.parent.mkdir(parents=True, exist_ok=True)
            tmp = dst.with_name(dst.name + ".part")
            try:
                tmp.write_bytes(summedits.release_jsonl(files, list(entry.parts), names))
            except DataFormatError as e:
                raise DownloadError(f"{entry.dst}: {e}: refused, nothing written to {dst.resolve()}") from None
            digest = install(tmp, dst, expected, f"{entry.dst} made from {url}")
        finally:
            shutil.rmtree(raw_dir, ignore_errors=True)  # the test split goes with them, even on failure
        status = "downloaded"
    else:
        status = "present"
    if not entry.sha256:
        sums.pin(entry.dst, digest)
    return {entry.dst: status}


def check_sources(cfg: DictConfig) -> None:
    for source in cfg.sources:
        if source not in cfg.releases:
            raise DownloadError(f"unknown source {source!r}; known: {', '.join(cfg.releases)}")


def download(cfg: DictConfig) -> dict[str, str]:
    """Fetch every file of cfg.sources into cfg.paths.data_dir: {target path: 'downloaded' | 'present'}.
    Stops at the first failure with a DownloadError."""
    check_sources(cfg)
    data_dir = Path(cfg.paths.data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    sums = Checksums(data_dir / cfg.lock_file)
    status = {}
    for source in cfg.sources:
        release = cfg.releases[source]
        for entry in release.files:
            url = f"{release.base_url}/{entry.src}"
            get = fetch_archive if "members" in entry else fetch_parts if "parts" in entry else fetch_file
            status.update(get(url, entry, data_dir, sums, cfg))
    return status


@hydra.main(version_base="1.3", config_path="../conf", config_name="download")
def main(cfg: DictConfig) -> None:
    try:
        status = download(cfg)
    except DownloadError as e:
        # the message is the whole story: no traceback
        print(f"error: {e}\n  (stopped there; every URL and target is in conf/download.yaml, and "
              "sources=[...] fetches some releases alone)", file=sys.stderr)
        sys.exit(1)
    counts = Counter(status.values())
    print(f"{counts['downloaded']} files downloaded, {counts['present']} already present with the right "
          f"sha256 (skipped), in {Path(cfg.paths.data_dir).resolve()}")


if __name__ == "__main__":
    main()
