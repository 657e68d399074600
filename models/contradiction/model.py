"""Self-contradiction at the level of facts: two sentences a model wrote in one context -> the QAs
of each (predicate detector + parser) -> the QAs they share a predicate and role on
(models/qa_alignment.py) -> features -> P(contradiction) from a small logistic regression, and the
conflicting QA pairs that explain it. With a pair encoder (models/contradiction/pair_encoder.py), its score of the
whole pair is one more feature (`encoder`, a logit), and a pair whose sentence has no predicate is
still scored, on the encoder alone.

A pair where either sentence is empty or is not in a Latin script gets a status and
`p_contradiction: None`; one with no predicate on a side gets status `no_predicate` and a score only
when the model has an encoder: counted, never dropped. `basis` says which signals a score rests on.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Sequence

import numpy as np

from models.progress import progress
from models.entailment import EmbeddingScorer, load_scorer, score_qas
from models.qa_alignment import align, extract_qas, numbers_conflict, numbers_in, predicates_of
from models.text import as_tokens, script_warnings
from models.parser import load_parser
from models.predicates import PredicateDetector
from models.checkpoint import checkpoint_folder
from models.contradiction.pair_encoder import PairEncoder

FORMAT_FILE = "contradiction.json"
ENCODER_FOLDER = "encoder"
# Features of a pair (all in [0, 1] or small counts); the model and the ablations pick among them.
FEATURES = ("aligned", "shared_predicates", "aligned_numbers_differ", "aligned_names_differ", "aligned_disjoint",
            "anchored_numbers_differ", "anchored_names_differ", "anchored_disjoint", "event_differs",
            "numbers_differ_same_event",
            "aligned_all_same", "aligned_min_support", "min_support_ab", "min_support_ba", "mean_support",
            "sentence_numbers_differ", "sentence_jaccard", "negation_differs", "sentence_similarity",
            "numbers_differ_similar")


def pair_features(tok_a, tok_b, qas_a, qas_b, aligned, sup_a, sup_b, similarity: float) -> dict:
    """The feature dict of one analysed pair (see FEATURES). similarity: the sentence embeddings'
    cosine; numbers that differ between two sentences that say nearly the same thing are the
    strongest cue of a contradiction, between two that say different things the weakest."""
    na, nb = numbers_in(tok_a), numbers_in(tok_b)
    ca = {t.lower() for t in tok_a if t.isalnum()}
    cb = {t.lower() for t in tok_b if t.isalnum()}
    neg = lambda toks: sum(t.lower() in ("not", "n't", "never", "no") for t in toks)  # noqa: E731
    al_support = [min(sup_a[x["a"]], sup_b[x["b"]]) for x in aligned]
    anchored = anchored_conflicts(aligned)
    # the core object of a shared verb differs ("became minister" / "became chancellor"): two events,
    # so their dates or counts may differ without a contradiction
    event_differs = any(x["role"] in ("R1", "R2") and x["relation"] == "disjoint" and not x["numbers_differ"]
                        for x in aligned)
    numbers = numbers_conflict(na, nb)
    return {
        "event_differs": float(event_differs),
        "numbers_differ_same_event": float(numbers and not event_differs),
        "anchored_numbers_differ": float(any(x["numbers_differ"] for x in anchored)),
        "anchored_names_differ": float(any(x["names_differ"] for x in anchored)),
        "anchored_disjoint": float(any(x["relation"] == "disjoint" for x in anchored)),
        "aligned": math.log1p(len(aligned)),
        "shared_predicates": math.log1p(len(predicates_of(qas_a) & predicates_of(qas_b))),
        "aligned_numbers_differ": float(any(x["numbers_differ"] for x in aligned)),
        "aligned_names_differ": float(any(x["names_differ"] for x in aligned)),
        "aligned_disjoint": float(any(x["relation"] == "disjoint" for x in aligned)),
        "aligned_all_same": float(bool(aligned) and all(x["relation"] == "same" for x in aligned)),
        "aligned_min_support": min(al_support, default=1.0),
        "min_support_ab": min(sup_a, default=1.0),
        "min_support_ba": min(sup_b, default=1.0),
        "mean_support": float(np.mean(sup_a + sup_b)) if sup_a + sup_b else 1.0,
        "sentence_numbers_differ": float(numbers),
        "sentence_jaccard": len(ca & cb) / len(ca | cb) if ca | cb else 1.0,
        "negation_differs": float(any(x["negation_differs"] for x in aligned) or neg(tok_a) != neg(tok_b)),
        "sentence_similarity": similarity,
        "numbers_differ_similar": float(numbers) * similarity,
    }


def anchored_conflicts(aligned: list[dict]) -> list[dict]:
    """Aligned QA pairs whose answers differ, on a predicate where another role agrees (same or
    overlapping answer, or a pronoun): the two sentences state the same event and disagree on one
    of its arguments ("succeeded by Laschet" / "succeeded by Kramp-Karrenbauer", both of "she"),
    rather than two events of one verb ("became minister in 1991" / "became chancellor in 2005")."""
    agree: dict[str, set[str]] = {}
    for x in aligned:
        if x["relation"] in ("same", "overlap", "pronoun"):
            agree.setdefault(x["predicate"], set()).add(x["role"])
    return [x for x in aligned if x["relation"] == "disjoint" and agree.get(x["predicate"], set()) - {x["role"]}]


def conflicts(aligned, qas_a, qas_b, sup_a, sup_b) -> list[dict]:
    """The aligned QA pairs whose answers differ, most suspicious first (numbers or names that
    differ, then disjoint answers, then the lower support)."""
    rows = []
    for x in aligned:
        if x["relation"] in ("same", "pronoun"):
            continue
        qa, qb = qas_a[x["a"]], qas_b[x["b"]]
        rows.append({"predicate": x["predicate"], "role": x["role"], "relation": x["relation"],
                     "numbers_differ": x["numbers_differ"], "names_differ": x["names_differ"],
                     "a": {"question": qa["question"], "answer": qa["answer"], "span": qa["answer_span"],
                           "support": sup_a[x["a"]]},
                     "b": {"question": qb["question"], "answer": qb["answer"], "span": qb["answer_span"],
                           "support": sup_b[x["b"]]}})
    rows.sort(key=lambda r: (-(r["numbers_differ"] or r["names_differ"]), r["relation"] != "disjoint",
                             min(r["a"]["support"], r["b"]["support"])))
    return rows


def analyse_pairs(pairs: Sequence[dict], detector=None, parser=None, scorer=None, embedder=None) -> list[dict]:
    """Per pair {id, a, b, prefix?}: tokens, QAs of both sentences (batched over all pairs), their
    alignment, supports, similarity, features, conflicts and a status. Without the components
    (detector None): tokens and status only, for a model on the pair encoder alone."""
    toks = [(as_tokens(p["a"]), as_tokens(p["b"]), as_tokens(p.get("prefix") or "")) for p in pairs]
    if detector is None:
        return [pair_status({"id": p["id"], "a_tokens": a, "b_tokens": b, "status": "ok", "messages": [],
                             "features": {}, "conflicts": []}) for p, (a, b, _) in zip(pairs, toks)]
    qas = extract_qas([t for a, b, _ in toks for t in (a, b)], detector, parser)
    sims = similarities(embedder, [" ".join(a) for a, _, _ in toks], [" ".join(b) for _, b, _ in toks])
    return [analyse_pair(p["id"], ta, tb, ctx, qas[2 * i], qas[2 * i + 1], scorer, sims[i])
            for i, (p, (ta, tb, ctx)) in enumerate(progress(list(zip(pairs, toks)), "alignment", unit="pair"))]


def similarities(embedder, texts_a: Sequence[str], texts_b: Sequence[str]) -> list[float]:
    """Cosine of the sentence embeddings (MiniLM, models.entailment.EmbeddingScorer.embed) of each pair."""
    if not texts_a:
        return []
    emb = np.asarray(embedder.embed(list(texts_a) + list(texts_b)), float)
    a, b = emb[:len(texts_a)], emb[len(texts_a):]
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return [float(x) for x in (a * b).sum(1) / np.where(norms > 0, norms, 1.0)]


def entailment_both_ways(scorer, qas_a: Sequence[dict], qas_b: Sequence[dict], tokens_a: Sequence[str],
                         tokens_b: Sequence[str], context: Sequence[str] = ()) -> tuple[list[float], list[float]]:
    """P(supported) of each QA of A against context + B, and of each QA of B against context + A."""
    def score(qas, premise):
        if not qas:
            return []
        hyps = [f"{q['question'].strip()} {q['answer'].strip()}" for q in qas]
        return score_qas(scorer, list(premise), hyps, [q["answer"] for q in qas],
                         [q.get("predicate_index") for q in qas])

    return score(qas_a, [*context, *tokens_b]), score(qas_b, [*context, *tokens_a])


def analyse_pair(pair_id: str, ta: list[str], tb: list[str], ctx: list[str], qa: list[dict], qb: list[dict],
                 scorer, similarity: float) -> dict:
    """One pair of tokenized sentences and their QAs -> the analysed row (status ok, or why not)."""
    row = pair_status({"id": pair_id, "a_tokens": ta, "b_tokens": tb, "qas_a": qa, "qas_b": qb, "status": "ok",
                       "messages": []})
    if row["status"] == "ok" and (not qa or not qb):
        row["status"] = "no_predicate"  # features still computed (nothing aligns): the encoder may score it
        row["messages"] = [f"sentence {'a' if not qa else 'b'} has no QA (no predicate found or parsed)"]
    if row["status"] not in ("ok", "no_predicate"):
        return row
    aligned = align(qa, qb, ta, tb)
    sup_a, sup_b = entailment_both_ways(scorer, qa, qb, ta, tb, ctx)
    row.update(aligned=aligned, support_a=sup_a, support_b=sup_b,
               features=pair_features(ta, tb, qa, qb, aligned, sup_a, sup_b, similarity),
               conflicts=conflicts(aligned, qa, qb, sup_a, sup_b))
    return row


def scorable(row: dict, features) -> bool:
    """Whether a model over `features` scores an analysed row: status ok; also no_predicate when the
    encoder is among them and the row has its score (nothing aligns, the encoder still reads the pair)."""
    return row["status"] == "ok" or (row["status"] == "no_predicate" and "encoder" in features
                                     and "encoder" in row.get("features", {}))


def pair_status(row: dict) -> dict:
    """Status empty_sentence / non_english (no score at all) of a row with a_tokens and b_tokens."""
    ta, tb = row["a_tokens"], row["b_tokens"]
    notes = script_warnings(ta + tb)
    if not ta or not tb:
        row["status"], row["messages"] = "empty_sentence", ["a sentence is empty"]
    elif notes:
        row["status"], row["messages"] = "non_english", notes
    return row


def add_encoder_scores(rows: list[dict], probs: Sequence) -> None:
    """The pair encoder's P(contradiction) of each scorable row (probs in row order), as `encoder_p`
    and the feature `encoder` (its logit, clipped: a logistic regression over logits stays linear
    in the evidence). A list per row (an ensemble's members, models/contradiction/ensemble.py) is kept
    as `encoder_ps`, and `encoder_p` is its mean."""
    for r, p in zip(rows, probs):
        if isinstance(p, (list, tuple)):
            kept = [x for x in p if x is not None]
            if kept and r["status"] in ("ok", "no_predicate"):
                r["encoder_ps"] = [None if x is None else float(x) for x in p]
            p = float(np.mean(kept)) if kept else None
        if p is None or r["status"] not in ("ok", "no_predicate"):
            continue
        r["encoder_p"] = float(p)
        r.setdefault("features", {})["encoder"] = encoder_logit(p)


def encoder_logit(p: float) -> float:
    """The `encoder` feature of a pair encoder's P: its logit, clipped away from 0 and 1."""
    q = min(max(float(p), 1e-6), 1 - 1e-6)
    return math.log(q / (1 - q))


def encoder_probs(rows: list[dict], pairs: Sequence[dict], encoder) -> list[float | None]:
    """The encoder's P(contradiction) of the scorable rows (None for the others), batched."""
    todo = [i for i, r in enumerate(rows) if r["status"] in ("ok", "no_predicate")]
    out: list[float | None] = [None] * len(rows)
    for i, p in zip(todo, encoder.score([pairs[i] for i in todo])):
        out[i] = p
    return out


def gated(row: dict, gate: float | None) -> dict:
    """The row as a gated model scores it: when the encoder's P is under `gate` the pair is not
    parsed, so its alignment features count as their training means (a copy marked `gated`)."""
    if gate is None or row.get("encoder_p") is None or row["encoder_p"] >= gate:
        return row
    return dict(row, gated=True)


def align_passing(rows: list[dict], pairs: Sequence[dict], gate: float, components) -> list[dict]:
    """The QA alignment of the pairs whose encoder P reaches `gate` (rows with encoder scores, from
    analyse_pairs without components); the others are marked gated and never parsed."""
    todo = [i for i, r in enumerate(rows) if r.get("encoder_p") is not None and r["encoder_p"] >= gate]
    out = [gated(r, gate) for r in rows]
    for i, r in zip(todo, analyse_pairs([pairs[i] for i in todo], *components)):
        add_encoder_scores([r], [rows[i].get("encoder_ps") or rows[i]["encoder_p"]])
        out[i] = r
    for r in out:
        if r.get("gated"):
            r["messages"] = r["messages"] + [f"not parsed: encoder P {r['encoder_p']:.3f} under the gate {gate:g}"]
    return out


def load_components(parser: str, detector: str, entailment: str, batch_size: int = 32):
    """(detector, parser, entailment scorer, sentence embedder) from their checkpoints (folders or
    Hub ids); the embedder is MiniLM (models.model_paths)."""
    return (PredicateDetector.from_pretrained(detector, batch_size=batch_size),
            load_parser(parser, batch_size=batch_size), load_scorer(entailment, batch_size=batch_size),
            EmbeddingScorer())


def entailment_only(row: dict) -> float | None:
    """The entailment-classifier baseline: 1 - the lower mean P(supported) of the two directions."""
    if row["status"] != "ok" or "support_a" not in row:
        return None
    return 1.0 - min(float(np.mean(row["support_a"])), float(np.mean(row["support_b"])))


def score_basis(model, row: dict) -> str | None:
    """Which signals a model's score of a row rests on: encoder, alignment, or encoder+alignment (none when unscored)."""
    if not model.scorable(row):
        return None
    if row["status"] == "no_predicate" or row.get("gated") or not model.uses_alignment:
        return "encoder"
    return "encoder+alignment" if model.uses_encoder else "alignment"


class ContradictionModel:
    """Standardised logistic regression over named features, with a decision threshold; saved as
    JSON (contradiction.json) so loading needs no pickle."""

    def __init__(self, features, coef, intercept, mean, std, threshold=0.5, info=None, encoder=None, gate=None):
        self.features, self.threshold, self.info = list(features), float(threshold), dict(info or {})
        # encoder P under which a pair is not parsed (models.contradiction.gated); None: every pair is
        self.gate = None if gate is None else float(gate)
        self.encoder = encoder  # a models.contradiction.pair_encoder.PairEncoder when "encoder" is a feature
        self.coef, self.intercept = np.asarray(coef, float), float(intercept)
        self.mean, self.std = np.asarray(mean, float), np.asarray(std, float)

    def probabilities(self, rows: Sequence[dict]) -> list[float | None]:
        """P(contradiction) of analysed pairs; None for a pair whose status is not ok."""
        out = []
        for r in rows:
            if not self.scorable(r):
                out.append(None)
                continue
            skip = r.get("gated", False)  # the alignment was not run: its features at their means
            x = (np.array([m if skip and f != "encoder" else r["features"][f]
                           for f, m in zip(self.features, self.mean)]) - self.mean) / self.std
            out.append(float(1 / (1 + math.exp(-(x @ self.coef + self.intercept)))))
        return out

    @property
    def uses_encoder(self) -> bool:
        return "encoder" in self.features

    @property
    def uses_alignment(self) -> bool:
        """Whether any feature needs the predicate detector, parser and entailment classifier."""
        return any(f != "encoder" for f in self.features)

    def scorable(self, row: dict) -> bool:
        return scorable(row, self.features)

    def basis(self, row: dict) -> str | None:
        return score_basis(self, row)

    def save(self, folder: str | Path) -> Path:
        """contradiction.json, and the pair encoder (when the model has one) in folder/encoder."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        if self.encoder is not None:
            self.encoder.save_pretrained(folder / ENCODER_FOLDER)
        (folder / FORMAT_FILE).write_text(json.dumps({
            "features": self.features, "coef": self.coef.tolist(), "intercept": self.intercept,
            "mean": self.mean.tolist(), "std": self.std.tolist(), "threshold": self.threshold, "gate": self.gate,
            "info": self.info},
            indent=1))
        return folder

    @classmethod
    def load(cls, folder: str | Path, batch_size: int = 32) -> "ContradictionModel":
        folder = checkpoint_folder(folder)
        path = folder / FORMAT_FILE
        if not path.exists():
            raise FileNotFoundError(f"{folder}: not a contradiction checkpoint (no {FORMAT_FILE}); "
                                    "train one with python -m train.contradiction")
        model = cls(**json.loads(path.read_text()))
        if model.uses_encoder:
            model.encoder = PairEncoder.from_pretrained(folder / ENCODER_FOLDER, batch_size=batch_size,
                                                        bf16=bool(model.info.get("encoder_bf16", False)))
        return model
