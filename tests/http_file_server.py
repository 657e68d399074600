"""A small HTTP file server on 127.0.0.1 for the download tests: it serves a folder, honours
`Range: bytes=a-[b]` (206, or 416 past the end), records every request, and fails on demand.

`state.faults[url_path]` is a queue: each GET of that path takes the next fault, then the path is
served normally again. Faults: "cut" (the headers promise the whole body, half is sent, the
connection closes), "stall" (half is sent, then nothing until the server shuts down), "corrupt"
(the whole body with its last byte changed), "500".
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlparse


@dataclass
class ServerState:
    root: Path
    requests: list[tuple[str, str, str | None]] = field(default_factory=list)  # (method, path, Range)
    faults: dict[str, list[str]] = field(default_factory=dict)
    shutting_down: threading.Event = field(default_factory=threading.Event)


class _Handler(BaseHTTPRequestHandler):
    state: ServerState  # set on the subclass made per server

    def log_message(self, *args):  # keep the test output clean
        pass

    def do_GET(self):
        path = unquote(urlparse(self.path).path)
        self.state.requests.append(("GET", path, self.headers.get("Range")))
        queue = self.state.faults.get(path) or []
        fault = queue.pop(0) if queue else None
        file = self.state.root / path.lstrip("/")
        if fault == "500":
            return self.send_error(500)
        if not file.is_file():
            return self.send_error(404)
        body = file.read_bytes()
        size = len(body)
        status, start, end = self._range(size)
        if status == 416:
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{size}")
            self.send_header("Content-Length", "0")
            return self.end_headers()
        body = body[start:end]
        if fault == "corrupt":
            body = body[:-1] + bytes([body[-1] ^ 0xFF])
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{size}")
        self.end_headers()
        if fault in ("cut", "stall"):
            self.wfile.write(body[:len(body) // 2])
            self.wfile.flush()
            if fault == "stall":
                self.state.shutting_down.wait(30)
            self.close_connection = True
            return
        self.wfile.write(body)

    def _range(self, size: int) -> tuple[int, int, int]:
        """(status, start, end) for the request's `Range: bytes=a-[b]` header (end exclusive)."""
        header = self.headers.get("Range")
        if not header:
            return 200, 0, size
        first, _, last = header.removeprefix("bytes=").partition("-")
        start, end = int(first), min(int(last) + 1, size) if last else size
        return (416, 0, 0) if start >= size else (206, start, end)


@contextmanager
def run_file_server(root: Path):
    """Serve `root` on a free port: yields (base_url, state)."""
    state = ServerState(Path(root))
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("Handler", (_Handler,), {"state": state}))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", state
    finally:
        state.shutting_down.set()  # lets stalled handlers return
        server.shutdown()
        server.server_close()
