"""Who can do what on the annotation app, each against a real `python -m annotate.serve` on 127.0.0.1:
- a worker id names a worker and never hands them over: a second client with the same id gets a page saying
  it is in use, none of the worker's token, labels or notes, and the admin page lists the attempt;
- /ext only exists on a campaign with a platform; max_workers caps the ids it accepts; revoking (admin page
  or revoke=) and hold_minutes give the items a worker held back;
- the database, its -wal and -shm files and the links file are owner-only from the first start, whatever
  the umask; a revoked name added again gets a new token;
- numbers out of range are a 422, a 20 MB body a 413 before it is read; every response carries the security
  headers; a form posted from another site is refused; links never come from the request's Host;
- in Chromium, the MTurk flow inside an iframe of another origin (a second local server): the HIT posted to
  MTurk's externalSubmit, the same worker back in the same browser, and another browser refused.
Bad input: worker ids empty, too long or not printable; a platform other than the database's."""
from __future__ import annotations

import json
import os
import socket
import sqlite3
import stat
import subprocess
import sys
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from omegaconf import OmegaConf

from annotate.serve import CampaignChanged, open_store
from annotate.tasks import load_tasks
from annotate_helpers import ROOT, all_saved, chromium, new_page, serve, write_tasks
from benchmarks.annotate_load import synthetic_tasks

pytestmark = pytest.mark.timeout(240)
SANDBOX = "https://workersandbox.mturk.com"


def hit(base: str, client: httpx.Client, worker: str, **params) -> httpx.Response:
    """A platform worker's visit to /ext (MTurk's parameters), not following the redirect."""
    return client.get(f"{base}/ext", params={"workerId": worker, "assignmentId": "A-" + worker, "hitId": "H", **params},
                      follow_redirects=False)


def bind_cookie(client: httpx.Client, response: httpx.Response) -> None:
    """Keep the browser key as a browser would: httpx sends no Secure cookie over http, Chromium does on
    127.0.0.1 (a secure context)."""
    key = response.headers["set-cookie"].split(";", 1)[0]
    client.headers["Cookie"] = key


def token_of(response: httpx.Response) -> str:
    return urlsplit(response.headers["location"]).path.rsplit("/", 1)[1]


def rows(db: Path, sql: str) -> list:
    with sqlite3.connect(db) as con:
        return con.execute(sql).fetchall()


# ---------------------------------------------------------------------------- a worker id is not a password
def test_a_second_client_with_the_same_worker_id_gets_nothing_of_theirs(tmp_path):
    tasks, db = write_tasks(tmp_path / "tasks.jsonl"), tmp_path / "labels.db"
    with serve(tasks, db, "platform=mturk") as (base, links, _), httpx.Client() as worker, httpx.Client() as other:
        first = hit(base, worker, "W1")
        assert first.status_code == 303
        cookie = first.headers["set-cookie"]
        for attribute in ("HttpOnly", "SameSite=none", "Secure", "Partitioned"):
            assert attribute.lower() in cookie.lower(), cookie
        token = token_of(first)
        bind_cookie(worker, first)
        assert worker.get(f"{base}/a/{token}").status_code == 200
        label = {"item_id": "cliff:1:m", "kind": "span", "target": 0, "value": 1, "seq": 1}
        assert worker.post(f"{base}/api/{token}/label", json=label).json()["applied"]
        assert worker.post(f"{base}/api/{token}/note", json={"item_id": "cliff:1:m", "note": "W1's note",
                                                             "seq": 2}).json()["applied"]

        # the same id from another client, with no key or a made-up one: refused, nothing of theirs given
        for attempt in (other.get, lambda url, **kw: other.get(url, headers={"Cookie": "qasem_browser=" + "x" * 43}, **kw)):
            r = attempt(f"{base}/ext", params={"workerId": "W1", "assignmentId": "A2", "hitId": "H"},
                        follow_redirects=False)
            assert r.status_code == 409 and "already in use" in r.text
            assert token not in r.text and "location" not in r.headers and "set-cookie" not in r.headers
            assert "W1's note" not in r.text
        # the worker, back in their browser: their own link, labels and note untouched
        assert token_of(hit(base, worker, "W1")) == token
        item = worker.get(f"{base}/api/{token}/item").json()
        assert item["labels"]["span"] == {"0": 1} and item["labels"]["note"] == "W1's note"
        admin = httpx.get(links["admin"]).text
        listed = admin.split('id="refused-entries"')[1]
        assert "<td>W1</td><td>2</td>" in listed
    assert len(rows(db, "SELECT * FROM annotators WHERE platform = 'mturk'")) == 1  # no second annotator for W1


@pytest.mark.parametrize("worker,rule", [("", "this one is empty"), ("W" * 201, "this one has 201"),
                                         ("W\x00", "not printable"), ("W\n1", "not printable")])
def test_a_bad_worker_id_is_refused_naming_the_rule(tmp_path, worker, rule):
    from fastapi.testclient import TestClient

    from annotate.app import make_app
    from test_annotate import open_store as new_store

    store = new_store(tmp_path)
    client = TestClient(make_app(store, "https://testserver", platform="mturk"), base_url="https://testserver")
    r = client.get("/ext", params={"workerId": worker, "assignmentId": "A"}, follow_redirects=False)
    assert r.status_code == 400 and "a worker id is 1 to 200 printable characters" in r.text and rule in r.text
    assert store.annotators() == []
    store.close()


# ---------------------------------------------------------------------------- who may become an annotator
def test_no_platform_no_ext_and_a_platform_caps_its_workers(tmp_path):
    tasks, db = synthetic_tasks(tmp_path / "tasks.jsonl", 5), tmp_path / "labels.db"
    with serve(tasks, db, "k=3") as (base, links, _), httpx.Client() as client:
        assert all(hit(base, client, f"W{i}").status_code == 404 for i in range(20))
        assert client.get(f"{base}/ext", params={"PROLIFIC_PID": "P1"}).status_code == 404
    assert rows(db, "SELECT COUNT(*) FROM annotators") == [(0,)]
    db2 = tmp_path / "capped.db"
    with serve(tasks, db2, "k=3", "platform=mturk", "max_workers=3") as (base, links, _), httpx.Client() as client:
        got = [hit(base, client, f"W{i}").status_code for i in range(5)]  # one client: no cookie kept (http)
        assert got == [303, 303, 303, 403, 403]
        assert "takes no more workers" in hit(base, client, "W9").text
    assert rows(db2, "SELECT COUNT(*) FROM annotators") == [(3,)]


def take_every_slot(base: str, n: int) -> dict[str, str]:
    """n workers, each in their own client, each taking an item: {worker id: token}."""
    tokens = {}
    for i in range(n):
        with httpx.Client() as client:
            r = hit(base, client, f"W{i}")
            tokens[f"W{i}"] = token_of(r)
            assert client.get(f"{base}/api/{tokens[f'W{i}']}/item").json()["item_id"]
    return tokens


def test_revoking_the_workers_who_hold_every_slot_gives_the_slots_back(tmp_path):
    """5 items, k=3: fifteen workers hold every slot; revoked (ten on the admin page, five with revoke= at a
    restart), their items go back to the pool, and the named annotator gets all 5."""
    tasks, db = synthetic_tasks(tmp_path / "tasks.jsonl", 5), tmp_path / "labels.db"
    with serve(tasks, db, "k=3", "platform=mturk", "annotators=[ann]") as (base, links, _):
        tokens = take_every_slot(base, 15)
        ann = links["annotators"]["ann"]
        ann_token = ann.rsplit("/", 1)[1]
        assert httpx.get(f"{base}/api/{ann_token}/item").json() == {"item_id": None, "done": 0, "total": 0}
        admin = links["admin"]
        for i in range(10):
            r = httpx.post(f"{admin}/revoke", data={"name": f"mturk:W{i}"})
            assert r.status_code == 303
        assert httpx.get(f"{base}/api/{tokens['W0']}/item").status_code == 403
        # W0-W9 held items 1-3 and one slot of item 4 (in the order they came): ann can have 4 of the 5
        assert httpx.get(f"{base}/api/{ann_token}/item").json()["total"] == 4
    revoke = ",".join(f"mturk:W{i}" for i in range(10, 15))
    with serve(tasks, db, "platform=mturk", f"revoke=[{revoke}]") as (base, links, _):
        assert rows(db, "SELECT COUNT(*) FROM assignments a JOIN annotators n USING (annotator_id) "
                        "WHERE n.platform = 'mturk'") == [(0,)]
        assert httpx.get(f"{base}/api/{ann_token}/item").json()["total"] == 5


def test_an_item_held_past_hold_minutes_goes_back_to_the_pool(tmp_path):
    import time

    tasks, db = synthetic_tasks(tmp_path / "tasks.jsonl", 5), tmp_path / "labels.db"
    with serve(tasks, db, "k=3", "platform=mturk", "hold_minutes=0.02", "annotators=[ann]") as (base, links, _):
        tokens = take_every_slot(base, 15)
        ann_token = links["annotators"]["ann"].rsplit("/", 1)[1]
        time.sleep(1.5)  # 0.02 minutes is 1.2 s
        item = httpx.get(f"{base}/api/{ann_token}/item").json()
        assert item["item_id"] is not None and item["total"] == 5
        # the worker whose item expired: a label on it is refused as not theirs
        r = httpx.post(f"{base}/api/{tokens['W0']}/label", json={"item_id": item["item_id"], "kind": "span",
                                                                 "target": 0, "value": 1})
        assert r.status_code == 403
        # the named annotator's own item is never taken back
        time.sleep(1.5)
        assert httpx.get(f"{base}/api/{ann_token}/item").json()["item_id"] == item["item_id"]


def test_a_platform_other_than_the_databases_is_refused_unless_reconfigured(tmp_path):
    tasks, db = write_tasks(tmp_path / "tasks.jsonl"), tmp_path / "labels.db"

    def start(**over):
        cfg = OmegaConf.load(ROOT / "conf" / "annotate_serve.yaml")
        cfg.merge_with({"tasks": str(tasks), "db": str(db), **over})
        return open_store(cfg, load_tasks(tasks))

    start(platform="mturk").close()
    start(platform="mturk").close()
    for platform, said in ((None, "platform=null"), ("prolific", "platform=prolific")):
        with pytest.raises(CampaignChanged, match=f"platform: the database was created with platform=mturk, "
                                                  f"this start says {said}.*reconfigure=true"):
            start(platform=platform)
    start(platform=None, reconfigure=True).close()
    start().close()  # now a campaign without crowd workers
    run = subprocess.run([sys.executable, "-m", "annotate.serve", f"tasks={tasks}", f"db={tmp_path / 'new.db'}",
                          "port=1", "platform=upwork"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    out = run.stdout + run.stderr
    assert run.returncode == 1 and "platform=upwork: expected mturk or prolific" in out and "Traceback" not in out
    assert not (tmp_path / "new.db").exists()


# ---------------------------------------------------------------------------- credentials
def test_every_credential_file_is_owner_only_from_the_first_start(tmp_path):
    tasks, db = write_tasks(tmp_path / "tasks.jsonl"), tmp_path / "labels.db"
    old = os.umask(0)  # whatever the umask, nothing relies on it
    try:
        with serve(tasks, db, "annotators=[ann]") as (base, links, _):
            files = [db, Path(f"{db}-wal"), Path(f"{db}-shm"), Path(f"{db}.links.json")]
            modes = {f.name: oct(stat.S_IMODE(f.stat().st_mode)) for f in files}
            assert modes == {f.name: "0o600" for f in files}
            assert not list(tmp_path.glob("*.tmp"))
            # a revoked name added again gets a new token; the old one stays dead
            old_link = links["annotators"]["ann"]
            httpx.post(f"{links['admin']}/revoke", data={"name": "ann"})
            httpx.post(f"{links['admin']}/annotators", data={"name": "ann"})
            new_link = json.loads(Path(f"{db}.links.json").read_text())["annotators"]["ann"]
            assert new_link != old_link and httpx.get(old_link).status_code == 403
            assert httpx.get(new_link).status_code == 200
            assert oct(stat.S_IMODE(Path(f"{db}.links.json").stat().st_mode)) == "0o600"
    finally:
        os.umask(old)


# ---------------------------------------------------------------------------- HTTP hygiene
def test_numbers_out_of_range_bodies_too_large_and_the_headers(tmp_path):
    tasks, db = write_tasks(tmp_path / "tasks.jsonl"), tmp_path / "labels.db"
    with serve(tasks, db, "annotators=[ann]") as (base, links, proc):
        ann = links["annotators"]["ann"]
        token = ann.rsplit("/", 1)[1]
        httpx.get(ann)
        label = {"item_id": "cliff:1:m", "kind": "span", "target": 0, "value": 1}
        for seq in (2**63, 2**63 - 1, 10**30, -1):
            for path, body in (("label", label), ("note", {"item_id": "cliff:1:m", "note": "n"})):
                r = httpx.post(f"{base}/api/{token}/{path}", json={**body, "seq": seq})
                assert r.status_code == 422, (path, seq, r.status_code, r.text)
        # the largest number the page can send does not freeze the row: a different answer at it still counts
        top = 2**53 - 1
        assert httpx.post(f"{base}/api/{token}/label", json={**label, "seq": top}).json()["applied"]
        assert httpx.post(f"{base}/api/{token}/label", json={**label, "seq": top}).json()["applied"] is False
        assert httpx.post(f"{base}/api/{token}/label", json={**label, "value": 0, "seq": top}).json()["applied"]

        # 20 MB announced: refused before the body is read (only its first 64 kB are ever sent)
        port = int(base.rsplit(":", 1)[1])
        for head in (f"Content-Length: {20 << 20}", "Transfer-Encoding: chunked"):
            with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
                s.sendall(f"POST /api/{token}/note HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                          f"{head}\r\n\r\n".encode())
                chunk = b"x" * 65536
                try:
                    if head.startswith("Transfer"):  # 2 MB in chunks, no length announced: cut off past 1 MB
                        for _ in range(32):
                            s.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    else:
                        s.sendall(chunk)
                except OSError:  # the server answered and closed: it read no further
                    pass
                assert s.recv(200).startswith(b"HTTP/1.1 413"), head

        pages = [ann, links["admin"], f"{base}/healthz", f"{base}/static/annotate.js", f"{base}/nope",
                 f"{base}/ext?workerId=W", f"{base}/a/unknown"]
        for url in pages:
            h = httpx.get(url).headers
            csp = dict(part.strip().split(" ", 1) for part in h["content-security-policy"].split(";"))
            assert csp["script-src"] == "'self'" and csp["default-src"] == "'none'" and csp["style-src"] == "'self'"
            assert csp["frame-ancestors"] == "'none'", url  # no platform: no one may frame the app
            assert (h["x-content-type-options"], h["referrer-policy"], h["cache-control"]) == \
                   ("nosniff", "no-referrer", "no-store"), url
        assert httpx.post(f"{base}/api/{token}/label", json={**label, "seq": "1e30"}).status_code == 422
    assert "Traceback" not in proc.output and " 500 " not in proc.output


def test_links_come_from_public_url_never_from_the_host_header(tmp_path):
    tasks, db = write_tasks(tmp_path / "tasks.jsonl"), tmp_path / "labels.db"
    public = "https://annotate.example.org"
    with serve(tasks, db, "annotators=[ann]", f"public_url='{public}'") as (base, links, _):
        assert links["admin"].startswith(public + "/admin/") and links["annotators"]["ann"].startswith(public + "/a/")
        local_admin = base + urlsplit(links["admin"]).path
        page = httpx.get(local_admin, headers={"Host": "evil.example:666"}).text
        assert "evil.example" not in page and f"{public}/a/" in page
    with serve(tasks, db, "annotators=[ann]") as (base, links, _):  # by default: the address it binds
        assert links["admin"].startswith(base + "/admin/")
        page = httpx.get(links["admin"], headers={"Host": "evil.example"}).text
        assert "evil.example" not in page and f"{base}/a/" in page


@contextmanager
def page_server(pages: dict[str, str]):
    """Another site: a second local HTTP server serving `pages` ({path: html}); yields its port."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            body = pages.get(self.path.split("?")[0], "").encode()
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_a_form_posted_from_another_site_is_refused(tmp_path):
    tasks, db = write_tasks(tmp_path / "tasks.jsonl"), tmp_path / "labels.db"
    with serve(tasks, db) as (base, links, _):
        admin = links["admin"]
        attack = (f'<form id="f" method="post" action="{admin}/annotators"><input name="name" value="mallory"></form>'
                  f'<script>document.getElementById("f").submit()</script>')
        with page_server({"/attack.html": attack}) as port, chromium() as browser:
            page = browser.new_page()
            page.goto(f"http://localhost:{port}/attack.html")
            page.wait_for_url(f"{admin}/annotators")
            assert "a write from another site" in page.content()
            # the admin's own form, on the admin page, still works
            page.goto(admin)
            page.fill('#add-annotator input[name="name"]', "zoe")
            page.click("#add-annotator button")
            page.wait_for_url(f"{admin}#by-annotator")
        r = httpx.post(f"{admin}/revoke", data={"name": "zoe"}, headers={"Origin": "http://evil.example"})
        assert r.status_code == 403
    assert [n for (n,) in rows(db, "SELECT name FROM annotators WHERE revoked = 0")] == ["zoe"]


# ---------------------------------------------------------------------------- MTurk, in its frame
def test_the_mturk_flow_inside_a_frame_of_another_site(tmp_path):
    """The HIT page is served by a second local server (http://localhost:PORT: another site than the app's
    http://127.0.0.1), which frames /ext as MTurk does."""
    tasks, db = write_tasks(tmp_path / "tasks.jsonl"), tmp_path / "labels.db"
    pages = {}
    with page_server(pages) as frame_port:
        host = f"http://localhost:{frame_port}"
        with serve(tasks, db, "k=1", "platform=mturk", f"mturk_hosts=['{host}']") as (base, links, _), \
                chromium() as browser:
            ext = f"{base}/ext?workerId=W7&assignmentId=A1&hitId=H&turkSubmitTo={SANDBOX}"
            pages["/hit.html"] = f'<iframe src="{ext}" width="1200" height="850"></iframe>'
            pages["/preview.html"] = f'<iframe src="{base}/ext?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE"></iframe>'
            posted, dialogs = [], []
            worker = browser.new_context(viewport={"width": 1300, "height": 900})
            worker.route(f"{SANDBOX}/**", lambda route: (posted.append(route.request.post_data),
                                                         route.fulfill(body="submitted", content_type="text/html")))
            page = worker.new_page()
            page.on("pageerror", lambda e: dialogs.append(str(e)))
            page.goto(f"{host}/preview.html")
            assert "Accept the HIT" in page.frames[1].locator("#message").text_content()
            page.goto(f"{host}/hit.html")
            frame = page.frame_locator("iframe")
            assert frame.locator("header b").text_content() == "Item 1 of 2"
            app_frame = page.frames[1]
            token = urlsplit(app_frame.url).path.rsplit("/", 1)[1]
            frame.locator("header b").click()
            for _ in range(8):  # 4 spans covered, 4 QAs supported, from the keyboard
                page.keyboard.press("y")
            all_saved(app_frame)
            page.keyboard.press("Enter")
            for _ in range(50):  # the page posts the HIT to MTurk's externalSubmit (answered by the route above)
                if posted:
                    break
                page.wait_for_timeout(200)
            assert len(posted) == 1 and "assignmentId=A1" in posted[0] and "item_id=cliff%3A1%3Am" in posted[0]
            # the same worker, back in the same browser: their own link, on their next item
            page.goto(f"{host}/hit.html")
            assert frame.locator("header b").text_content() == "Item 2 of 2"
            assert urlsplit(page.frames[1].url).path == f"/a/{token}"
            # the same id in another browser: nothing of theirs
            other = browser.new_context().new_page()
            other.goto(f"{host}/hit.html")
            other_frame = other.frame_locator("iframe")
            assert "already in use" in other_frame.locator("#message").text_content()
            assert token not in other.frames[1].url and token not in other.frames[1].content()
            assert not dialogs, dialogs
            refused = httpx.get(links["admin"]).text.split('id="refused-entries"')[1]
            assert "<td>W7</td><td>1</td>" in refused
            h = httpx.get(ext, follow_redirects=False).headers["content-security-policy"]
            assert f"frame-ancestors {host}" in h and f"form-action 'self' https://www.mturk.com {SANDBOX}" in h
        # the default hosts: MTurk's own sites only, so this page can no longer frame the app
        with serve(tasks, db, "platform=mturk") as (base, links, _), chromium() as browser:
            page = browser.new_page()
            page.goto(f"{host}/preview.html")  # the frame still points at the app's old port: a fresh page
            pages["/preview.html"] = f'<iframe src="{base}/ext?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE"></iframe>'
            page.goto(f"{host}/preview.html")
            page.wait_for_timeout(1000)
            assert page.frames[1].locator("#message").count() == 0  # blocked: the frame shows no page of the app
            assert "https://worker.mturk.com" in httpx.get(f"{base}/healthz").headers["content-security-policy"]
