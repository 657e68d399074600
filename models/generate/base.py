"""What every generator gives: `generate(prompts) -> [Generation]` in prompt order, one status per item
(an item that fails never stops the others), `chat` (instruction prompts, else a plain completion), and
`log_likelihood(texts)` when the model exposes token log-probabilities (fluency), else None per text.

A prompt is a string: a base model continues it; a chat model gets it as the user's message. A chat model
also takes a list of messages ({"role", "content"}: a system prompt, demonstrations, the request).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class SamplingSettings:
    """Part of every cache key: the same prompt under other settings is another response."""
    max_new_tokens: int = 48
    temperature: float = 0.0  # 0: greedy
    top_p: float = 1.0
    seed: int = 0
    stop: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        return {**asdict(self), "stop": list(self.stop)}


@dataclass
class Generation:
    text: str | None            # None when the item failed
    status: str = "ok"           # ok | error (after the retries)
    error: str | None = None
    cached: bool = False
    attempts: int = 0


class Generator:
    """The interface (OpenAIGenerator, LocalGenerator)."""
    name: str = "generator"
    chat: bool = False
    settings: SamplingSettings = SamplingSettings()
    usage: dict  # {"requests", "new_tokens", "seconds", "tokens_per_second"} of the answers not taken from the cache

    def count(self, new_tokens: int, seconds: float) -> None:
        u = self.__dict__.setdefault("usage", {"requests": 0, "new_tokens": 0, "seconds": 0.0, "tokens_per_second": None})
        u["requests"] += 1
        u["new_tokens"] += int(new_tokens)
        u["seconds"] = round(u["seconds"] + seconds, 3)
        u["tokens_per_second"] = round(u["new_tokens"] / u["seconds"], 3) if u["seconds"] > 0 else None

    def generate(self, prompts: list[str], settings: SamplingSettings | None = None) -> list[Generation]:
        """One Generation per prompt, in order; `settings` replaces the generator's own for this call."""
        raise NotImplementedError  # pragma: no cover - interface

    def log_likelihood(self, texts: list[str]) -> list[tuple[float, int] | None]:
        """(sum of token log-probabilities, tokens scored) of each text, or None where the model gives none."""
        return [None] * len(texts)

    def yes_probability(self, prompts: list) -> list[float | None]:
        """P("Yes") / (P("Yes") + P("No")) for the first token of the answer to each prompt (a judge: one forward
        pass, no generation), or None where the model gives no token probabilities."""
        return [None] * len(prompts)


def yes_no_share(logprobs: dict[str, float]) -> float | None:
    """P(yes) / (P(yes) + P(no)) from {token: log-probability}, over the spellings of each word ("Yes", " yes")."""
    import math

    yes = sum(math.exp(v) for k, v in logprobs.items() if k.strip().lower() == "yes")
    no = sum(math.exp(v) for k, v in logprobs.items() if k.strip().lower() == "no")
    return yes / (yes + no) if yes + no > 0 else None


def sampling(max_new_tokens=48, temperature=0.0, top_p=1.0, seed=0, stop=()) -> SamplingSettings:
    """SamplingSettings from config values (a stop list from YAML becomes a tuple)."""
    return SamplingSettings(int(max_new_tokens), float(temperature), float(top_p), int(seed),
                            tuple(str(s) for s in (stop or ())))


def cut_at_stop(text: str, stop) -> str:
    """`text` up to the first stop string (servers that ignore `stop` are cut the same way here)."""
    cuts = [text.find(s) for s in stop or () if s and s in text]
    return text[:min(cuts)] if cuts else text
