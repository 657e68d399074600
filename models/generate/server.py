"""An OpenAI-compatible HTTP server for a causal LM in this process (models/generate/local.py), enough of the
API for evaluation.self_contradiction and its tests: GET /v1/models, POST /v1/completions (prompt, max_tokens,
temperature, top_p, seed, stop; `echo` with `logprobs` and max_tokens 0 gives the prompt's token
log-probabilities; `logprobs` with max_tokens 1 the first answer token's top log-probabilities, a judge's P("Yes"))
and POST /v1/chat/completions (for a model with a chat template; messages; `logprobs` + `top_logprobs` with
max_tokens 1 as above). One request is computed
at a time. Bound to 127.0.0.1 unless told otherwise.

    python -m models.generate.server --model gemma3_270m --port 8400
    QASEM_SERVER_KEY=... python -m models.generate.server --host 0.0.0.0 --api-key-env QASEM_SERVER_KEY

A key (read from the environment variable --api-key-env names, never from the command line, which `ps`
shows) is required whenever the server listens on anything but loopback; given, every request needs
`Authorization: Bearer <key>` (what models/generate/openai_endpoint.py sends). A request asking for more
than --max-tokens new tokens or more than --max-prompts prompts is refused (400): one request holds the
model for everyone. FastAPI's /docs, /redoc and /openapi.json are off.
"""

# no `from __future__ import annotations` here: FastAPI reads the handlers' annotations (Request) at runtime
import argparse
import ipaddress
import os
import secrets
import sys
import threading
import time
import uuid

from models.generate.base import sampling


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a name: it may resolve to anything
        return False


def create_app(generator, api_key: str | None, max_tokens: int, max_prompts: int):
    """The FastAPI app serving `generator` (a LocalGenerator; each request brings its sampling settings).
    api_key: required of every request when given; max_tokens / max_prompts: the most one request may ask for."""
    from fastapi import Depends, FastAPI, HTTPException, Request
    from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

    bearer = HTTPBearer(auto_error=False)

    def check_key(credentials: HTTPAuthorizationCredentials | None = Depends(bearer)):
        if api_key and not (credentials and secrets.compare_digest(credentials.credentials.encode(), api_key.encode())):
            raise HTTPException(401, "a valid API key is required (Authorization: Bearer <key>)",
                                headers={"WWW-Authenticate": "Bearer"})

    app = FastAPI(title="qasem local LM", docs_url=None, redoc_url=None, openapi_url=None,
                  dependencies=[Depends(check_key)])
    lock = threading.Lock()
    model_id = generator.name.split(":", 1)[-1]

    def tokens_asked(body: dict) -> int | None:
        """The request's max_tokens, refused (400) past this server's cap."""
        n = body.get("max_tokens")
        if n is not None and (not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= max_tokens):
            raise HTTPException(400, f"max_tokens must be an integer from 0 to {max_tokens} (this server's cap)")
        return n

    def settings_of(body: dict):
        stop = body.get("stop") or ()
        return sampling(max_new_tokens=tokens_asked(body) or 16, temperature=body.get("temperature") or 0.0,
                        top_p=body.get("top_p") or 1.0, seed=body.get("seed") or 0,
                        stop=(stop,) if isinstance(stop, str) else stop)

    def run(prompt, body: dict) -> str:  # a string, or chat messages
        with lock:
            return generator.complete(prompt, settings_of(body))

    async def json_body(request: Request) -> dict:
        try:
            body = await request.json()
        except ValueError:
            raise HTTPException(400, "the body is not JSON")
        if not isinstance(body, dict):
            raise HTTPException(400, "the body must be a JSON object")
        return body

    @app.get("/v1/models")
    def models():
        return {"object": "list", "data": [{"id": model_id, "object": "model", "owned_by": "local"}]}

    @app.post("/v1/completions")
    async def completions(request: Request):
        body = await json_body(request)
        prompt = body.get("prompt")
        prompts = [prompt] if isinstance(prompt, str) else prompt
        if not isinstance(prompts, list) or not prompts or not all(isinstance(p, str) for p in prompts):
            raise HTTPException(400, "prompt must be a string or a list of strings")
        if len(prompts) > max_prompts:
            raise HTTPException(400, f"{len(prompts)} prompts: this server takes at most {max_prompts} a request")
        tokens_asked(body)
        choices = []
        for i, p in enumerate(prompts):
            if body.get("echo") and not body.get("max_tokens"):
                with lock:
                    values = generator.token_logprobs(p)
                choices.append({"index": i, "text": p, "finish_reason": "length",
                                "logprobs": {"token_logprobs": [None, *values]}})
            elif body.get("logprobs") and body.get("max_tokens") == 1:  # a judge: the first token's top log-probabilities
                with lock:
                    top = generator.next_token_logprobs(p, max(1, min(int(body["logprobs"]), 50)))
                choices.append({"index": i, "text": max(top, key=top.get), "finish_reason": "length",
                                "logprobs": {"tokens": [max(top, key=top.get)], "top_logprobs": [top]}})
            else:
                choices.append({"index": i, "text": run(p, body), "finish_reason": "stop", "logprobs": None})
        return {"id": f"cmpl-{uuid.uuid4().hex}", "object": "text_completion", "created": int(time.time()),
                "model": model_id, "choices": choices}

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        body = await json_body(request)
        if not generator.chat:
            raise HTTPException(400, f"{model_id} is a base model without a chat template: use /v1/completions")
        messages = body.get("messages") or []
        if not all(isinstance(m, dict) and isinstance(m.get("content"), str) and m.get("role") in
                   ("system", "user", "assistant") for m in messages) or not any(m["role"] == "user" for m in messages):
            raise HTTPException(400, "messages must be {role: system|user|assistant, content: string} with a user message")
        messages = [{"role": m["role"], "content": m["content"]} for m in messages]
        tokens_asked(body)
        if body.get("logprobs") and body.get("max_tokens") == 1:  # a judge: the first token's top log-probabilities
            with lock:
                top = generator.next_token_logprobs(messages, max(1, min(int(body.get("top_logprobs") or 5), 50)))
            best = max(top, key=top.get)
            return {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
                    "model": model_id, "choices": [{"index": 0, "finish_reason": "length",
                                                    "message": {"role": "assistant", "content": best},
                                                    "logprobs": {"content": [{"token": best, "logprob": top[best],
                                                        "top_logprobs": [{"token": t, "logprob": v} for t, v in top.items()]}]}}]}
        text = run(messages, body)
        return {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
                "model": model_id,
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}]}

    return app


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description="Serve a causal LM with an OpenAI-compatible API")
    parser.add_argument("--model", default="gemma3_270m", help="a model name, folder, Hub id or .gguf file")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8400)
    parser.add_argument("--chat", choices=["auto", "true", "false"], default="auto")
    parser.add_argument("--api-key-env", default=None,
                        help="the environment variable holding the API key; required when --host is not loopback")
    parser.add_argument("--max-tokens", type=int, default=1024, help="the most new tokens one request may ask for")
    parser.add_argument("--max-prompts", type=int, default=16, help="the most prompts one completions request may hold")
    args = parser.parse_args(argv)
    api_key = os.environ.get(args.api_key_env, "") if args.api_key_env else ""
    if args.api_key_env and not api_key:
        sys.exit(f"--api-key-env {args.api_key_env}: that environment variable is empty or unset")
    if not api_key and not is_loopback(args.host):
        sys.exit(f"--host {args.host} is reachable from other machines: give a key with --api-key-env NAME "
                 "(the name of an environment variable holding it), or listen on 127.0.0.1")
    import uvicorn

    from models.generate.local import LocalGenerator

    chat = None if args.chat == "auto" else args.chat == "true"
    app = create_app(LocalGenerator(args.model, chat=chat), api_key=api_key or None, max_tokens=args.max_tokens,
                     max_prompts=args.max_prompts)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
