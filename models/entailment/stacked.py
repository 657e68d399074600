"""The stacked scorer: logistic regression over the lexical, context, structure and similarity
features of a QA (models.entailment.features / structure), optionally a neural score."""
from __future__ import annotations

from typing import Sequence

from models.entailment.features import (CONTEXT_FEATURES, STACK_FEATURES, add_context_features, as_words,
                                        lexical_features, question_verb_key, split_hypothesis)
from models.entailment.contradiction_signal import FEATURES as SIGNAL_FEATURES
from models.entailment.scorers import Scorer, premise_groups
from models.entailment.structure import PRONOUN_FEATURES, SIMILARITY_FEATURES
from models.memory import release_free_memory


def score_qas(scorer, premise, hypotheses: Sequence[str], answers: Sequence[str], keys: Sequence) -> list[float]:
    """scorer.score with each hypothesis's predicate occurrence (keys), for the scorers that read the
    other QAs of the same predicate (the stacked one's ctx_* features); the others ignore it."""
    kw = {"predicate_keys": list(keys)} if isinstance(scorer, StackedScorer) else {}
    return [float(x) for x in scorer.score(premise, list(hypotheses), answers=list(answers), **kw)]


def predicate_keys(examples: Sequence[dict]) -> list | None:
    """The predicate occurrence of each benchmark example (sentence_index, predicate_index), or
    None when the examples do not say (the scorer then reads the questions' verbs)."""
    if all("sentence_index" in e and "predicate_index" in e for e in examples):
        return [(e["sentence_index"], e["predicate_index"]) for e in examples]
    return None


class StackedScorer(Scorer):
    """Logistic regression over the lexical signals, optionally the MiniLM embedding similarity and
    a neural scorer's P(supported) (as a logit). Its folder: entailment_format.json (family
    "stacked", features, weights) and, when a neural score is used, the neural checkpoint in
    `neural/`."""
    name = family = "stacked"

    def __init__(self, features: Sequence[str], coef: Sequence[float] | None = None, intercept: float = 0.0,
                 mean: Sequence[float] | None = None, std: Sequence[float] | None = None,
                 neural: Scorer | None = None, embedding: Scorer | None = None, threshold: float | None = None,
                 structure=None, contradiction=None):
        super().__init__()
        unknown = set(features) - set(STACK_FEATURES)
        if unknown:
            raise ValueError(f"unknown stacked features {sorted(unknown)}; known: {STACK_FEATURES}")
        self.features = list(features)
        if "neural" in self.features and neural is None:
            raise ValueError("stacked feature 'neural' needs a neural scorer")
        if "embedding" in self.features and embedding is None:
            raise ValueError("stacked feature 'embedding' needs an embedding scorer")
        if any(f.startswith(("struct_", "pron_struct_")) for f in self.features) and structure is None:
            raise ValueError("stacked struct_* features need the reference parser (models.entailment.structure)")
        if {*SIMILARITY_FEATURES, *(f"pron_{f}" for f in SIMILARITY_FEATURES)} & set(self.features) and \
                structure.embedder is None:
            raise ValueError("stacked struct_*_sim features need the reference structure's sentence embedder")
        wants = [f for f in SIGNAL_FEATURES if f in self.features]
        if wants and contradiction is None:
            raise ValueError(f"stacked feature {wants[0]!r} needs the contradiction pair encoder "
                             "(models.entailment.contradiction_signal)")
        self.structure, self.contradiction = structure, contradiction
        self.coef, self.intercept = list(coef or [0.0] * len(self.features)), float(intercept)
        self.mean = list(mean or [0.0] * len(self.features))
        self.std = list(std or [1.0] * len(self.features))
        self.neural, self.embedding, self.threshold = neural, embedding, threshold
        self.component_scores: dict[str, list[float]] = {}

    def feature_rows(self, premise, hypotheses, answers=None, neural_scores=None, predicates=None,
                     predicate_keys=None) -> list[list[float]]:
        """One row of self.features per hypothesis. predicate_keys: which hypotheses ask about the
        same predicate occurrence (any hashable, one per hypothesis); None: the questions' verbs."""
        import math

        words = as_words(premise)
        answers = answers if answers is not None else [None] * len(hypotheses)
        qa = [split_hypothesis(h, a) for h, a in zip(hypotheses, answers)]
        rows = [lexical_features(words, q, a, predicate=(predicates or [None] * len(hypotheses))[i])
                for i, (q, a) in enumerate(qa)]
        if set(CONTEXT_FEATURES) & set(self.features):
            keys = predicate_keys if predicate_keys is not None else [question_verb_key(q) for q, _ in qa]
            if len(keys) != len(rows):
                raise ValueError(f"{len(keys)} predicate keys for {len(rows)} hypotheses")
            add_context_features(rows, keys)
        if "embedding" in self.features:
            for r, s in zip(rows, self.embedding.score(premise, hypotheses, answers)):
                r["embedding"] = s
        if self.structure is not None:  # the reference parsed once (cached), each QA checked against its QAs
            for r, f in zip(rows, self.structure.features_many(words, [q for q, _ in qa], [a for _, a in qa])):
                r.update(f)
                # a reference without predicates, or a question that is no template: lexical features decide
                self.stats["structure_fallback_qas"] += int(f["struct_fallback"])
            for k, v in self.structure.stats.items():  # running totals of the structure (set, not added)
                self.stats[f"structure_{k}"] = v
            for r in rows:
                for f in PRONOUN_FEATURES:
                    r[f] = r["answer_pronoun"] * r[f[len("pron_"):]]
        if any(f in self.features for f in SIGNAL_FEATURES):
            for r, f in zip(rows, self.contradiction.features(words, hypotheses, "ctr_max" in self.features)):
                r.update(f)
            self.stats["contradiction_pairs"] = self.contradiction.pairs_scored
        if "neural" in self.features:
            ns = neural_scores if neural_scores is not None else self.neural.score(premise, hypotheses, answers)
            for r, s in zip(rows, ns):
                s = min(max(s, 1e-4), 1 - 1e-4)
                r["neural"] = math.log(s / (1 - s))
        return [[r[f] for f in self.features] for r in rows]

    def probs(self, rows: list[list[float]]) -> list[float]:
        import math

        out = []
        for r in rows:
            z = self.intercept + sum(c * (x - m) / s for c, x, m, s in zip(self.coef, r, self.mean, self.std))
            out.append(1.0 / (1.0 + math.exp(-max(min(z, 50), -50))))
        return out

    def score(self, premise, hypotheses, answers=None, predicate_keys=None):
        """P(supported) of each hypothesis. Score all QAs of a text in one call: the ctx_* features
        read the other QAs of the same predicate (predicate_keys, see feature_rows)."""
        rows = self.feature_rows(premise, hypotheses, answers, predicate_keys=predicate_keys)
        # the signals' own scores, so one evaluation also reports the neural model alone
        for name in ("neural", "embedding"):
            if name in self.features:
                j = self.features.index(name)
                vals = [r[j] for r in rows]
                if name == "neural":
                    import math
                    vals = [1 / (1 + math.exp(-v)) for v in vals]
                self.component_scores.setdefault(name, []).extend(vals)
        return self.probs(rows)

    def score_examples(self, examples, progress: bool = False):
        """As Scorer.score_examples; `component_scores` ends up aligned with `examples`."""
        self.component_scores = {}
        scores = super().score_examples(examples, progress)
        order = [i for idx in premise_groups(examples) for i in idx]
        for name, vals in self.component_scores.items():
            aligned = [0.0] * len(examples)
            for i, v in zip(order, vals):
                aligned[i] = v
            self.component_scores[name] = aligned
        return scores

    def score_group(self, group: list[dict]) -> list[float]:
        out = self.score(group[0]["premise_tokens"], [e["hypothesis"] for e in group],
                         answers=[e.get("answer", "") for e in group], predicate_keys=predicate_keys(group))
        release_free_memory()  # models/memory.py: RSS follows what is alive
        return out

    def format_dict(self) -> dict:
        return {"family": "stacked", "features": self.features, "coef": self.coef, "intercept": self.intercept,
                "mean": self.mean, "std": self.std, "threshold": self.threshold,
                "neural": "neural" if self.neural is not None else None,
                "embedding": self.embedding is not None,
                "structure": self.structure.paths if self.structure is not None else None,
                "contradiction": self.contradiction.paths if any(f in self.features for f in SIGNAL_FEATURES) else None}
