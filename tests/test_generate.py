"""The generator interface (models/generate): the on-disk response cache, and the OpenAI-compatible client
against a scripted endpoint on 127.0.0.1 that is down, slow, answers malformed JSON or fails once: retried
within a bound, then a status per item while the others go on; bounded concurrency; the key sent, never shown."""
from __future__ import annotations

import json
import socket
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

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
