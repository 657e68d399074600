"""Crowd workers' way in (`/ext`), only on a campaign started with `platform=mturk` or `platform=prolific`.

A worker id names a worker; it does not authenticate one (anyone can type an id into the URL). The first
visit of an id binds it to that browser: the browser gets a random key in an HttpOnly cookie, the database
keeps its sha256, and the redirect goes to the worker's personal link. The same id later, from a browser
with that key, gets the same link back; from any other client it gets a page saying the id is already in
use (409), nothing of the worker's, and the admin page lists the attempt.

The cookie: MTurk shows the page in an iframe of its own site, a cross-site frame, where a browser sends
only a `SameSite=None; Secure` cookie; `Partitioned` keeps it (CHIPS) where third-party cookies are
blocked, tied to MTurk's site, which is all the binding needs. Browsers treat http://127.0.0.1 and
http://localhost as secure, so the tests run it over http; MTurk itself requires https. Prolific opens
the page as a top-level window: `SameSite=Lax`, Secure when public_url is https.
"""
from __future__ import annotations

import hashlib
import secrets
from urllib.parse import urlencode

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from annotate import page
from annotate.store import Refused, Store

PLATFORMS = {"mturk": ("Mechanical Turk", "workerId"), "prolific": ("Prolific", "PROLIFIC_PID")}
COOKIE = "qasem_browser"
COOKIE_DAYS = 365  # longer than any campaign: a worker who comes back within it is recognised
MAX_WORKER_ID = 200


def check_worker_id(worker: str) -> None:
    """A worker id is 1 to 200 printable characters; Refused (400) naming the rule otherwise."""
    rule = f"a worker id is 1 to {MAX_WORKER_ID} printable characters"
    if not worker:
        raise Refused(400, f"{rule}: this one is empty")
    if len(worker) > MAX_WORKER_ID:
        raise Refused(400, f"{rule}: this one has {len(worker)}")
    if not worker.isprintable():
        raise Refused(400, f"{rule}: this one holds a character that is not printable")


def browser_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def add_crowd_entry(app: FastAPI, store: Store, platform: str, max_workers: int | None, secure_cookie: bool) -> None:
    """GET /ext for `platform`'s workers (see the module's docstring)."""
    name, param = PLATFORMS[platform]
    framed = platform == "mturk"
    cookie = {"httponly": True, "samesite": "none" if framed else "lax", "secure": framed or secure_cookie,
              "max_age": COOKIE_DAYS * 86400, "path": "/"}

    @app.get("/ext")
    def external(request: Request):
        q = request.query_params
        if framed and q.get("assignmentId") == "ASSIGNMENT_ID_NOT_AVAILABLE":  # MTurk's preview: no worker yet
            return HTMLResponse(page.message_page("Preview", "Accept the HIT to start annotating."))
        if param not in q:
            raise Refused(400, f"this campaign takes {name} workers: its link needs {param}")
        worker = q[param]
        check_worker_id(worker)
        key = request.cookies.get(COOKIE) or ""
        fresh = len(key) < 32  # no key yet (or not one this app gave): this browser gets one now
        if fresh:
            key = secrets.token_urlsafe(32)
        token = store.enter_worker(platform, worker, browser_hash(key), max_workers)
        if token is None:
            return HTMLResponse(page.message_page(
                "Worker id already in use",
                f"The {name} worker id {worker} is already in use in another browser. Open the task in the browser "
                "you started it in; if that is not possible, contact the requester."), status_code=409)
        keep = {k: q[k] for k in ("assignmentId", "turkSubmitTo") if framed and q.get(k)}
        response = RedirectResponse(f"/a/{token}" + (f"?{urlencode(keep)}" if keep else ""), status_code=303)
        if fresh:
            response.set_cookie(COOKIE, key, **cookie)
            if framed:  # Starlette writes Partitioned on Python 3.14+ only (http.cookies); it is a plain attribute
                name_, value = response.raw_headers[-1]
                response.raw_headers[-1] = (name_, value + b"; Partitioned")
        return response
