"""ChatProtect's detector as an option beside the trained scorer: the chat model explains whether the two sentences
contradict each other (chain of thought), is then asked to conclude with Yes or No, and the score is P("Yes")
against P("No") for the first token of that conclusion (one forward pass; an OpenAI-compatible server gives it
through `logprobs`). The trained scorer still aligns the QAs, so each pair keeps its conflicts (which argument the
mitigation removes) and its own probability as `p_scorer`. Prompts: conf/chat_prompts/chatprotect.yaml (detect)."""
from __future__ import annotations

from dataclasses import dataclass

from models.self_contradiction.texts import detokenize


@dataclass
class JudgeScorer:
    scorer: object          # ContradictionScorer (models/self_contradiction/detect.py)
    generator: object       # a chat model (models.generate)
    prompts: object         # ChatPrompts
    threshold: float = 0.5
    explain_sampling: object = None  # SamplingSettings of the explanation (greedy by default: one per pair)

    def __post_init__(self):
        if not getattr(self.generator, "chat", False):
            raise ValueError(f"detect=judge needs a chat model; {getattr(self.generator, 'name', self.generator)} is not one")

    def score(self, items: list[dict]) -> list[dict]:
        scored = self.scorer.score(items)
        if not scored:
            return scored
        args = [(x.get("prompt") or "", x.get("prefix") or "", detokenize(x["a_tokens"]), detokenize(x["b_tokens"]))
                for x in scored]
        explained = self.generator.generate([self.prompts.detect_messages(*a) for a in args], self.explain_sampling)
        conclude = [self.prompts.detect_messages(*a, explanation=(g.text or "").strip()) for a, g in zip(args, explained)]
        yes = self.generator.yes_probability(conclude)
        return [{**x, "p_scorer": x.get("p_contradiction"), "p_contradiction": p,
                 "decision": None if p is None else bool(p >= self.threshold), "explanation": g.text}
                for x, g, p in zip(scored, explained, yes)]
