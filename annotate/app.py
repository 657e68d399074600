"""The web app (FastAPI): pages for annotators and the admin, a small JSON API the page saves through.

Routes
  GET  /healthz                       200 once the app serves (the database is open and the items loaded)
  GET  /a/{token}                     the annotator's current item (resume), or the finished page
  GET  /api/{token}/item              the same item as JSON
  POST /api/{token}/label             {"item_id", "kind": check|span|qa, "target", "value": 0|1}: saved at once
  POST /api/{token}/note              {"item_id", "note"}
  POST /api/{token}/done              {"item_id"}: submit the item (twice = once)
  GET  /ext?workerId=&assignmentId=…  Mechanical Turk external question; ?PROLIFIC_PID=&STUDY_ID=… Prolific
  GET  /admin/{admin_token}           progress, agreement so far, export link
  GET  /admin/{admin_token}/export.jsonl
Refusals carry the store's status (403 unknown or revoked token, or an item not assigned to them).
Why FastAPI: maintained, typed request bodies with validation for free, and it runs on Uvicorn, which
stops cleanly on SIGTERM; sync handlers run in its thread pool, the store serialises the writes.
"""
from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Literal
from urllib.parse import urlencode

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from pydantic import BaseModel, Field

from annotate import page
from annotate.store import Refused, Store

STATIC = Path(__file__).resolve().parent / "static"


class Label(BaseModel):
    item_id: str
    kind: Literal["check", "span", "qa"]
    target: str | int
    value: Literal[0, 1]


class Note(BaseModel):
    item_id: str
    note: str = Field(max_length=5000)


class Done(BaseModel):
    item_id: str
    platform_assignment: str | None = Field(default=None, max_length=200)  # MTurk's assignmentId


# where MTurk may send a worker's submit form (the live site and the sandbox); anything else is refused
MTURK_HOSTS = ("https://www.mturk.com", "https://workersandbox.mturk.com")


def mturk_submit_to(value: str | None) -> str | None:
    return value.rstrip("/") if value and value.rstrip("/") in MTURK_HOSTS else None


def make_app(store: Store, qa_check: bool = False, suggestion: str = "after",
             completion_code: str | None = None, gold: dict | None = None) -> FastAPI:
    """gold: {item_id: {qa_id: label}} (annotate.quality.read_gold) for the admin page's gold column."""
    app = FastAPI(title="QASemConsistency annotation", docs_url=None, redoc_url=None, openapi_url=None)
    admin_token = store.meta("admin_token")
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

    @app.get("/a/{token}", response_class=HTMLResponse)
    def annotate(token: str, assignmentId: str | None = None, turkSubmitTo: str | None = None):
        who = store.annotator(token)
        item_id = store.current(who["annotator_id"])
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
        item_id = store.current(who["annotator_id"])
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
        store.save_label(who["annotator_id"], body.item_id, body.kind, str(body.target), body.value)
        return {"saved": True}

    @app.post("/api/{token}/note")
    def note(token: str, body: Note):
        who = store.annotator(token)
        store.save_note(who["annotator_id"], body.item_id, body.note)
        return {"saved": True}

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

    @app.get("/ext")
    def external(request: Request):
        """A platform worker's way in: the worker id names them (the same worker always gets the same
        token back), then their link takes over."""
        q = request.query_params
        if "PROLIFIC_PID" in q:
            platform, worker = "prolific", q["PROLIFIC_PID"]
        elif q.get("assignmentId") == "ASSIGNMENT_ID_NOT_AVAILABLE":  # MTurk's preview: no worker yet
            return HTMLResponse(page.message_page("Preview", "Accept the HIT to start annotating."))
        elif "workerId" in q:
            platform, worker = "mturk", q["workerId"]
        else:
            raise Refused(400, "a platform link needs workerId (Mechanical Turk) or PROLIFIC_PID (Prolific)")
        if not worker or len(worker) > 200:
            raise Refused(400, "bad worker id")
        token = store.add_annotator(f"{platform}:{worker}", platform=platform, worker_id=worker)
        keep = {k: q[k] for k in ("assignmentId", "turkSubmitTo") if platform == "mturk" and q.get(k)}
        return RedirectResponse(f"/a/{token}" + (f"?{urlencode(keep)}" if keep else ""), status_code=303)

    def check_admin(token: str):
        if not secrets.compare_digest(token.encode(), admin_token.encode()):
            raise Refused(403, "unknown admin token")

    @app.get("/admin/{token}", response_class=HTMLResponse)
    def admin(token: str, request: Request):
        from annotate.export import agreement_table

        check_admin(token)
        base = str(request.base_url).rstrip("/")
        links = {a["name"]: f"{base}/a/{a['token']}" for a in store.annotators() if not a["revoked"]}
        from annotate.quality import agreement_with_others, gold_accuracy

        names = {a["annotator_id"]: a["name"] for a in store.annotators()}
        others = {names[a]: q for a, q in agreement_with_others(store).items()}
        on_gold = {names[a]: q for a, q in gold_accuracy(store, gold).items()} if gold else None
        return page.admin_page(store.overview(), store.k, agreement_table(store), admin_token, links, others, on_gold)

    @app.get("/admin/{token}/export.jsonl")
    def export(token: str):
        from annotate.export import export_lines

        check_admin(token)
        return PlainTextResponse("".join(export_lines(store)), media_type="application/jsonl",
                                 headers={"Content-Disposition": 'attachment; filename="annotations.jsonl"'})

    return app
