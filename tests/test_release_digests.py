"""release/digests.py: an input file stands in the release's DAG as its content digest, rewritten only
when the content changes (a touched file reruns nothing, an edited one reruns what reads it)."""
from __future__ import annotations

import os

from release.digests import Digests


def test_a_touched_file_keeps_its_digest_and_an_edited_one_moves_it(tmp_path):
    repo, release = tmp_path / "repo", tmp_path / "release"
    (repo / "models").mkdir(parents=True)
    code = repo / "models" / "x.py"
    code.write_text("a = 1\n")
    rel = Digests(release).digest(code, repo, "repo")
    assert rel == ".inputs/repo/models/x.py.sha256"
    digest = release / rel
    first = digest.stat().st_mtime_ns
    os.utime(code, ns=(first + 10**9, first + 10**9))  # a restored or freshly checked-out file: new mtime, same bytes
    again = Digests(release)
    assert again.digest(code, repo, "repo") == rel and digest.stat().st_mtime_ns == first
    code.write_text("a = 2\n")
    os.utime(digest, ns=(first - 10**9, first - 10**9))
    Digests(release).digest(code, repo, "repo")
    assert digest.stat().st_mtime_ns > first and digest.read_text().strip() != ""


def test_hashes_are_cached_by_size_and_mtime_across_runs(tmp_path, monkeypatch):
    repo, release = tmp_path / "repo", tmp_path / "release"
    repo.mkdir()
    data = repo / "d.jsonl"
    data.write_text("{}\n")
    first = Digests(release)
    first.digest(data, repo, "data")
    first.save()
    calls = []
    monkeypatch.setattr("release.stamps.sha256_of", lambda p: calls.append(p) or "x")
    Digests(release).digest(data, repo, "data")
    assert calls == []  # unchanged size and mtime: read from .inputs/index.json
