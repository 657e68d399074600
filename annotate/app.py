"""The web app (FastAPI): pages for annotators and the admin, a small JSON API the page saves through.

Routes
  GET  /healthz                       200 once the app serves (the database is open and the items loaded)
  GET  /a/{token}                     the annotator's current item (resume), or the finished page
  GET  /api/{token}/item              the same item as JSON
  POST /api/{token}/label             {"item_id", "kind": check|span|qa, "target", "value": 0|1, "seq"}: saved at once
                                      (seq, optional: the answer's number; an older one than the row's is ignored)
  POST /api/{token}/note              {"item_id", "note", "seq"}
  POST /api/{token}/done              {"item_id"}: submit the item (twice = once)
  GET  /ext?workerId=&assignmentId=…  Mechanical Turk external question; ?PROLIFIC_PID=&STUDY_ID=… Prolific (only with
                                      platform=mturk / prolific, else 404: annotate/crowd.py)
  GET  /admin/{admin_token}           progress (?dataset=&status=open|complete&page=N filter and page the items),
                                      agreement so far, notes, export link
  POST /admin/{admin_token}/annotators  form name=: a new annotator (their personal link appears on the page)
  POST /admin/{admin_token}/revoke      form name=: that annotator's link stops working
  GET  /admin/{admin_token}/export.jsonl
  GET  /admin/{admin_token}/notes.jsonl  the submitted items' notes (annotate.export writes them beside the export)
Refusals carry the store's status (403 unknown or revoked token, or an item not assigned to them). Every
response carries the security headers, a write from another site's page is refused and a body over 1 MB
gets a 413 before it is read (annotate/http_guard.py); links are built from `public_url`, never from the
request's Host.
Why FastAPI: maintained, typed request bodies with validation for free, and it runs on Uvicorn, which
stops cleanly on SIGTERM; sync handlers run in its thread pool, the store serialises the writes.
"""
from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Literal
from urllib.parse import parse_qs, urlencode

from fastapi import FastAPI, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from pydantic import BaseModel, Field

from annotate import page
from annotate.crowd import add_crowd_entry
from annotate.http_guard import MAX_BODY, SameOriginWrites, SecurityHeaders, content_security_policy
from annotate.store import MAX_SEQ, Refused, Store

STATIC = Path(__file__).resolve().parent / "static"


class Label(BaseModel):
    item_id: str
    kind: Literal["check", "span", "qa"]
    target: str | int
    value: Literal[0, 1]
    seq: int | None = Field(default=None, ge=0, le=MAX_SEQ)  # the answer's number on the page, in the order given


class Note(BaseModel):
    item_id: str
    note: str = Field(max_length=5000)
    seq: int | None = Field(default=None, ge=0, le=MAX_SEQ)


class Done(BaseModel):
    item_id: str
    platform_assignment: str | None = Field(default=None, max_length=200)  # MTurk's assignmentId


# where MTurk may send a worker's submit form (the live site and the sandbox); anything else is refused
MTURK_HOSTS = ("https://www.mturk.com", "https://workersandbox.mturk.com")


def mturk_submit_to(value: str | None) -> str | None:
    return value.rstrip("/") if value and value.rstrip("/") in MTURK_HOSTS else None


# names the app gives itself: an admin cannot take them for a person
RESERVED = ("mturk:", "prolific:", "release-")


def make_app(store: Store, public_url: str, qa_check: bool = False, suggestion: str = "after",
             completion_code: str | None = None, gold: dict | None = None, on_annotators=None,
             platform: str | None = None, max_workers: int | None = None, hold_minutes: float | None = None,
             mturk_hosts: tuple[str, ...] = ()) -> FastAPI:
    """public_url: where annotators reach the app (the links on the admin page start with it).
    gold: {item_id: {qa_id: label}} (annotate.quality.read_gold) for the admin page's gold column.
    on_annotators: called after the admin adds or revokes an annotator (annotate.serve rewrites the links file).
    platform: mturk | prolific opens /ext to that platform's workers, at most max_workers of them, each item
    they hold going back to the pool after hold_minutes unsubmitted; None: no /ext. mturk_hosts: the MTurk
    sites allowed to frame the page (platform=mturk only)."""
    app = FastAPI(title="QASemConsistency annotation", docs_url=None, redoc_url=None, openapi_url=None,
                  max_body_size=MAX_BODY)
    framed = platform == "mturk"
    app.add_middleware(SameOriginWrites, public_url=public_url)
    app.add_middleware(SecurityHeaders, csp=content_security_policy(list(mturk_hosts) if framed else [],
                                                                    list(MTURK_HOSTS) if framed else []))
    admin_token = store.meta("admin_token")
    hold_s = 60 * float(hold_minutes) if platform and hold_minutes is not None else None
    js = (STATIC / "annotate.js").read_text(encoding="utf-8")

    @app.exception_handler(Refused)
    def refused(request: Request, e: Refused):
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": e.message}, status_code=e.status)
        return HTMLResponse(page.message_page("Refused", e.message), status_code=e.status)

    @app.get("/healthz")
    def healthz():
        return {"ok": True, "items": len(store.items()), "k": store.k}

    @app.get("/favicon.ico")
    def favicon():
        return Response(status_code=204)

    @app.get("/static/annotate.js")
    def script():
        return Response(js, media_type="text/javascript")

    @app.get("/static/annotate.css")
    def style():  # a file, not a <style> element: the CSP allows styles from the app only
        return Response(page.CSS, media_type="text/css")

    @app.get("/a/{token}", response_class=HTMLResponse)
    def annotate(token: str, assignmentId: str | None = None, turkSubmitTo: str | None = None):
        who = store.annotator(token)
        item_id = store.current(who["annotator_id"], hold_s)
        done, total = store.progress(who["annotator_id"])
        if item_id is None:
            return finished_page(who, done)
        labels = store.labels(who["annotator_id"], item_id)
        state = {"token": token, "item_id": item_id, "labels": {k: labels[k] for k in ("check", "span", "qa")},
                 "note": labels["note"], "qa_check": qa_check, "suggestion": suggestion, "mturk": None}
        if who["platform"] == "mturk" and assignmentId and mturk_submit_to(turkSubmitTo):
            # after the item is submitted here, the page posts the HIT to MTurk with these
            state["mturk"] = {"assignment_id": assignmentId, "submit_to": mturk_submit_to(turkSubmitTo)}
        return page.item_page(store.items()[item_id], state, done, total)

    def finished_page(who, done: int) -> str:
        extra = ""
        if who["platform"] == "prolific" and completion_code:
            url = "https://app.prolific.com/submissions/complete?" + urlencode({"cc": completion_code})
            extra = (f'<p>Completion code: <b id="code">{page.esc(completion_code)}</b> '
                     f'<a id="complete" href="{page.esc(url)}">return to Prolific</a></p>')
        elif who["platform"] == "mturk":
            extra = '<p>Submit the HIT in the Mechanical Turk window.</p>'
        return page.message_page("All done", f"You submitted {done} items; none is left for you. Thank you!", extra)

    @app.get("/api/{token}/item")
    def current_item(token: str):
        """The current item as JSON (scripts and the load benchmark): ids, spans, QAs, this annotator's labels."""
        who = store.annotator(token)
        item_id = store.current(who["annotator_id"], hold_s)
        done, total = store.progress(who["annotator_id"])
        if item_id is None:
            return {"item_id": None, "done": done, "total": total}
        item = store.items()[item_id]
        return {"item_id": item_id, "done": done, "total": total,
                "spans": [{k: s[k] for k in ("span_id", "start", "end", "qa_ids")} for s in item["spans"]],
                "qas": [{k: q[k] for k in ("qa_id", "question", "answer", "start", "end")} for q in item["qas"]],
                "labels": store.labels(who["annotator_id"], item_id)}

    @app.post("/api/{token}/label")
    def label(token: str, body: Label):
        who = store.annotator(token)
        applied = store.save_label(who["annotator_id"], body.item_id, body.kind, str(body.target), body.value, body.seq)
        return {"saved": True, "applied": applied}  # applied false: a repeat, or older than the answer stored

    @app.post("/api/{token}/note")
    def note(token: str, body: Note):
        who = store.annotator(token)
        applied = store.save_note(who["annotator_id"], body.item_id, body.note, body.seq)
        return {"saved": True, "applied": applied}

    @app.post("/api/{token}/done")
    def done(token: str, body: Done):
        who = store.annotator(token)
        store.finish(who["annotator_id"], body.item_id, body.platform_assignment)
        out = {"submitted": True, "next": f"/a/{token}"}
        if who["platform"] == "mturk" and body.platform_assignment:
            # the HIT's answer carries the labels too, so the platform's results file can restore them
            labels = store.labels(who["annotator_id"], body.item_id)
            out["mturk_fields"] = {"assignmentId": body.platform_assignment, "item_id": body.item_id,
                                   "labels": json.dumps({k: labels[k] for k in ("check", "span", "qa")})}
        return out

    if platform:
        add_crowd_entry(app, store, platform, max_workers, secure_cookie=public_url.startswith("https://"))

    def check_admin(token: str):
        if not secrets.compare_digest(token.encode(), admin_token.encode()):
            raise Refused(403, "unknown admin token")

    @app.get("/admin/{token}", response_class=HTMLResponse)
    def admin(token: str, dataset: str = "", status: str = "", page_no: int = Query(1, alias="page")):
        from annotate.export import agreement_table
        from annotate.quality import agreement_with_others, gold_accuracy

        check_admin(token)
        links = {a["name"]: f"{public_url}/a/{a['token']}" for a in store.annotators() if not a["revoked"]}
        names = {a["annotator_id"]: a["name"] for a in store.annotators()}
        others = {names[a]: q for a, q in agreement_with_others(store).items()}
        on_gold = {names[a]: q for a, q in gold_accuracy(store, gold).items()} if gold else None
        datasets = {i: it["dataset"] for i, it in store.items().items()}
        return page.admin_page(store.overview(), store.k, agreement_table(store), admin_token, links, others, on_gold,
                               datasets=datasets, notes=store.notes(), view={"dataset": dataset, "status": status,
                                                                            "page": page_no},
                               refused_entries=store.refused_entries())

    async def form(request: Request) -> dict[str, str]:
        body = (await request.body()).decode("utf-8", "replace")
        return {k: v[0] for k, v in parse_qs(body).items()}

    @app.post("/admin/{token}/annotators")
    async def add_annotator(token: str, request: Request):
        check_admin(token)
        name = (await form(request)).get("name", "").strip()
        if not name or len(name) > 100 or name.startswith(RESERVED):
            raise Refused(422, f"an annotator's name is 1 to 100 characters and does not start with {', '.join(RESERVED)}")
        store.add_annotator(name)
        store.reinstate(name)  # a revoked name added again: a new token
        if on_annotators:
            on_annotators()
        return RedirectResponse(f"/admin/{token}#by-annotator", status_code=303)

    @app.post("/admin/{token}/revoke")
    async def revoke(token: str, request: Request):
        check_admin(token)
        store.revoke((await form(request)).get("name", ""))
        if on_annotators:
            on_annotators()
        return RedirectResponse(f"/admin/{token}#by-annotator", status_code=303)

    @app.get("/admin/{token}/notes.jsonl")
    def notes(token: str):
        from annotate.export import notes_lines

        check_admin(token)
        return PlainTextResponse("".join(notes_lines(store)), media_type="application/jsonl",
                                 headers={"Content-Disposition": 'attachment; filename="notes.jsonl"'})

    @app.get("/admin/{token}/export.jsonl")
    def export(token: str):
        from annotate.export import export_lines

        check_admin(token)
        return PlainTextResponse("".join(export_lines(store)), media_type="application/jsonl",
                                 headers={"Content-Disposition": 'attachment; filename="annotations.jsonl"'})

    return app
