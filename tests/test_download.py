"""python -m data_prep.download against a local HTTP server (tests/http_file_server.py) that serves
fixture releases made from the real data dir, at the paths conf/download.yaml names below its mirrors:
a full download into the build layout, a second run that fetches nothing, resume after a cut
(Range), checksum refusal, a pinned checksum that changes upstream, 404, a stall (timeout).

ChatProtect is served as GitHub serves it, one archive of the release's tree, made from
tests/fixtures/chatprotect (a few of its files, in its own layout): the JSONL made from it must be the
offline copy's lines for the pairs the fixture holds, byte for byte. SummEdits is served as its release's
per-domain files, from tests/fixtures/summedits (rows of both splits): only the evaluation rows come out, in
the offline copy's format, and the fetched domain files (which hold the test split) are never kept."""
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
CHATPROTECT_FIXTURE = Path(__file__).resolve().parent / "fixtures" / "chatprotect"
# The pairs the fixture's files make, in file order: what the filters keep (CompactIE triples, tags ok /
# strong; the test set without the revised texts' mN_* files; PopQA in annotation order, demo items out).
CHATPROTECT_IDS = {
    "chatprotect/chatgpt.validation.jsonl": [
        f"chatgpt/Please_tell_me_about_Hernn_Siles_Zuazo/{n}" for n in ("0_0_0", "0_2_1", "m2_0_0_0", "m2_5_5_0")],
    "chatprotect/chatgpt.test.jsonl": [
        f"chatgpt/Please_tell_me_about_BaileyThompson_House/{n}" for n in ("0_0_0", "0_1_0")],
    "chatprotect/chatgpt.big.jsonl": [
        f"chatgpt/Please_tell_me_about_196869_FA_Cup_qualifying_rounds/{n}" for n in ("0_0_0", "0_2_1", "m2_0_2_0", "m2_1_1_0")],
    "chatprotect/popqa.jsonl": [f"{g}/{s}/{q}" for g, s, qs in [
        ("chatgpt", "popqa_contriever", ["In_what_city_was_William_Perry_Hay_born/0_0_1", "In_what_country_is_Fzrradvny/0_0_0",
                                         "What_is_the_capital_of_BasseKotto_Prefecture/0_0_0", "Who_is_the_author_of_Do_The_Work/0_0_0"]),
        ("chatgpt", "popqa", ["In_what_city_was_Joris_Delle_born/0_0_0", "In_what_city_was_Thomas_Seaton_Scott_born/0_0_0",
                              "In_what_city_was_William_Perry_Hay_born/0_0_0", "What_genre_is_Disneys_The_Kid/0_0_0"]),
        ("llama-2-70b-chat", "popqa_contriever", ["In_what_city_was_Koudai_Tsukakoshi_born/0_0_0", "In_what_city_was_Veselin_Vujovi_born/0_0_0",
                                                  "In_what_city_was_William_Perry_Hay_born/0_0_0", "Who_was_the_screenwriter_for_The_Spoilers/0_0_0"]),
        ("llama-2-70b-chat", "popqa", ["In_what_city_was_Gustavo_A._Madero_born/0_0_0", "In_what_city_was_Israel_Horowitz_born/0_0_0",
                                       "In_what_city_was_Jan_van_de_Cappelle_born/0_0_0", "What_genre_is_Another_World/0_0_1",
                                       "Who_was_the_screenwriter_for_The_Russia_House/0_0_0"]),
    ] for q in qs],
}
CHATPROTECT_TEST = "chatprotect/chatgpt.test.jsonl"
# SummEdits is served as the release's per-domain files, from tests/fixtures/summedits (see its FIXTURE.md):
# its evaluation rows, in domain then file order, are what evaluation.jsonl must hold; its test rows never.
SUMMEDITS_FIXTURE = Path(__file__).resolve().parent / "fixtures" / "summedits"
SUMMEDITS = "summedits/evaluation.jsonl"
SUMMEDITS_IDS = ["podcast-madeup_podcast_0", "podcast-madeup_podcast_2", "samsum-samsum_train_13731241_og",
                 "samsum-samsum_train_13731241_0", "scitldr-B1gtK0NKwr_0"]  # the last three: real rows
SUMMEDITS_MISSING = "data/summedits/summedits_scitldr.json"
CHATPROTECT_TEST_PAIR = ("test/test/sentences/chatgpt/Please_tell_me_about_BaileyThompson_House/m3/0_1_0.txt")
CHATPROTECT_ANNOTATION = "annotations/popqa/llama-2-70b-chat/reconciled/popqa.json"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def make_cfg(data_dir, base, *overrides):
    """The download config pointed at the test server: no waiting, no progress bars, one try."""
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(config_name="download", overrides=[
            f"paths.data_dir={data_dir}", f"mirrors.qasrl_org={base}/qasrl", f"mirrors.github_raw={base}/gh",
            f"mirrors.github={base}/github",
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
    if path.name.endswith(".tar.gz"):  # a GitHub archive
        with tarfile.open(path, "w:gz") as t:
            for name, data in members.items():
                info = tarfile.TarInfo(name)
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
        return
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
            if "parts" in entry:  # SummEdits: the fixture's domain files; the output's sha256 that of its rows
                for variant in ("gh", "gh-missing"):  # and the release with one domain file missing
                    for f in sorted(SUMMEDITS_FIXTURE.rglob("*")):
                        rel = f.relative_to(SUMMEDITS_FIXTURE).as_posix()
                        if f.is_dir() or f.name == "FIXTURE.md" or (variant != "gh" and rel == SUMMEDITS_MISSING):
                            continue
                        path = root / variant / urlparse(f"{release.base_url}/{rel}").path.lstrip("/").split("/", 1)[1]
                        if path.exists():  # LICENSE.txt: already served from the offline copy
                            continue
                        path.parent.mkdir(parents=True, exist_ok=True)
                        path.write_bytes(f.read_bytes())
                overrides.append(f"releases.{name}.files.{i}.sha256="
                                 + hashlib.sha256(summedits_expected(data_dir)).hexdigest())
                continue
            if entry.get("root"):  # ChatProtect: the fixture's tree, and each output as the offline copy's lines
                write_archive(served, chatprotect_tree(entry.root))
                for j, m in enumerate(entry.members):
                    if "convert" in m:
                        overrides.append(f"releases.{name}.files.{i}.members.{j}.sha256="
                                         + hashlib.sha256(offline_lines(data_dir, m.dst)).hexdigest())
                # the same release with one annotation file missing, and with one pair file cut short
                for variant, tree in chatprotect_variants(entry.root).items():
                    path = root / variant / served.relative_to(root / "github")
                    path.parent.mkdir(parents=True, exist_ok=True)
                    write_archive(path, tree)
                continue
            if "members" not in entry:
                os.symlink(data_dir / entry.dst, served)  # served read-only; faults change bytes in flight
                continue
            members = {m.src: member_bytes(data_dir, m.dst) for m in entry.members}
            write_archive(served, {**members, "unlisted/extra.txt": b"not extracted\n"})
            if entry.sha256:
                overrides.append(f"releases.{name}.files.{i}.sha256={sha256(served)}")
    return root, overrides


def chatprotect_tree(root: str) -> dict[str, bytes]:
    """The fixture's files as the GitHub archive holds them, below its top folder."""
    return {f"{root}/{p.relative_to(CHATPROTECT_FIXTURE).as_posix()}": p.read_bytes()
            for p in sorted(CHATPROTECT_FIXTURE.rglob("*")) if p.is_file() and p.name != "FIXTURE.md"}


def chatprotect_variants(root: str) -> dict[str, dict[str, bytes]]:
    tree = chatprotect_tree(root)
    missing = {k: v for k, v in tree.items() if k != f"{root}/{CHATPROTECT_ANNOTATION}"}
    cut = {**tree, f"{root}/{CHATPROTECT_TEST_PAIR}": tree[f"{root}/{CHATPROTECT_TEST_PAIR}"][:200]}
    return {"github-missing": missing, "github-cut": cut}


def offline_lines(data_dir: Path, dst: str) -> bytes:
    """The offline copy's lines for the fixture's pairs, in CHATPROTECT_IDS order."""
    lines = {json.loads(line)["id"]: line for line in (data_dir / dst).read_text(encoding="utf-8").splitlines(True)}
    return "".join(lines[i] for i in CHATPROTECT_IDS[dst]).encode("utf-8")


def summedits_raw_rows() -> list[tuple[str, dict]]:
    """(domain, row) of every row of the fixture's domain files, both splits, in the output's order."""
    domains = ["ectsum", "news", "podcast", "qmsumm", "sales_call", "sales_email", "samsum", "scitldr"]
    return [(d, r) for d in domains for r in json.loads(
        (SUMMEDITS_FIXTURE / f"data/summedits/summedits_{d}.json").read_text(encoding="utf-8"))]


def summedits_expected(data_dir: Path) -> bytes:
    """The fixture's evaluation rows as evaluation.jsonl holds them: for real rows, the offline copy's lines."""
    offline = {json.loads(line)["id"]: line
               for line in (data_dir / SUMMEDITS).read_text(encoding="utf-8").splitlines(True)}
    lines = []
    for domain, r in summedits_raw_rows():
        if r["split"] == "evaluation":
            row_id = f"{domain}-{r['id']}"
            lines.append(offline.get(row_id) or json.dumps({"id": row_id, "domain": domain, **{
                k: r[k] for k in ("doc", "summary", "label", "original_summary", "edit_types")}}) + "\n")
    return "".join(lines).encode("ascii")


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
        if dst in CHATPROTECT_IDS or dst == SUMMEDITS:  # the fixtures' rows alone: tested below
            continue
        if (data_dir / dst).exists():  # every file of the offline copy, byte for byte
            assert sha256(out / dst) == sha256(data_dir / dst), dst
    train = out / "qasrl-bank-v2/orig/train.jsonl.gz"
    assert len(gzip.decompress(train.read_bytes()).splitlines()) == 20
    # no published checksum: pinned at first download, the tarball's too (though the tarball is gone)
    pinned = json.loads((out / cfg.lock_file).read_text())
    assert pinned["qasrl-bank-v2/orig/train.jsonl.gz"] == sha256(train)
    chatprotect_archive = cfg.releases.chatprotect.files[0].dst
    assert set(pinned) == {"qasrl-bank-v2/orig/train.jsonl.gz", ".downloads/qasrl-v2.tar", chatprotect_archive}
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


def test_chatprotect_pairs_are_the_offline_copys(downloaded, data_dir):
    """Same pairs, labels and fields as ../shared/data/chatprotect for every id the fixture holds."""
    out, status, _ = downloaded
    assert sha256(out / "chatprotect/LICENSE") == sha256(data_dir / "chatprotect/LICENSE")
    for dst, ids in CHATPROTECT_IDS.items():
        assert status[dst] == "downloaded"
        offline = {r["id"]: r for r in map(json.loads, (data_dir / dst).read_text(encoding="utf-8").splitlines())}
        rows = [json.loads(line) for line in (out / dst).read_text(encoding="utf-8").splitlines()]
        assert [r["id"] for r in rows] == ids, dst
        assert rows == [offline[i] for i in ids], dst
        assert {r["label"] for r in rows} == {0, 1}, dst  # each file holds a contradiction and a non-contradiction


def test_chatprotect_checksum_mismatch_names_the_file_and_keeps_the_others(cfg_for, tmp_path):
    cfg = cfg_for(tmp_path, "sources=[chatprotect]", "releases.chatprotect.files.0.members.2.sha256=" + "0" * 64)
    with pytest.raises(DownloadError) as e:
        download(cfg)
    assert f"{CHATPROTECT_TEST}: made from test/test/sentences/chatgpt of " in str(e.value)
    assert "expected " + "0" * 64 + ": refused" in str(e.value)
    assert not (tmp_path / CHATPROTECT_TEST).exists()
    kept = {dst for dst in CHATPROTECT_IDS if (tmp_path / dst).exists()}
    assert kept == set(CHATPROTECT_IDS) - {CHATPROTECT_TEST} and (tmp_path / "chatprotect/LICENSE").exists()


def test_chatprotect_missing_file_is_named(cfg_for, tmp_path):
    cfg = cfg_for(tmp_path, "sources=[chatprotect]",
                  "releases.chatprotect.base_url=${mirrors.github}-missing/eth-sri/ChatProtect/archive")
    with pytest.raises(DownloadError) as e:
        download(cfg)
    assert f"chatprotect/popqa.jsonl: {CHATPROTECT_ANNOTATION}: not in the release" in str(e.value)
    assert not (tmp_path / "chatprotect/popqa.jsonl").exists()
    assert all((tmp_path / dst).exists() for dst in CHATPROTECT_IDS if dst != "chatprotect/popqa.jsonl")


def test_chatprotect_corrupt_file_is_named_and_a_rerun_fetches_the_rest(cfg_for, server, tmp_path):
    cfg = cfg_for(tmp_path, "sources=[chatprotect]",
                  "releases.chatprotect.base_url=${mirrors.github}-cut/eth-sri/ChatProtect/archive")
    with pytest.raises(DownloadError) as e:
        download(cfg)
    assert f"{CHATPROTECT_TEST}: {CHATPROTECT_TEST_PAIR}: not valid JSON" in str(e.value)
    assert not (tmp_path / CHATPROTECT_TEST).exists()
    assert not (tmp_path / cfg.releases.chatprotect.files[0].dst).exists()  # unverified archive: fetched again
    good = sorted(p.relative_to(tmp_path).as_posix() for p in (tmp_path / "chatprotect").iterdir())
    assert good == sorted({"chatprotect/LICENSE", *CHATPROTECT_IDS} - {CHATPROTECT_TEST})
    status = download(cfg_for(tmp_path, "sources=[chatprotect]"))  # the release as published
    assert status == {"chatprotect/LICENSE": "present", **{d: "present" for d in CHATPROTECT_IDS}, CHATPROTECT_TEST: "downloaded"}


@pytest.mark.parametrize("retries", [0, 1], ids=["rerun", "retry"])
def test_chatprotect_cut_download_resumes(cfg_for, server, tmp_path, data_dir, retries):
    # small reads: the fixture's archive is smaller than the default chunk, and a cut loses the chunk being read
    cfg = cfg_for(tmp_path, "sources=[chatprotect]", f"retries={retries}", "chunk_bytes=1024")
    path = url_path(cfg, cfg.releases.chatprotect.files[0].dst)
    server[1].faults[path] = ["cut"]
    if retries == 0:
        with pytest.raises(DownloadError, match="connection"):
            download(cfg)
        assert (tmp_path / (cfg.releases.chatprotect.files[0].dst + ".part")).stat().st_size > 0
        assert not (tmp_path / "chatprotect").exists()
    status = download(cfg)
    assert set(status.values()) == {"downloaded"}
    ranges = [r for _, p, r in server[1].requests if p == path]
    assert len(ranges) == 2 and ranges[0] is None and ranges[1].startswith("bytes=")
    assert (tmp_path / CHATPROTECT_TEST).read_bytes() == offline_lines(data_dir, CHATPROTECT_TEST)


def test_summedits_is_the_evaluation_split_only(downloaded, data_dir):
    """The fixture's evaluation rows, in the offline copy's format (its own lines for the real rows); no test row,
    and no domain file (they hold the test split) left behind."""
    out, status, _ = downloaded
    assert status[SUMMEDITS] == status["summedits/LICENSE"] == "downloaded"
    assert sha256(out / "summedits/LICENSE") == sha256(data_dir / "summedits/LICENSE")
    made = (out / SUMMEDITS).read_bytes()
    assert made == summedits_expected(data_dir)
    rows = [json.loads(line) for line in made.decode("ascii").splitlines()]
    assert [r["id"] for r in rows] == SUMMEDITS_IDS
    assert {r["label"] for r in rows} == {0, 1}
    test_ids = [f"{d}-{r['id']}" for d, r in summedits_raw_rows() if r["split"] == "test"]
    assert len(test_ids) == 7 and not set(test_ids) & {r["id"] for r in rows}
    assert not (out / ".downloads/summedits").exists()


def test_summedits_domain_files_are_deleted_even_with_keep_archives(cfg_for, tmp_path):
    status = download(cfg_for(tmp_path, "sources=[summedits]", "keep_archives=true"))
    assert status == {"summedits/LICENSE": "downloaded", SUMMEDITS: "downloaded"}
    files = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()}
    assert files == {"summedits/LICENSE", SUMMEDITS}  # no domain file, no .part: the test split is not kept
    assert not (tmp_path / ".downloads/summedits").exists()


def test_summedits_corrupt_file_is_refused_naming_it(cfg_for, server, tmp_path):
    cfg = cfg_for(tmp_path, "sources=[summedits]")
    path = urlparse(cfg.releases.summedits.base_url).path + "/data/summedits/summedits_samsum.json"
    server[1].faults[path] = ["corrupt"]
    with pytest.raises(DownloadError) as e:
        download(cfg)
    assert f"{SUMMEDITS}: " in str(e.value) and "summedits_samsum.json: not valid JSON" in str(e.value)
    assert not (tmp_path / SUMMEDITS).exists() and not (tmp_path / (SUMMEDITS + ".part")).exists()
    assert not (tmp_path / ".downloads/summedits").exists()  # the fetched domain files are gone all the same
    assert download(cfg_for(tmp_path, "sources=[summedits]"))[SUMMEDITS] == "downloaded"  # a rerun makes it


def test_summedits_missing_file_is_refused_naming_it(cfg_for, tmp_path):
    cfg = cfg_for(tmp_path, "sources=[summedits]", "releases.summedits.base_url="
                  "${mirrors.github_raw}-missing/salesforce/factualNLG/${commits.summedits}")
    with pytest.raises(DownloadError) as e:
        download(cfg)
    assert f"{cfg.releases.summedits.base_url}/{SUMMEDITS_MISSING}: HTTP 404" in str(e.value)
    assert not (tmp_path / SUMMEDITS).exists() and not (tmp_path / ".downloads/summedits").exists()


def test_summedits_checksum_mismatch_is_refused(cfg_for, tmp_path):
    cfg = cfg_for(tmp_path, "sources=[summedits]", "releases.summedits.files.1.sha256=" + "0" * 64)
    with pytest.raises(DownloadError, match="expected " + "0" * 64 + ": refused"):
        download(cfg)
    assert not (tmp_path / SUMMEDITS).exists() and not (tmp_path / ".downloads/summedits").exists()


def test_summedits_converter_keeps_evaluation_rows_and_refuses_unknown_splits():
    from data_prep.records import DataFormatError
    from data_prep.summedits import release_jsonl
    row = {"id": "a", "doc": "d", "summary": "s", "label": 1, "original_summary": "s", "edit_types": [], "split": "test"}
    files = {"news": json.dumps([row, {**row, "id": "b", "split": "evaluation"}]).encode()}
    assert [json.loads(line)["id"] for line in release_jsonl(files, ["news"]).splitlines()] == ["news-b"]
    assert release_jsonl({"news": json.dumps([row]).encode()}, ["news"]) == b""
    with pytest.raises(DataFormatError, match="x.json: row 0 has split 'train'"):
        release_jsonl({"news": json.dumps([{**row, "split": "train"}]).encode()}, ["news"], {"news": "x.json"})
    with pytest.raises(DataFormatError, match="row 0 lacks split"):
        release_jsonl({"news": json.dumps([{k: v for k, v in row.items() if k != "split"}]).encode()}, ["news"])
    with pytest.raises(DataFormatError, match="ectsum: not in the release"):
        release_jsonl(files, ["news", "ectsum"])
