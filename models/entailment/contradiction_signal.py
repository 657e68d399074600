"""The self-contradiction pair encoder as a QA-entailment signal (`ctr_max`): a QA ("question answer")
against the reference sentences nearest to it, the highest P(contradiction); and, from the same pass,
`ctr_sent_sim`, the QA's highest cosine to a reference sentence (the QA read as a statement against the
sentences, where struct_fact_sim reads it against the reference's own QAs).

About a third of the benchmark's unsupported QAs are intrinsic: the words are in the reference, attached
to something else. The pair encoder (models/contradiction/pair_encoder.py, MPNet fine-tuned on 6,000
ChatProtect pairs) reads two statements whole and was trained to say when they cannot both hold; no
lexical or structure feature asks that. Its training pairs never include a QASemConsistency text, so its
score is out of sample for every dev and test QA.

The reference is cut into sentences (models/entailment/structure.split_sentences), each QA is paired with
its `k` nearest sentences by the sentence embedder's cosine (the sentences are embedded once per
reference), and the pair encoder scores them with no context (a = the QA, b = the sentence). Several
encoder folders (the release's two fold encoders) score as one ensemble, the mean of their P.
"""
from __future__ import annotations

from typing import Sequence

from models.entailment.structure import split_sentences

FEATURES = ("ctr_sent_sim", "ctr_max")


class ContradictionSignal:
    def __init__(self, encoder, embedder, k: int = 3, paths: dict | None = None):
        if k < 1:
            raise ValueError(f"contradiction signal k={k}: at least one reference sentence per QA")
        self.encoder, self.embedder, self.k = encoder, embedder, int(k)
        self.paths = dict(paths or {})  # what the stacked checkpoint saves to rebuild it
        self.pairs_scored = 0

    @classmethod
    def from_pretrained(cls, encoders: Sequence[str], embedder: str = "minilm", k: int = 3, batch_size: int = 32,
                        embedder_model=None) -> "ContradictionSignal":
        """encoders: pair-encoder folders or Hub ids (one, or the fold encoders: their mean P);
        embedder: the sentence embedder that picks the nearest sentences (or embedder_model, loaded)."""
        from models.contradiction.pair_encoder import PairEncoder, PairEncoderEnsemble
        from models.entailment.scorers import EmbeddingScorer

        if not encoders:
            raise ValueError("contradiction signal: no pair encoder given (train one with python -m train.contradiction "
                             "+experiment=contradiction_mpnet encoder.stage=fold0)")
        members = [PairEncoder.from_pretrained(e, batch_size=batch_size) for e in encoders]
        encoder = members[0] if len(members) == 1 else PairEncoderEnsemble(members)
        encoder.symmetric = False
        emb = embedder_model if embedder_model is not None else EmbeddingScorer(embedder)
        return cls(encoder, emb, k, {"encoders": [str(e) for e in encoders], "embedder": embedder, "k": int(k)})

    def scores(self, premise: Sequence[str], hypotheses: Sequence[str]) -> list[float]:
        """ctr_max of each hypothesis against the tokenized reference `premise` (0 for an empty reference)."""
        return [f["ctr_max"] for f in self.features(premise, hypotheses)]

    def features(self, premise: Sequence[str], hypotheses: Sequence[str], contradiction: bool = True) -> list[dict]:
        """{ctr_sent_sim, ctr_max} of each hypothesis (0 for an empty reference); contradiction=False skips the
        pair encoder (ctr_max then absent), when only the similarity is asked for."""
        import numpy as np

        sentences = [" ".join(s) for s in split_sentences(list(premise)) if s]
        if not sentences or not hypotheses:
            return [{"ctr_sent_sim": 0.0, "ctr_max": 0.0} for _ in hypotheses]
        sims = np.asarray(self.embedder.embed(list(hypotheses))) @ np.asarray(self.embedder.embed(sentences)).T
        out = [{"ctr_sent_sim": float(row.max())} for row in sims]
        if not contradiction:
            return out
        k = min(self.k, len(sentences))
        nearest = np.argsort(-sims, axis=1, kind="stable")[:, :k]
        pairs = [{"a": h, "b": sentences[j], "prompt": ""} for h, row in zip(hypotheses, nearest) for j in row]
        probs = np.asarray(self.encoder.score(pairs), dtype=float).reshape(len(hypotheses), k)
        self.pairs_scored += len(pairs)
        for f, p in zip(out, probs.max(axis=1).tolist()):
            f["ctr_max"] = p
        return out
