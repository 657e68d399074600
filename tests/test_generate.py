"""The generator interface (models/generate): the on-disk response cache, and the OpenAI-compatible client
against a scripted endpoint on 127.0.0.1 that is down, slow, answers malformed JSON or fails once: retried
within a bound, then a status per item while the others go on; bounded concurrency; the key sent, never shown.
The OpenAI-compatible server (models/generate/server.py) over a stub model: its key, its caps, no /docs, and
no start beyond loopback without a key."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from models.generate import OpenAIGenerator, ResponseCache


class Endpoint:
    """A scripted OpenAI-compatible endpoint: `faults[prompt]` is a queue of "500" / "slow" / "malformed" /
    "nochoices" / "400", taken one per request; then the prompt is answered "<prompt> ok"."""

    def __init__(self):
        self.faults: dict[str, list[str]] = {}
        self.requests: list[dict] = []
        self.in_flight = self.max_in_flight = 0
        self.lock = threading.Lock()


@contextmanager
def endpoint_server():
    state = Endpoint()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with state.lock:
                state.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
                state.in_flight += 1
                state.max_in_flight = max(state.max_in_flight, state.in_flight)
            try:
                prompt = body.get("prompt") or body["messages"][-1]["content"]
                queue = state.faults.get(prompt) or []
                fault = queue.pop(0) if queue else None
                time.sleep(0.05)  # long enough for requests to overlap
                if fault == "slow":
                    time.sleep(1.5)
                if fault in ("500", "400"):
                    return self.send_error(int(fault))
                if fault == "malformed":
                    out = b"{not json"
                elif fault == "nochoices":
                    out = b'{"choices": []}'
                elif self.path.endswith("/chat/completions"):
                    out = json.dumps({"choices": [{"message": {"role": "assistant", "content": f"{prompt} chat"}}]}).encode()
                else:
                    out = json.dumps({"choices": [{"text": f"{prompt} ok"}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up on a slow answer, as it should
            finally:
                with state.lock:
                    state.in_flight -= 1

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", state
    finally:
        server.shutdown()
        server.server_close()


def client(url, tmp_path, **kw):
    args = dict(model="m", timeout=0.5, retries=2, backoff=0.01, concurrency=3, cache_dir=str(tmp_path / "cache"),
                max_new_tokens=5)
    return OpenAIGenerator(url, **{**args, **kw})


def test_cache_keys_on_model_prompt_and_settings(tmp_path):
    cache = ResponseCache(tmp_path)
    k = ResponseCache.key("m", "p", {"temperature": 0.0})
    cache.put(k, "answer")
    assert cache.get(k) == "answer" and cache.hits == 1
    assert cache.get(ResponseCache.key("m2", "p", {"temperature": 0.0})) is None
    assert cache.get(ResponseCache.key("m", "p", {"temperature": 1.0})) is None
    assert not list(tmp_path.rglob(".tmp-*"))  # written to a temporary name, then renamed


def test_failures_are_retried_then_reported_and_the_others_go_on(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_KEY", "sk-secret-123")
    with endpoint_server() as (url, state):
        state.faults = {"once": ["500"], "slow": ["slow", "slow", "slow"], "bad": ["malformed"] * 3,
                        "empty": ["nochoices"] * 3, "refused": ["400"]}
        gen = client(url, tmp_path, api_key_env="MY_KEY")
        start = time.perf_counter()
        out = gen.generate(["once", "slow", "bad", "empty", "refused", "fine"])
        assert time.perf_counter() - start < 10  # nothing hangs: 3 attempts of 0.5 s at most per item
        assert [g.status for g in out] == ["ok", "error", "error", "error", "error", "ok"]
        assert out[0].text == "once ok" and out[0].attempts == 2 and out[5].text == "fine ok"
        assert "no answer within" in out[1].error and out[1].attempts == 3
        assert "not JSON" in out[2].error and "no choices" in out[3].error
        assert out[4].attempts == 1 and "HTTP 400" in out[4].error  # a client error is not retried
        assert state.max_in_flight <= 3
        assert {r["auth"] for r in state.requests} == {"Bearer sk-secret-123"}
        assert "sk-secret-123" not in repr(gen) and "***" in repr(gen)
        before = len(state.requests)
        again = gen.generate(["once", "fine", "bad"])  # the successes come from the cache; the failure is asked again
        assert [g.cached for g in again] == [True, True, False] and len(state.requests) == before + 1


def test_chat_models_use_chat_completions(tmp_path):
    with endpoint_server() as (url, state):
        out = client(url, tmp_path, chat=True).generate(["hello"])
        assert out[0].text == "hello chat" and state.requests[0]["path"] == "/v1/chat/completions"
        assert state.requests[0]["body"]["messages"] == [{"role": "user", "content": "hello"}]


def test_an_endpoint_that_is_down_gives_statuses_not_a_hang(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    out = client(f"http://127.0.0.1:{port}", tmp_path, retries=1).generate(["a", "b"])
    assert [g.status for g in out] == ["error", "error"] and "cannot connect" in out[0].error


class StubLM:
    """Stands in for a LocalGenerator behind models/generate/server.py: echoes, counts what it was asked."""
    name, chat = "local:stub", True

    def __init__(self):
        self.asked = []

    def complete(self, prompt, settings):
        self.asked.append(settings.max_new_tokens)
        return "stub answer"


@contextmanager
def model_server(**limits):
    """models.generate.server's app over a stub model, on a free port of 127.0.0.1 (Uvicorn in a thread)."""
    import uvicorn

    from models.generate.server import create_app

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    lm = StubLM()
    server = uvicorn.Server(uvicorn.Config(create_app(lm, **limits), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}", lm
    finally:
        server.should_exit = True
        thread.join(10)


def test_the_model_server_wants_its_key_caps_requests_and_shows_no_docs():
    import requests

    with model_server(api_key="k-123", max_tokens=64, max_prompts=2) as (url, lm):
        for path in ("/docs", "/redoc", "/openapi.json"):
            assert requests.get(url + path, headers={"Authorization": "Bearer k-123"}).status_code == 404
        ask = {"prompt": "hi", "max_tokens": 8}
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "k-123"}):
            r = requests.post(f"{url}/v1/completions", json=ask, headers=headers)
            assert r.status_code == 401 and "stub answer" not in r.text
        assert requests.get(f"{url}/v1/models").status_code == 401
        key = {"Authorization": "Bearer k-123"}
        r = requests.post(f"{url}/v1/completions", json=ask, headers=key)
        assert r.status_code == 200 and r.json()["choices"][0]["text"] == "stub answer"
        for body, said in (({"prompt": "hi", "max_tokens": 65}, "from 0 to 64"),
                           ({"prompt": "hi", "max_tokens": 10**30}, "from 0 to 64"),
                           ({"prompt": ["a", "b", "c"]}, "at most 2"),
                           ({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1000}, "from 0 to 64")):
            path = "/v1/chat/completions" if "messages" in body else "/v1/completions"
            r = requests.post(url + path, json=body, headers=key)
            assert r.status_code == 400 and said in r.text, (body, r.text)
        assert lm.asked == [8]  # nothing refused reached the model
    with model_server(api_key=None, max_tokens=64, max_prompts=2) as (url, lm):  # loopback without a key
        assert requests.post(f"{url}/v1/completions", json={"prompt": ["a", "b"]}).status_code == 200


def test_the_model_server_refuses_to_listen_beyond_loopback_without_a_key():
    """Refused before any model loads: exit 1 and the option to give, no traceback."""
    root = Path(__file__).resolve().parents[1]
    for host in ("0.0.0.0", "192.0.2.1", "example.org"):
        run = subprocess.run([sys.executable, "-m", "models.generate.server", "--host", host, "--port", "1"], cwd=root,
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 1 and "--api-key-env" in run.stderr and "Traceback" not in run.stderr, run.stderr
    run = subprocess.run([sys.executable, "-m", "models.generate.server", "--host", "0.0.0.0", "--api-key-env",
                          "QASEM_TEST_UNSET_KEY"], cwd=root, capture_output=True, text=True, timeout=120,
                         env={k: v for k, v in os.environ.items() if k != "QASEM_TEST_UNSET_KEY"})
    assert run.returncode == 1 and "QASEM_TEST_UNSET_KEY" in run.stderr
