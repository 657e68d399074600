"""The annotation app without a browser: tasks, assignment, refusals, export and the release's round trip.

The HTTP tests go through FastAPI's TestClient (the same app object `annotate.serve` runs); the CLI tests
run the entry points as users do."""
from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from annotate.app import make_app
from annotate.export import export_lines
from annotate.store import Refused, Store, TaskMismatch
from annotate.tasks import TaskFileError, file_digest, load_tasks
from annotate_helpers import ROOT, task_rows, write_tasks

ITEM = "cliff:1:m"
BASE = "http://testserver"  # TestClient's address: the app's public_url in these tests


def open_store(tmp_path, k=3, tasks=None) -> Store:
    tasks = tasks or write_tasks(tmp_path / "tasks.jsonl")
    store = Store(tmp_path / "labels.db")
    store.load_items(load_tasks(tasks), str(tasks), file_digest(tasks), k)
    return store


def label_all(client, token, item_id=ITEM, span=1, qa=0):
    n = 4 if item_id == ITEM else 1  # item 2 holds one QA and one span
    for s in range(n):
        assert client.post(f"/api/{token}/label", json={"item_id": item_id, "kind": "span", "target": s,
                                                        "value": span}).status_code == 200
    for q in range(n):
        client.post(f"/api/{token}/label", json={"item_id": item_id, "kind": "qa", "target": q, "value": qa})


# ---------------------------------------------------------------------------- tasks
def test_a_malformed_task_file_names_the_line_and_imports_nothing(tmp_path):
    good = json.dumps(task_rows()[0])
    bad_rows = {"not json": "{oops", "no qas": json.dumps({"id": 1}),
                "answer outside": json.dumps({**task_rows()[0], "qas": [{**task_rows()[0]["qas"][0], "answer_idx": "0-99"}]})}
    for what, bad in bad_rows.items():
        tasks = tmp_path / f"{what}.jsonl"
        tasks.write_text(good + "\n\n" + bad + "\n")
        with pytest.raises(TaskFileError, match=f"{tasks}:3"):
            load_tasks(tasks)
    # through the CLI: exit 1, the line named, and no database written
    run = subprocess.run([sys.executable, "-m", "annotate.serve", f"tasks={tasks}", f"db={tmp_path / 'x.db'}",
                          "port=1"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and f"{tasks}:3" in run.stdout + run.stderr
    assert not (tmp_path / "x.db").exists()


def test_item_ids_are_stable_and_repeats_are_refused(tmp_path):
    tasks = write_tasks(tmp_path / "tasks.jsonl")
    assert [i["item_id"] for i in load_tasks(tasks)] == ["cliff:1:m", "cliff:2:m"]
    tasks.write_text(tasks.read_text() + json.dumps(task_rows()[0]) + "\n")
    with pytest.raises(TaskFileError, match=r"tasks.jsonl:3: item id cliff:1:m repeats line 1"):
        load_tasks(tasks)


def test_reports_jsonl_tasks_keep_the_model_score_as_a_suggestion(tmp_path):
    report = {"id": "p1", "score": 0.5, "sentences": [
        {"index": 0, "tokens": ["Ann", "sold", "the", "house", "."], "predicates": [
            {"predicate_index": 1, "predicate": "sold", "predicate_type": "verbal", "qas": [
                {"question": "who sold something?", "answer": "Ann", "answer_span": [0, 1], "score": 0.9},
                {"question": "what did someone sell?", "answer": "the house", "answer_span": [2, 4], "score": 0.2},
                {"question": "to whom?", "answer": "Bob", "answer_span": None, "score": 0.1}]}]}]}
    (tmp_path / "reports.jsonl").write_text(json.dumps(report) + "\n")
    (tmp_path / "pairs.jsonl").write_text(json.dumps({"id": "p1", "reference": "Ann sold her house to Bob."}) + "\n")
    with pytest.raises(TaskFileError, match="reports.jsonl:1: no reference text"):
        load_tasks(tmp_path / "reports.jsonl")
    # a report with nothing to annotate (no predicate found) is left out, not an error
    empty = {"id": "p2", "status": "no_predicates", "sentences": [{"index": 0, "tokens": ["Hi", "."], "predicates": []}]}
    with (tmp_path / "reports.jsonl").open("a") as f:
        f.write(json.dumps(empty) + "\n")
    (tmp_path / "pairs.jsonl").write_text((tmp_path / "pairs.jsonl").read_text()
                                          + json.dumps({"id": "p2", "reference": "Hello."}) + "\n")
    [item] = load_tasks(tmp_path / "reports.jsonl", tmp_path / "pairs.jsonl")
    assert item["item_id"] == "report:p1" and item["reference"][:3] == ["Ann", "sold", "her"]
    assert [q["suggestion"] for q in item["qas"]] == [0.9, 0.2]  # the span-less QA cannot be shown
    assert [(s["start"], s["end"], s["qa_ids"]) for s in item["spans"]] == [(0, 1, [0]), (2, 4, [1])]
    assert item["row"]["qas"][1]["answer_idx"] == "2-4"


# ---------------------------------------------------------------------------- assignment and refusals
def test_each_item_goes_to_k_annotators_never_twice_to_one(tmp_path):
    store = open_store(tmp_path, k=2)
    ids = [store.add_annotator(n) for n in "abc"]
    got = {}
    for token in ids:
        who = store.annotator(token)["annotator_id"]
        got[token] = store.current(who)
        assert store.current(who) == got[token]  # resume: the same open item
    assert list(got.values()) == ["cliff:1:m", "cliff:1:m", "cliff:2:m"]  # item 1 is full after two
    store.close()


def test_writes_at_once_share_commits_and_a_refusal_undoes_only_its_own(tmp_path):
    """Store._grouped: forty threads saving at once, every other one refused (an item not theirs). Each save
    answers for itself, whatever else shared its commit: the accepted ones stored once, the refused ones not."""
    import threading

    store = open_store(tmp_path, k=40)
    ids = [store.annotator(store.add_annotator(f"a{i}"))["annotator_id"] for i in range(40)]
    for a in ids[::2]:
        assert store.current(a) == ITEM
    outcomes = {}

    def save(a):
        try:
            outcomes[a] = store.save_label(a, ITEM, "span", 0, 1, 5)
        except Refused as e:
            outcomes[a] = e.status

    threads = [threading.Thread(target=save, args=(a,)) for a in ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outcomes == {a: (True if n % 2 == 0 else 403) for n, a in enumerate(ids)}
    with sqlite3.connect(store.path) as con:
        assert sorted(a for (a,) in con.execute("SELECT annotator_id FROM labels")) == sorted(ids[::2])
    store.close()


def test_refusals(tmp_path):
    store = open_store(tmp_path)
    client = TestClient(make_app(store, BASE))
    ann, other = store.add_annotator("ann"), store.add_annotator("other")
    assert client.get("/healthz").json() == {"ok": True, "items": 2, "k": 3}
    assert client.get("/a/nope").status_code == 403
    assert client.post("/api/nope/label", json={"item_id": ITEM, "kind": "span", "target": 0, "value": 1}).status_code == 403
    # a label for an item that is not (yet) assigned to this annotator
    r = client.post(f"/api/{ann}/label", json={"item_id": ITEM, "kind": "span", "target": 0, "value": 1})
    assert r.status_code == 403 and "not assigned" in r.json()["error"]
    assert client.get(f"/a/{ann}").status_code == 200  # now it is
    assert client.post(f"/api/{ann}/label", json={"item_id": ITEM, "kind": "span", "target": 0, "value": 1}).status_code == 200
    assert client.post(f"/api/{ann}/label", json={"item_id": "cliff:2:m", "kind": "span", "target": 0,
                                                  "value": 1}).status_code == 403
    assert client.post(f"/api/{ann}/label", json={"item_id": ITEM, "kind": "span", "target": 9, "value": 1}).status_code == 422
    assert client.post(f"/api/{ann}/label", json={"item_id": ITEM, "kind": "span", "target": 0, "value": 2}).status_code == 422
    # submitting with questions left open is refused, naming every one as the page numbers them (1..n per list)
    r = client.post(f"/api/{ann}/done", json={"item_id": ITEM})
    assert r.status_code == 409 and r.json()["error"] == (
        "not every question is answered yet: step 1 rows 2, 3, 4; step 2, predicate 1 (approved) rows 1, 2, 3; "
        "step 2, predicate 2 (proposed) row 1")
    # a revoked token stops working
    store.revoke("other")
    r = client.get(f"/a/{other}")
    assert r.status_code == 403 and "revoked" in r.text
    assert client.get("/admin/wrong").status_code == 403
    store.close()


def test_a_database_from_another_task_file_is_refused_naming_both(tmp_path):
    store = open_store(tmp_path)
    store.close()
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps(task_rows()[1]) + "\n")
    store = Store(tmp_path / "labels.db")
    with pytest.raises(TaskMismatch, match=rf"built from task file {tmp_path / 'tasks.jsonl'}.*not from {other}"):
        store.load_items(load_tasks(other), str(other), file_digest(other), 3)
    store.close()


def test_double_submits_are_stored_once_and_uncovered_spans_decide_their_qas(tmp_path):
    store = open_store(tmp_path, k=1)
    client = TestClient(make_app(store, BASE))
    token = store.add_annotator("ann")
    client.get(f"/a/{token}")
    label_all(client, token, qa=0)
    label_all(client, token, qa=0)  # everything twice
    # span 2 now not covered: QA 2's label goes, it is unsupported without asking
    client.post(f"/api/{token}/label", json={"item_id": ITEM, "kind": "span", "target": 2, "value": 0})
    for _ in range(2):
        assert client.post(f"/api/{token}/done", json={"item_id": ITEM}).json()["submitted"]
    with sqlite3.connect(store.path) as con:
        assert con.execute("SELECT COUNT(*) FROM labels").fetchone()[0] == 4 + 3
        assert con.execute("SELECT COUNT(*) FROM assignments WHERE finished IS NOT NULL").fetchone()[0] == 1
    row = json.loads(next(export_lines(store)))
    assert [q["annotations"] for q in row["qas"]] == [[0], [0], [1], [0]]
    assert [s["annotations"] for s in row["spans"]] == [[1], [1], [0], [1]]
    assert client.post(f"/api/{token}/label", json={"item_id": ITEM, "kind": "qa", "target": 0,
                                                    "value": 1}).status_code == 409  # submitted: closed
    store.close()


def test_platform_workers_come_in_through_the_url(tmp_path):
    """The same worker in the same browser (its cookie) gets the same link; each platform only with its own
    campaign (the takeover by a second client is in tests/test_annotate_security.py)."""
    store = open_store(tmp_path)
    # MTurk's cookie is Secure (it lives in MTurk's cross-site frame): the client speaks https
    mturk = TestClient(make_app(store, "https://testserver", platform="mturk"), base_url="https://testserver",
                       follow_redirects=False)
    r1 = mturk.get("/ext", params={"workerId": "W1", "assignmentId": "A1", "hitId": "H"})
    r2 = mturk.get("/ext", params={"workerId": "W1", "assignmentId": "A1", "hitId": "H"})
    assert r1.status_code == 303 and r1.headers["location"] == r2.headers["location"]  # one worker, one annotator
    assert "Accept the HIT" in mturk.get("/ext", params={"assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE"}).text
    assert mturk.get("/ext", params={"PROLIFIC_PID": "P1"}).status_code == 400  # not this campaign's platform
    client = TestClient(make_app(store, BASE, completion_code="C0DE<x>", platform="prolific"), follow_redirects=False)
    prolific = client.get("/ext", params={"PROLIFIC_PID": "P1", "STUDY_ID": "S"}).headers["location"]
    token = prolific.rsplit("/", 1)[1]
    assert [a["name"] for a in store.annotators()] == ["mturk:W1", "prolific:P1"]
    for item in ("cliff:1:m", "cliff:2:m"):
        assert client.get(prolific).status_code == 200
        label_all(client, token, item)
        assert client.post(f"/api/{token}/done", json={"item_id": item}).status_code == 200
    done = client.get(prolific).text
    assert "C0DE&lt;x&gt;" in done and "cc=C0DE%3Cx%3E" in done
    store.close()


def test_admin_page_shows_progress_agreement_and_the_export(tmp_path):
    store = open_store(tmp_path, k=2)
    client = TestClient(make_app(store, BASE))
    tokens = [store.add_annotator(n) for n in ("a<b>", "c")]
    for t, qa in zip(tokens, (0, 1)):
        client.get(f"/a/{t}")
        label_all(client, t, qa=qa)
        client.post(f"/api/{t}/done", json={"item_id": ITEM})
    admin = store.meta("admin_token")
    page = client.get(f"/admin/{admin}").text
    assert "a&lt;b&gt;" in page and "1 of 2 items have all 2 annotators" in page and "CLIFF" in page
    export = client.get(f"/admin/{admin}/export.jsonl").text.splitlines()
    assert len(export) == 1 and [q["annotations"] for q in json.loads(export[0])["qas"]] == [[0, 1]] * 4
    store.close()


# ---------------------------------------------------------------------------- the release
def test_release_votes_round_trip_byte_equal(data_dir, tmp_path):
    """The release's votes imported and exported again give back dev + test byte for byte; data_prep and
    evaluation.agreement read the export."""
    from data_prep.consistency import read_consistency

    bench = tmp_path / "bench.jsonl"
    bench.write_bytes(b"".join((data_dir / "qasem-consistency" / f"{s}.jsonl").read_bytes() for s in ("dev", "test")))
    db, out = tmp_path / "release.db", tmp_path / "export.jsonl"
    for cmd in (["annotate.import_votes", f"tasks={bench}", f"db={db}"], ["annotate.export", f"db={db}", f"out={out}"]):
        subprocess.run([sys.executable, "-m", *cmd], cwd=ROOT, check=True, capture_output=True, timeout=120)
    assert out.read_bytes() == bench.read_bytes()
    examples, skipped = read_consistency(out, "export")
    assert len(examples) == 1542 + 1556 and not skipped
    run = subprocess.run([sys.executable, "-m", "evaluation.agreement", str(out)], cwd=ROOT, check=True,
                         capture_output=True, text=True)
    assert round(json.loads(run.stdout)["factscore"]["qa_kappa"], 2) == 0.78


def test_mturk_hit_submits_once_and_its_results_file_restores_the_labels(tmp_path):
    import csv

    from annotate.import_platform import ResultsFileError, import_results

    store = open_store(tmp_path)
    client = TestClient(make_app(store, "https://testserver", platform="mturk"), base_url="https://testserver",
                        follow_redirects=False)
    params = {"workerId": "W9", "assignmentId": "A1", "hitId": "H", "turkSubmitTo": "https://workersandbox.mturk.com"}
    link = client.get("/ext", params=params).headers["location"]
    assert "assignmentId=A1" in link and "turkSubmitTo=" in link
    assert '"submit_to": "https://workersandbox.mturk.com"' in client.get(link).text
    evil = client.get(link.replace("workersandbox.mturk.com", "evil.example")).text
    assert '"mturk": null' in evil  # a form is only ever posted to MTurk itself
    token = link.split("/a/", 1)[1].split("?")[0]
    label_all(client, token, qa=1)
    out = [client.post(f"/api/{token}/done", json={"item_id": ITEM, "platform_assignment": "A1"}).json()
           for _ in range(2)]  # the worker's double submit
    fields = out[0]["mturk_fields"]
    assert fields["assignmentId"] == "A1" and json.loads(fields["labels"])["qa"] == {str(q): 1 for q in range(4)}
    client.get(f"/a/{token}")  # the next item, under the same assignment id: refused
    client.post(f"/api/{token}/label", json={"item_id": "cliff:2:m", "kind": "span", "target": 0, "value": 1})
    client.post(f"/api/{token}/label", json={"item_id": "cliff:2:m", "kind": "qa", "target": 0, "value": 0})
    r = client.post(f"/api/{token}/done", json={"item_id": "cliff:2:m", "platform_assignment": "A1"})
    assert r.status_code == 409 and "already submitted item 'cliff:1:m'" in r.json()["error"]

    results = tmp_path / "Batch_1_batch_results.csv"
    with results.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["HITId", "WorkerId", "AssignmentId", "AssignmentStatus", "Answer.item_id", "Answer.labels"])
        w.writerow(["H", "W9", "A1", "Submitted", ITEM, fields["labels"]])
        w.writerow(["H", "W7", "A2", "Rejected", ITEM, "{}"])
    assert import_results(store, results) == {"rows": 2, "rejected": 1, "already_stored": 1, "restored": 0}
    before = list(export_lines(store, 1))
    store.close()
    # a fresh database of the same tasks gets the worker's labels back from the file, once
    fresh = Store(tmp_path / "fresh.db")
    tasks = tmp_path / "tasks.jsonl"
    fresh.load_items(load_tasks(tasks), str(tasks), file_digest(tasks), 3)
    assert import_results(fresh, results)["restored"] == 1
    assert import_results(fresh, results)["already_stored"] == 1
    assert list(export_lines(fresh, 1)) == before
    bad = tmp_path / "bad.csv"
    bad.write_text(results.read_text().replace(ITEM, "nope", 1))
    with pytest.raises(ResultsFileError, match=f"{bad}:2: item 'nope'"):
        import_results(fresh, bad)
    fresh.close()


def test_uncertainty_order_puts_the_least_sure_items_first():
    from annotate.tasks import by_uncertainty

    def item(name, ps):
        return {"item_id": name, "qas": [{"suggestion": p} for p in ps]}

    items = [item("none", [None]), item("sure", [0.99, 0.02]), item("unsure", [0.55, 0.4]), item("mid", [0.8])]
    assert [i["item_id"] for i in by_uncertainty(items)] == ["unsure", "mid", "sure", "none"]


def test_each_annotator_against_the_others(tmp_path):
    from annotate.quality import agreement_with_others

    store = open_store(tmp_path, k=3)
    client = TestClient(make_app(store, BASE))
    tokens = {n: store.add_annotator(n) for n in ("a", "b", "odd")}
    for name, qa in (("a", 0), ("b", 0), ("odd", 1)):
        client.get(f"/a/{tokens[name]}")
        label_all(client, tokens[name], qa=qa)
        client.post(f"/api/{tokens[name]}/done", json={"item_id": ITEM})
    ids = {a["name"]: a["annotator_id"] for a in store.annotators()}
    got = agreement_with_others(store)
    assert got[ids["odd"]] == {"qas": 4, "agree": 0.0}          # a and b agree, and not with it
    assert got[ids["a"]] == {"qas": 0, "agree": None}           # the other two tie: nothing to compare
    assert "0.0% of 4" in client.get(f"/admin/{store.meta('admin_token')}").text
    store.close()


def test_gold_items_score_each_annotator(tmp_path):
    from annotate.quality import gold_accuracy, read_gold

    rows = task_rows()
    for q, votes in zip(rows[0]["qas"], ([0, 0, 1], [1, 1, 1], [0, 1, 1], [1, 0, 0])):
        q["annotations"] = votes  # gold majority: 0, 1, 1, 0
    (tmp_path / "gold.jsonl").write_text(json.dumps(rows[0]) + "\n")
    gold = read_gold(tmp_path / "gold.jsonl")
    assert gold == {ITEM: {"0": 0, "1": 1, "2": 1, "3": 0}}
    store = open_store(tmp_path, k=1)
    client = TestClient(make_app(store, BASE, gold=gold))
    token = store.add_annotator("ann")
    client.get(f"/a/{token}")
    label_all(client, token, qa=0)  # all supported: right on QAs 0 and 3
    client.post(f"/api/{token}/done", json={"item_id": ITEM})
    assert list(gold_accuracy(store, gold).values()) == [{"qas": 4, "agree": 0.5}]
    assert "50.0% of 4" in client.get(f"/admin/{store.meta('admin_token')}").text
    store.close()
