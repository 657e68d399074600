"""A zero-shot chat judge for QA entailment, asked only where the trained classifier hesitates: a QA whose
probability lies in a band [lo, hi] around the classifier's threshold gets the judge's P("Yes") instead (one
forward pass, models/generate: LocalGenerator.yes_probability). The judge reads the reference sentences that
share the most content words with the QA, not the whole reference (a 0.5B model on one core: a few hundred
tokens a question). The prompt is conf/chat_prompts/entailment_judge.yaml. Measured on dev, not kept:
benchmarks/entailment_cascade.py and docs/experiments/entailment.md."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from models.entailment.features import content_words
from models.entailment.structure import split_sentences
from models.self_contradiction.texts import detokenize


@dataclass
class EntailmentJudgePrompts:
    system: str
    user: str               # placeholders {evidence}, {question}, {answer}
    sentences: int = 3      # reference sentences shown to the judge

    def __post_init__(self):
        missing = [k for k in ("{evidence}", "{question}", "{answer}") if k not in self.user]
        if missing:
            raise ValueError(f"entailment judge prompt: `user` lacks {', '.join(missing)}")

    def messages(self, premise_tokens: Sequence[str], question: str, answer: str) -> list[dict]:
        evidence = evidence_window(premise_tokens, f"{question} {answer}", self.sentences)
        return [{"role": "system", "content": self.system},
                {"role": "user", "content": self.user.format(evidence=evidence, question=question, answer=answer)}]


def evidence_window(premise_tokens: Sequence[str], hypothesis: str, k: int) -> str:
    """The k reference sentences sharing the most content words with the hypothesis, in reference order
    (ties: the earlier sentence)."""
    sentences = split_sentences(list(premise_tokens))
    want = set(content_words(hypothesis, drop_stopwords=True))
    overlap = [len(want & set(content_words(s, drop_stopwords=True))) for s in sentences]
    keep = sorted(sorted(range(len(sentences)), key=lambda i: (-overlap[i], i))[:k])
    return " ".join(detokenize(sentences[i]) for i in keep)


def cascade(scores: Sequence[float], judged: Sequence[float | None], lo: float, hi: float, judge_threshold: float,
            threshold: float) -> tuple[list[float], list[bool]]:
    """(score, decision) per QA: the classifier's outside [lo, hi] (decision at `threshold`) and where no judge
    answer exists; inside, the judge decides at `judge_threshold` and its P("Yes") ranks the QA within the band
    (score lo + (hi - lo) * P), so that the band's QAs stay between the confident ones."""
    out_s, out_d = [], []
    for s, j in zip(scores, judged):
        if j is not None and lo <= s <= hi and hi > lo:
            out_s.append(lo + (hi - lo) * j)
            out_d.append(j >= judge_threshold)
        else:
            out_s.append(s)
            out_d.append(s >= threshold)
    return out_s, out_d
