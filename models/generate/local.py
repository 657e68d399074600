"""A Hugging Face causal LM in this process: a model name (`gemma3_270m`: models/gemma_weights.py), a
folder, a Hub id, or a GGUF file (transformers dequantizes it on every load: convert it once, as
models/gemma_weights.py does, for repeated use). A model whose tokenizer has a chat template is a chat
model (its prompts go through the template) unless `chat` says otherwise; a base model continues the
prompt as given. Greedy at temperature 0; sampled with a per-prompt seed otherwise, so that the same
prompt and settings give the same text in any order or batch.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path

from models.generate.base import Generation, Generator, cut_at_stop, sampling
from models.generate.cache import ResponseCache

log = logging.getLogger(__name__)


def load_causal_lm(model: str):
    """(model, tokenizer, a name for cache keys) from a model name, folder, Hub id or .gguf file."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from models.model_paths import resolve_model_path

    path = resolve_model_path(str(model))
    kwargs = {}
    if str(path).endswith(".gguf"):
        gguf = Path(path)
        path, kwargs = str(gguf.parent), {"gguf_file": gguf.name}
    tok = AutoTokenizer.from_pretrained(path, **kwargs)
    lm = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, **kwargs)
    lm.eval()
    return lm, tok, str(model)


class LocalGenerator(Generator):
    def __init__(self, model: str, chat: bool | None = None, cache_dir: str | None = None, **settings):
        self.lm, self.tokenizer, name = load_causal_lm(model)
        has_template = bool(getattr(self.tokenizer, "chat_template", None))
        self.chat = has_template if chat is None else bool(chat)
        if self.chat and not has_template:
            raise ValueError(f"{model}: chat=true but its tokenizer has no chat template (a base model): it cannot be "
                             "asked for gen_sentence or revise as a chat model")
        self.name = f"local:{name}"
        self.settings = sampling(**settings)
        self.cache = ResponseCache(cache_dir)

    def _input_ids(self, prompt: str):
        if self.chat:
            messages = prompt if isinstance(prompt, list) else [{"role": "user", "content": prompt}]
            return self.tokenizer.apply_chat_template(messages,
                                                      add_generation_prompt=True, return_tensors="pt",
                                                      return_dict=True)["input_ids"]
        if isinstance(prompt, list):
            raise ValueError(f"{self.name} is a base model (no chat template): it takes a string prompt, not messages")
        return self.tokenizer(prompt, return_tensors="pt")["input_ids"]

    def complete(self, prompt: str, settings=None) -> str:
        """One completion, uncached (the server calls this)."""
        import torch

        s = settings or self.settings
        ids = self._input_ids(prompt)
        kwargs = {"do_sample": s.temperature > 0, "max_new_tokens": s.max_new_tokens,
                  "pad_token_id": self.tokenizer.pad_token_id or self.tokenizer.eos_token_id}
        if s.temperature > 0:
            kwargs.update(temperature=s.temperature, top_p=s.top_p)
            torch.manual_seed(s.seed)
        else:
            kwargs.update(temperature=None, top_p=None, top_k=None)
        t0 = time.perf_counter()
        with torch.no_grad():
            out = self.lm.generate(ids, attention_mask=torch.ones_like(ids), **kwargs)
        self.count(out.shape[1] - ids.shape[1], time.perf_counter() - t0)
        return cut_at_stop(self.tokenizer.decode(out[0, ids.shape[1]:], skip_special_tokens=True), s.stop)

    def generate(self, prompts: list[str], settings=None) -> list[Generation]:
        settings = settings or self.settings
        out = []
        for prompt in prompts:
            key = ResponseCache.key(self.name + (":chat" if self.chat else ""), prompt, settings.as_dict())
            hit = self.cache.get(key)
            if hit is not None:
                out.append(Generation(hit, cached=True))
                continue
            try:
                text = self.complete(prompt, settings)
            except Exception as e:  # one bad prompt (too long, a tokenizer error) must not stop the others
                log.warning("generation failed: %s: %s", type(e).__name__, e)
                out.append(Generation(None, status="error", error=f"{type(e).__name__}: {e}", attempts=1))
                continue
            self.cache.put(key, text)
            out.append(Generation(text, attempts=1))
        return out

    def token_logprobs(self, text: str) -> list[float]:
        """Each token's log-probability given the ones before it (the first token, BOS, is not scored)."""
        import torch

        enc = self.tokenizer(text, return_tensors="pt")
        with torch.no_grad():
            logits = self.lm(**enc).logits[0, :-1].float()
        ids = enc["input_ids"][0, 1:]
        return torch.log_softmax(logits, -1).gather(1, ids[:, None])[:, 0].tolist()

    def next_token_logprobs(self, prompt, k: int = 20) -> dict[str, float]:
        """The k likeliest first tokens of the answer to `prompt` with their log-probabilities (the server's
        `top_logprobs`)."""
        import torch

        with torch.no_grad():
            logits = self.lm(self._input_ids(prompt)).logits[0, -1].float()
        top = torch.log_softmax(logits, -1).topk(k)
        return {self.tokenizer.decode([int(i)]): float(v) for v, i in zip(top.values, top.indices)}

    def yes_probability(self, prompts: list) -> list[float | None]:
        from models.generate.base import yes_no_share

        return [yes_no_share(self.next_token_logprobs(p, 50)) for p in prompts]

    def log_likelihood(self, texts: list[str]) -> list[tuple[float, int] | None]:
        out = []
        for text in texts:
            values = self.token_logprobs(text) if text.strip() else []
            out.append((float(sum(values)), len(values)) if values else None)
        return out
