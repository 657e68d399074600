"""What every response and every write of the annotation app goes through (pure ASGI middleware, so the
saves pay no extra task or thread): the security headers, and the refusal of a cross-origin write.

Starlette has neither: its CORSMiddleware only answers preflights, and a plain HTML form (the admin's add
and revoke) is posted cross-origin without one. The request body's limit is Starlette's own
(FastAPI(max_body_size=...), a 413 before the body is read).
"""
from __future__ import annotations

from urllib.parse import urlsplit

from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# a label, a note (5,000 characters) or a submit is a few kB: a larger body is refused (413) before it is read
MAX_BODY = 1 << 20


def content_security_policy(frame_ancestors: list[str], form_targets: list[str]) -> str:
    """Scripts, styles and requests from the app only; no plugin, no <base>; framed only by `frame_ancestors`
    (none unless the campaign is on MTurk, whose worker site frames the page); forms posted to the app and
    to `form_targets` (MTurk's externalSubmit)."""
    return "; ".join([
        "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self'", "connect-src 'self'",
        "base-uri 'none'", "form-action " + " ".join(["'self'", *form_targets]),
        "frame-ancestors " + (" ".join(frame_ancestors) or "'none'"),
    ])


class SecurityHeaders:
    """Every response: the CSP, no MIME sniffing, no Referer (the URLs hold tokens) and no caching (the pages
    show a person's labels; a shared machine's cache must not keep them)."""

    def __init__(self, app: ASGIApp, csp: str):
        self.app = app
        self.headers = {"Content-Security-Policy": csp, "X-Content-Type-Options": "nosniff",
                        "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in self.headers.items():
                    headers[name] = value
            await send(message)

        await self.app(scope, receive, send_with_headers)


class SameOriginWrites:
    """A POST (or any write) that a browser sends from another site's page is refused (403) before it is
    routed: the browser says where it comes from in Sec-Fetch-Site, or in Origin where it is older. A client
    that sends neither is not a browser page (a script, the load benchmark) and cannot be made to post by
    one; it still needs the token in the URL."""

    def __init__(self, app: ASGIApp, public_url: str):
        self.app = app
        self.public_origin = origin_of(public_url)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] not in ("GET", "HEAD", "OPTIONS"):
            headers = Headers(scope=scope)
            site, origin = headers.get("sec-fetch-site"), headers.get("origin")
            if site is not None:
                same = site in ("same-origin", "none")  # none: typed by the user, not sent by a page
            elif origin is not None:
                scheme = scope.get("scheme", "http")
                same = origin in (self.public_origin, f"{scheme}://{headers.get('host', '')}")
            else:
                same = True
            if not same:
                response = PlainTextResponse("refused: a write from another site's page", status_code=403)
                return await response(scope, receive, send)
        await self.app(scope, receive, send)


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"
