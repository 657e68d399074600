"""Any OpenAI-compatible endpoint (vLLM, TGI, llama.cpp's server, Ollama, `transformers serve`, a hosted
API, models/generate/server.py): `/v1/completions` for a base model, `/v1/chat/completions` for a chat
model. The key comes from an environment variable (OPENAI_API_KEY unless `api_key_env` names another)
(or from `api_key`, which the config masks like every secret) and is never logged or written: `repr` masks it.

A request that fails (connection refused, timeout, HTTP 429 / 5xx, a body that is not the expected JSON)
is retried with exponential backoff up to `retries` times; then the item gets status `error` and its
reason, and the others go on. At most `concurrency` requests are in flight.
"""
from __future__ import annotations

import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor

import requests

from models.generate.base import Generation, Generator, cut_at_stop, sampling
from models.generate.cache import ResponseCache

log = logging.getLogger(__name__)
RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


class EndpointError(RuntimeError):
    def __init__(self, message: str, retry: bool):
        super().__init__(message)
        self.retry = retry


class OpenAIGenerator(Generator):
    def __init__(self, base_url: str, model: str, api_key_env: str = "OPENAI_API_KEY", api_key: str | None = None,
                 chat: bool = False,
                 timeout: float = 60.0, retries: int = 3, backoff: float = 1.0, concurrency: int = 4,
                 cache_dir: str | None = None, logprobs: bool = True, **settings):
        self.base_url, self.model = str(base_url).rstrip("/"), str(model)
        if not self.base_url.endswith("/v1"):
            self.base_url += "/v1"
        self.name, self.chat = f"openai:{self.model}@{self.base_url}", bool(chat)
        self.api_key_env = api_key_env
        # a key given in the config (generator.api_key=..., masked in .hydra/ and the log by common/secrets.py)
        # wins over the environment variable
        self._key = api_key or os.environ.get(api_key_env or "", "") or None
        self.timeout, self.retries, self.backoff = float(timeout), int(retries), float(backoff)
        self.concurrency = max(1, int(concurrency))
        self.settings = sampling(**settings)
        self.cache = ResponseCache(cache_dir)
        self.logprobs = bool(logprobs)
        self._session = requests.Session()

    def __repr__(self) -> str:  # the key never shows, even masked by length
        return f"OpenAIGenerator({self.base_url!r}, model={self.model!r}, key={'***' if self._key else None})"

    def _headers(self) -> dict:
        return {"Authorization": f"Bearer {self._key}"} if self._key else {}

    def _post(self, path: str, payload: dict) -> dict:
        try:
            r = self._session.post(f"{self.base_url}{path}", json=payload, headers=self._headers(),
                                   timeout=(min(self.timeout, 10.0), self.timeout))
        except requests.Timeout:
            raise EndpointError(f"no answer within {self.timeout:g} s", retry=True)
        except requests.ConnectionError as e:
            raise EndpointError(f"cannot connect to {self.base_url} ({type(e).__name__})", retry=True)
        if r.status_code != 200:
            raise EndpointError(f"HTTP {r.status_code}: {r.text[:200]!r}", retry=r.status_code in RETRY_STATUS)
        try:
            return r.json()
        except ValueError:
            raise EndpointError(f"the answer is not JSON: {r.text[:120]!r}", retry=True)

    def _with_retries(self, call):
        """(value, None, attempts) or (None, reason, attempts) after the last retry."""
        for attempt in range(self.retries + 1):
            try:
                return call(), None, attempt + 1
            except EndpointError as e:
                if not e.retry or attempt == self.retries:
                    return None, str(e), attempt + 1
                time.sleep(min(self.backoff * 2 ** attempt, 30.0))
        return None, "no attempt", 0  # pragma: no cover

    def _complete(self, prompt: str, s) -> str:
        payload = {"model": self.model, "max_tokens": s.max_new_tokens, "temperature": s.temperature,
                   "top_p": s.top_p, "seed": s.seed, **({"stop": list(s.stop)} if s.stop else {})}
        t0 = time.perf_counter()
        if self.chat:
            messages = prompt if isinstance(prompt, list) else [{"role": "user", "content": prompt}]
            body = self._post("/chat/completions", {**payload, "messages": messages})
            get = lambda c: c["message"]["content"]  # noqa: E731
        elif isinstance(prompt, list):
            raise EndpointError(f"{self.model} is used as a base model (chat=false): it takes a string prompt, "
                                "not messages", retry=False)
        else:
            body = self._post("/completions", {**payload, "prompt": prompt})
            get = lambda c: c["text"]  # noqa: E731
        try:
            text = get(body["choices"][0])
        except (KeyError, IndexError, TypeError):
            raise EndpointError(f"malformed answer (no choices[0] text): {str(body)[:120]!r}", retry=True)
        if not isinstance(text, str):
            raise EndpointError(f"malformed answer: the text is {type(text).__name__}", retry=True)
        # the server's count of new tokens; time includes the wait for the server (concurrent requests overlap)
        self.count((body.get("usage") or {}).get("completion_tokens") or 0, time.perf_counter() - t0)
        return cut_at_stop(text, s.stop)

    def _one(self, prompt: str, settings) -> Generation:
        key = ResponseCache.key(self.name + (":chat" if self.chat else ""), prompt, settings.as_dict())
        hit = self.cache.get(key)
        if hit is not None:
            return Generation(hit, cached=True)
        text, error, attempts = self._with_retries(lambda: self._complete(prompt, settings))
        if error is not None:
            log.warning("generation failed after %d attempt(s): %s", attempts, error)
            return Generation(None, status="error", error=error, attempts=attempts)
        self.cache.put(key, text)
        return Generation(text, attempts=attempts)

    def generate(self, prompts: list[str], settings=None) -> list[Generation]:
        settings = settings or self.settings
        with ThreadPoolExecutor(self.concurrency) as pool:
            return list(pool.map(lambda p: self._one(p, settings), prompts))

    def _loglik(self, text: str) -> tuple[float, int] | None:
        """The prompt's token log-probabilities from the legacy completions API (echo, no new token)."""
        body = self._post("/completions", {"model": self.model, "prompt": text, "max_tokens": 0, "echo": True,
                                           "logprobs": 0, "temperature": 0.0})
        try:
            values = [x for x in body["choices"][0]["logprobs"]["token_logprobs"] if x is not None]
        except (KeyError, IndexError, TypeError):
            return None
        return (float(sum(values)), len(values)) if values else None

    def _yes(self, prompt) -> float | None:
        """The server's log-probabilities of the first answer token (top_logprobs), as P(Yes) against P(No)."""
        from models.generate.base import yes_no_share

        payload = {"model": self.model, "max_tokens": 1, "temperature": 0.0}
        if self.chat:
            messages = prompt if isinstance(prompt, list) else [{"role": "user", "content": prompt}]
            body = self._post("/chat/completions", {**payload, "messages": messages, "logprobs": True, "top_logprobs": 20})
            try:
                top = body["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
                return yes_no_share({t["token"]: t["logprob"] for t in top})
            except (KeyError, IndexError, TypeError):
                return None
        body = self._post("/completions", {**payload, "prompt": prompt, "logprobs": 20})
        try:
            return yes_no_share(body["choices"][0]["logprobs"]["top_logprobs"][0])
        except (KeyError, IndexError, TypeError):
            return None

    def yes_probability(self, prompts: list) -> list[float | None]:
        if not self.logprobs:
            return [None] * len(prompts)
        out = []
        for prompt in prompts:
            value, error, _ = self._with_retries(lambda: self._yes(prompt))
            out.append(value if error is None else None)
        return out

    def log_likelihood(self, texts: list[str]) -> list[tuple[float, int] | None]:
        if self.chat or not self.logprobs:
            return [None] * len(texts)
        out = []
        for text in texts:
            key = ResponseCache.key(self.name, text, {}, kind="loglik")
            hit = self.cache.get(key)
            if hit is None:
                value, error, _ = self._with_retries(lambda: self._loglik(text))
                if error is None and value is not None:
                    self.cache.put(key, list(value))
                hit = value
            out.append(tuple(hit) if hit else None)
        return out
