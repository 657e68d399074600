"""A campaign over time, without a browser: its settings fixed at creation, a busy port that writes nothing,
the usage line, a database of an older format refused, answers that arrive twice, late or after the submit,
and the notes on the admin page and beside the export."""
from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys

import httpx
import pytest
from fastapi.testclient import TestClient
from omegaconf import OmegaConf

from annotate.app import make_app
from annotate.export import export, notes_path
from annotate.serve import CampaignChanged, open_store
from annotate.store import FormatMismatch
from annotate.tasks import load_tasks
from annotate_helpers import ROOT, free_port, serve, write_tasks
from test_annotate import BASE, ITEM, label_all
from test_annotate import open_store as new_store

pytestmark = pytest.mark.timeout(180)


def run_serve(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "annotate.serve", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def start(tasks, db, **over):
    cfg = OmegaConf.load(ROOT / "conf" / "annotate_serve.yaml")
    cfg.merge_with({"tasks": str(tasks), "db": str(db), **over})
    return open_store(cfg, load_tasks(tasks))


def test_a_start_without_tasks_prints_a_usage_line():
    run = run_serve("port=1")
    assert run.returncode == 2 and run.stderr.startswith("usage: python -m annotate.serve tasks=FILE db=PATH")
    assert "Traceback" not in run.stdout + run.stderr


def test_campaign_settings_are_fixed_at_creation_unless_reconfigured(tmp_path):
    tasks, db = write_tasks(tmp_path / "tasks.jsonl"), tmp_path / "labels.db"
    start(tasks, db, k=2, annotators=["ann"]).close()
    store = start(tasks, db)                                   # a plain restart keeps k=2 (not the default 3)
    assert store.k == 2
    store.close()
    gold = tmp_path / "gold.jsonl"
    gold.write_text(tasks.read_text())
    for over, named in [({"k": 3}, "k: the database has k=2, this start says k=3"),
                        ({"annotators": ["ann", "bea"]}, "annotators: bea not in the campaign (it has ann)"),
                        ({"gold": str(gold)}, "gold: the database was created with no gold file"),
                        ({"platform": "mturk"},
                         "platform: the database was created with platform=null, this start says platform=mturk")]:
        with pytest.raises(CampaignChanged, match="reconfigure=true") as e:
            start(tasks, db, **over)
        assert named in str(e.value)
    store = start(tasks, db, k=3, annotators=["ann", "bea"], reconfigure=True)
    assert store.k == 3 and [a["name"] for a in store.annotators()] == ["ann", "bea"]
    store.close()
    # through the command line: exit 1, the change named, before anything is served
    run = run_serve(f"tasks={tasks}", f"db={db}", f"port={free_port()}", "k=1")
    assert run.returncode == 1 and "k: the database has k=3, this start says k=1" in run.stdout + run.stderr


@pytest.mark.slow
def test_a_start_on_a_busy_port_writes_nothing(tmp_path):
    tasks, db = write_tasks(tmp_path / "tasks.jsonl"), tmp_path / "labels.db"
    with serve(tasks, db, "k=2") as (base, links, proc):  # started as the bare command: no annotator yet
        port = base.rsplit(":", 1)[1]
        assert links["annotators"] == {}
        links_before = (tmp_path / "labels.db.links.json").read_bytes()
        for target in (db, tmp_path / "new.db"):
            run = run_serve(f"tasks={tasks}", f"db={target}", f"port={port}", "k=3", "annotators=[other]",
                            "reconfigure=true")
            assert run.returncode == 1 and f"cannot listen on 127.0.0.1:{port}" in run.stdout + run.stderr
        assert httpx.get(f"{base}/healthz").json()["k"] == 2     # the running campaign is untouched
        assert (tmp_path / "labels.db.links.json").read_bytes() == links_before
        assert not (tmp_path / "new.db").exists() and not (tmp_path / "new.db.links.json").exists()
    # the bare start said how to add annotators, and where the admin page is
    assert "no annotator yet: add one by name on the admin page" in proc.output and links["admin"] in proc.output


def test_a_database_of_the_older_format_is_refused_and_left_as_it_was(fixtures, tmp_path):
    """tests/fixtures/annotate_today.db was written by the app before databases recorded their format (no
    platform, no browser binding). A start on it is refused, naming both formats and what to do, before
    anything is bound or written: the file is byte for byte as it was, and no links file appears."""
    db = tmp_path / "today.db"
    shutil.copy(fixtures / "annotate_today.db", db)
    before = db.read_bytes()
    tasks = write_tasks(tmp_path / "tasks.jsonl")
    with pytest.raises(FormatMismatch, match=r"format 1, written by an older version of the app; this one reads "
                                             r"format 2 only, and nothing in the file was changed.*new db="):
        start(tasks, db)
    run = run_serve(f"tasks={tasks}", f"db={db}", f"port={free_port()}")
    out = run.stdout + run.stderr
    assert run.returncode == 1 and "format 1" in out and "format 2" in out and "Traceback" not in out
    assert db.read_bytes() == before and not (tmp_path / "today.db.links.json").exists()
    with sqlite3.connect(db) as con:  # still the older layout: nothing was added to it
        assert "browser" not in {r[1] for r in con.execute("PRAGMA table_info(annotators)")}
        assert con.execute("SELECT COUNT(*) FROM labels").fetchone()[0] == 10


def test_answers_twice_late_or_after_the_submit(tmp_path):
    store = new_store(tmp_path, k=1)
    client = TestClient(make_app(store, BASE))
    ann = store.add_annotator("ann")
    client.get(f"/a/{ann}")
    span0 = {"item_id": ITEM, "kind": "span", "target": 0}

    def post(**body):
        return client.post(f"/api/{ann}/label", json={**span0, **body}).json()["applied"]

    assert post(value=1, seq=10) is True
    assert post(value=1, seq=10) is False                    # the same answer twice: stored once
    assert post(value=0, seq=5) is False                     # given earlier, arrived late: the later one stays
    assert store.labels(1, ITEM)["span"] == {"0": 1}
    assert post(value=0, seq=20) is True and store.labels(1, ITEM)["span"] == {"0": 0}
    # a QA answered before its span was marked not covered, arriving after: the span decided it
    assert client.post(f"/api/{ann}/label", json={"item_id": ITEM, "kind": "qa", "target": 0, "value": 0,
                                                  "seq": 15}).json()["applied"] is False
    assert store.labels(1, ITEM)["qa"] == {}
    label_all(client, ann)
    assert client.post(f"/api/{ann}/done", json={"item_id": ITEM}).status_code == 200
    r = client.post(f"/api/{ann}/label", json={**span0, "value": 0, "seq": 99})
    assert r.status_code == 409 and r.json()["error"] == ("this item was already submitted: the answer to step 1 row 1 "
                                                          "was not saved")
    store.close()


def test_notes_reach_the_admin_page_and_a_file_beside_the_export(tmp_path):
    from data_prep.consistency import read_consistency
    from metrics.agreement import agreement

    store = new_store(tmp_path, k=2)
    client = TestClient(make_app(store, BASE))
    for name, note in (("ann", "<b>odd</b> span 2"), ("bo", "")):
        token = store.add_annotator(name)
        client.get(f"/a/{token}")
        label_all(client, token)
        if note:
            client.post(f"/api/{token}/note", json={"item_id": ITEM, "note": note, "seq": 1})
        client.post(f"/api/{token}/done", json={"item_id": ITEM})
    admin = f"/admin/{store.meta('admin_token')}"
    page = client.get(admin).text
    assert "&lt;b&gt;odd&lt;/b&gt; span 2" in page and "Notes (1)" in page
    assert 'id="agree-note"' in page and "with k=2 it stays empty" in page   # the empty column explained
    assert client.get(f"{admin}/notes.jsonl").text == json.dumps(
        {"item_id": ITEM, "annotator": "ann", "note": "<b>odd</b> span 2"}) + "\n"
    # the item table filtered: one complete item, one open
    assert client.get(f"{admin}?status=complete").text.split('id="by-item"')[1].count("<td>cliff:") == 1
    assert "page 1 of 1 (1 items)" in client.get(f"{admin}?status=open&dataset=cliff").text
    store.close()
    out = tmp_path / "export.jsonl"
    assert export(tmp_path / "labels.db", out) == 1
    assert "note" not in out.read_text() and notes_path(out).name == "export.notes.jsonl"
    assert len(notes_path(out).read_text().splitlines()) == 1
    examples, _ = read_consistency(out, "dev")                  # the benchmark's reader and the agreement
    assert len(examples) == 4
    assert agreement([json.loads(line) for line in out.read_text().splitlines()])
