"""Detect: score pairs of sentences with the shipped contradiction model (models/contradiction), given the QAs
the loop already has (no sentence is parsed twice). Two sources of pairs:
- within one text, with no generator: two sentences whose QAs align (the same predicate and role); the later
  sentence is the one judged (`a`), the earlier one stays the reference (`b`);
- triggered: a sentence and the alternative the model wrote for one of its QAs (trigger.py).

Every pair is scored on the exact path (no gate: the QAs are there anyway)."""
from __future__ import annotations

from dataclasses import dataclass

from models.qa_alignment import align
from models.text import as_tokens
from models.self_contradiction.texts import AnalysedText


def within_text_pairs(text: AnalysedText) -> list[dict]:
    """Pair items (see ContradictionScorer.score) for the sentences of one text whose QAs align."""
    out = []
    for j in range(len(text.sentences)):
        for i in range(j):
            if align(text.qas[j], text.qas[i], text.sentences[j], text.sentences[i]):
                out.append({"id": f"{text.id}/s{j}-s{i}", "kind": "within", "text_id": text.id, "sentence": j,
                            "other": i, "prompt": text.prompt, "prefix": text.prefix(j),
                            "a_tokens": text.sentences[j], "b_tokens": text.sentences[i],
                            "qas_a": text.qas[j], "qas_b": text.qas[i]})
    return out


@dataclass
class ContradictionScorer:
    """The contradiction model and what its features need: the entailment scorer and the sentence embedder."""
    model: object           # models.contradiction.ContradictionModel or ContradictionEnsemble
    entailment: object
    embedder: object
    threshold: float | None = None

    def __post_init__(self):
        if self.threshold is None:
            self.threshold = float(self.model.threshold)

    def score(self, items: list[dict]) -> list[dict]:
        """items: {id, prompt, prefix, a_tokens, b_tokens, qas_a, qas_b, ...} -> the same dicts with
        p_contradiction (None when the pair cannot be scored), decision, basis, status, messages and the
        conflicting aligned QA pairs (`conflicts`, when flagged)."""
        from models.contradiction import add_encoder_scores, analyse_pair, encoder_probs, similarities

        if not items:
            return []
        sims = similarities(self.embedder, [" ".join(x["a_tokens"]) for x in items],
                            [" ".join(x["b_tokens"]) for x in items])
        rows = [analyse_pair(x["id"], list(x["a_tokens"]), list(x["b_tokens"]), as_tokens(x.get("prefix") or ""),
                             x["qas_a"], x["qas_b"], self.entailment, sim) for x, sim in zip(items, sims)]
        if self.model.encoder is not None:
            enc_pairs = [{"prompt": x.get("prompt") or "", "group": x.get("prompt") or "", "prefix": x.get("prefix") or "",
                          "a": " ".join(x["a_tokens"]), "b": " ".join(x["b_tokens"])} for x in items]
            add_encoder_scores(rows, encoder_probs(rows, enc_pairs, self.model.encoder))
        probs = self.model.probabilities(rows)
        out = []
        for x, row, p in zip(items, rows, probs):
            flagged = p is not None and p >= self.threshold
            out.append({**x, "status": row["status"], "messages": row["messages"], "p_contradiction": p,
                        "decision": None if p is None else bool(flagged), "basis": self.model.basis(row),
                        "conflicts": row.get("conflicts", []) if flagged else [],
                        "encoder_p": row.get("encoder_p")})
        return out
