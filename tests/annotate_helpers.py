"""What the annotation tests share: a small task file (one QA whose question is a <script>), a real
`python -m annotate.serve` process on 127.0.0.1, and headless Chromium driven by Playwright (a missing
Chromium or Playwright fails, never skips)."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from browser import CHROMIUM, CHROMIUM_ARGS

ROOT = Path(__file__).resolve().parents[1]
SCRIPT_QUESTION = "<script>window.__pwned = 1</script> who proposed something?"


def task_rows() -> list[dict]:
    """Two benchmark-format responses. The first: 4 QAs on 2 predicates, 4 spans; QA 3's question is markup."""
    gen = [["The", "council", "approved", "a", "budget", "on", "Monday", "."], ["Ruiz", "proposed", "the", "plan", "."]]

    def qa(i, sent, pidx, pred, q, a, span):
        return {"qa_id": i, "sent_id": sent, "predicate_idx": pidx, "predicate_pos": "VERB", "predicate": pred,
                "question": q, "answer_idx": f"{span[0]}-{span[1]}", "answer": a, "annotations": []}

    first = {"source_id": 1, "source": "The council approved a budget on Tuesday . Mayor Ruiz proposed it .".split(),
             "summary": gen, "model": "m", "datasource": "test", "dataset": "cliff",
             "qas": [qa(0, 0, 2, "approved", "who approved something?", "The council", (0, 2)),
                     qa(1, 0, 2, "approved", "what did someone approve?", "a budget", (3, 5)),
                     qa(2, 0, 2, "approved", "when did someone approve something?", "on Monday", (5, 7)),
                     qa(3, 1, 9, "proposed", SCRIPT_QUESTION, "Ruiz", (8, 9))],
             "spans": [{"id": i, "start": s, "end": e, "qaIds": [i], "annotations": []}
                       for i, (s, e) in enumerate([(0, 2), (3, 5), (5, 7), (8, 9)])]}
    second = {**first, "source_id": 2, "qas": first["qas"][:1], "spans": first["spans"][:1]}
    return [first, second]


def write_tasks(path: Path) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in task_rows()))
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serve(tasks: Path, db: Path, *overrides: str, port: int | None = None):
    """A real server process; yields (base URL, links from <db>.links.json, the process). Stopped with SIGTERM
    on the way out, unless the test already stopped it; then `process.output` holds what it printed."""
    port = port or free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, "-m", "annotate.serve", f"tasks={tasks}", f"db={db}", f"port={port}",
                             *overrides], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"the server exited with {proc.returncode}:\n{proc.stdout.read()}")
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.time() > deadline:
                raise AssertionError("the server did not answer /healthz within 60 s")
            time.sleep(0.1)
        yield base, json.loads(Path(f"{db}.links.json").read_text()), proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        proc.output = proc.stdout.read()  # what it printed, for a test to read once it has stopped
        proc.stdout.close()


def export(db: Path, out: Path, *overrides: str) -> list[dict]:
    subprocess.run([sys.executable, "-m", "annotate.export", f"db={db}", f"out={out}", *overrides], cwd=ROOT,
                   check=True, capture_output=True)
    return [json.loads(line) for line in out.read_text().splitlines()]


@contextmanager
def chromium():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("Python Playwright is missing: pip install -e '.[dev]' (or bash scripts/setup.sh)")
    if not (Path(CHROMIUM).is_file() and os.access(CHROMIUM, os.X_OK)):
        pytest.fail(f"Chromium not found at {CHROMIUM}: bash scripts/setup.sh installs it, or set CHROMIUM_PATH")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def new_page(browser, dialogs: list, viewport: dict | None = None):
    page = browser.new_page(viewport=viewport or {"width": 1200, "height": 900})
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.on("pageerror", lambda e: dialogs.append(f"page error: {e}"))
    return page


def all_saved(page):
    # a predicate given as a function: a bare expression is eval-ed in the page, which the app's CSP forbids
    page.wait_for_function("() => document.getElementById('saved').textContent === 'all saved'", timeout=10_000)
