"""Model-free lexical signals for QA entailment: word normalisation, and the features the stacked
scorer (models.entailment.StackedScorer) regresses on.

`lexical_features(premise_words, question, answer, predicate)` returns one value per name in
STACK_FEATURES except the two that come from models ("embedding": MiniLM similarity, "neural": a
trained scorer's logit), which the stacked scorer adds itself.
"""
from __future__ import annotations

import re
import string
from typing import Sequence

from models.parser.question_slots import parse_question, verb_word

_PUNCT = set(string.punctuation) | {"``", "''", "--", "…", "“", "”", "’", "‘"}
STOPWORDS = frozenset(
    "a an the of to in on at for by with from and or but as is are was were be been being 's "
    "it its this that these those he she they his her their them him i we you".split())

STACK_FEATURES = ("lex_raw", "lex_raw_all", "lex_norm", "lex_content", "answer_phrase", "question_cov",
                  "predicate_near_answer", "answer_len", "digits_cov", "caps_cov", "sent_answer_cov", "sent_joint",
                  "q_stem_cov", "q_long_cov", "q_bigram_cov", "answer_pronoun", "embedding", "neural",
                  # the reference's own QAs (models/entailment/structure.py)
                  "struct_pred_in_ref", "struct_role_in_ref", "struct_role_match", "struct_role_conflict",
                  "struct_numbers_conflict", "struct_answer_in_args", "struct_answer_elsewhere", "struct_fallback",
                  "struct_fact_sim", "struct_pred_sim",
                  # the same for QAs answered by a lone pronoun (structure.PRONOUN_FEATURES)
                  "pron_struct_pred_in_ref", "pron_struct_role_in_ref", "pron_struct_role_match",
                  "pron_struct_role_conflict", "pron_struct_numbers_conflict", "pron_struct_answer_in_args",
                  "pron_struct_answer_elsewhere", "pron_struct_fact_sim", "pron_struct_pred_sim",
                  # the other QAs of the same predicate (add_context_features)
                  "ctx_lex_content", "ctx_lex_raw",
                  # the self-contradiction pair encoder against the nearest reference sentences (contradiction_signal.py)
                  "ctr_sent_sim", "ctr_max")
# ctx_X: the mean of X over the other QAs of the same predicate occurrence in the same text
CONTEXT_FEATURES = ("ctx_lex_content", "ctx_lex_raw")


# ---------------------------------------------------------------------------- text utilities
def as_words(premise) -> list[str]:
    if isinstance(premise, str):
        return premise.split()
    return [str(t) for t in premise]


def norm_word(w: str) -> str:
    return w.lower().strip(string.punctuation + "“”’‘")


def content_words(text_or_tokens, drop_stopwords: bool = False) -> list[str]:
    words = text_or_tokens.split() if isinstance(text_or_tokens, str) else list(text_or_tokens)
    out = []
    for w in words:
        # split hyphenated / glued punctuation the way the references are tokenized ("Seung-won")
        for piece in re.split(r"[\s\-–—/]+", w):
            n = norm_word(piece)
            if n and n not in _PUNCT and not (drop_stopwords and n in STOPWORDS):
                out.append(n)
    return out


def split_hypothesis(hypothesis: str, answer: str | None) -> tuple[str, str]:
    """(question, answer) from "question answer" (the question ends at its '?')."""
    if answer and hypothesis.endswith(answer):
        return hypothesis[: len(hypothesis) - len(answer)].strip(), answer
    q, sep, a = hypothesis.partition("?")
    return (q + sep).strip(), (a.strip() or hypothesis)


def question_verb_key(question: str):
    """The predicate a QA-SRL question asks about, when the caller gives none: the first three
    letters of its verb ("says" / "say" / "saying" agree; an irregular "said" does not), None for
    a question that is no template (it then has no siblings)."""
    parsed = parse_question(question)
    return (verb_word(parsed.slots) if parsed else "")[:3] or None


def group_indices(keys: Sequence) -> dict:
    """key -> the indices holding it, in first-seen order."""
    out: dict = {}
    for i, k in enumerate(keys):
        out.setdefault(k, []).append(i)
    return out


def add_context_features(rows: list[dict], keys: Sequence) -> None:
    """ctx_X = the mean of X over the other rows with the same predicate key: the QAs of one
    predicate tend to be supported or not together (the event is in the reference, or it is not).
    A row alone with its predicate (or with key None) gets its own value."""
    for members in group_indices([("solo", i) if k is None else k for i, k in enumerate(keys)]).values():
        for i in members:
            others = [j for j in members if j != i] or [i]
            for name in CONTEXT_FEATURES:
                base = name[len("ctx_"):]
                rows[i][name] = sum(rows[j][base] for j in others) / len(others)


# ---------------------------------------------------------------------------- signals
def _longest_run(words: list[str], vocab_ngrams: set[tuple]) -> int:
    """Longest contiguous run of `words` that occurs verbatim (as an n-gram) in the premise."""
    best = 0
    for i in range(len(words)):
        for j in range(len(words), i + best, -1):
            if tuple(words[i:j]) in vocab_ngrams:
                best = j - i
                break
    return best


def lexical_features(premise_words: list[str], question: str, answer: str, predicate: str | None = None) -> dict:
    """Cheap, model-free signals of whether the answer (and its relation) is in the premise."""
    low = [w.lower() for w in premise_words]
    vocab_raw = set(low)
    norm = [w for w in (norm_word(x) for x in premise_words)]
    vocab_norm = set(content_words(premise_words))
    a_raw = [w.lower() for w in answer.split()] or [""]
    a_norm = content_words(answer) or [""]
    a_content = content_words(answer, drop_stopwords=True) or a_norm
    q_content = [w for w in content_words(question, drop_stopwords=True)
                 if w not in {"who", "what", "when", "where", "why", "how", "whom", "which", "someone",
                              "something", "somewhere", "do", "does", "did", "much", "many", "long"}]
    raw_cov = sum(w in vocab_raw for w in a_raw) / len(a_raw)
    # the longest verbatim piece of the answer in the premise (n-grams up to the answer length)
    n = min(len(a_norm), 12)
    grams = {tuple(norm[i:i + k]) for k in range(1, n + 1) for i in range(len(norm) - k + 1)} if n else set()
    run = _longest_run(a_norm, grams) / len(a_norm)
    # does a question / predicate word occur near an answer word? (relation, not just mention)
    pred = norm_word(predicate or "")[:5]
    keys = [w[:5] for w in q_content] + ([pred] if pred else [])
    a_set = set(a_content)
    a_pos = [i for i, w in enumerate(norm) if w in a_set]
    k_pos = [i for i, w in enumerate(norm) if keys and w[:5] in keys and len(w) > 2]
    near = 0.0
    if a_pos and k_pos:
        import bisect
        k_pos.sort()
        dmin = 10 ** 9
        for p in a_pos:
            j = bisect.bisect_left(k_pos, p)
            for q in (j - 1, j):
                if 0 <= q < len(k_pos):
                    dmin = min(dmin, abs(k_pos[q] - p))
        near = 1.0 / (1.0 + dmin / 5.0)
    # the best single premise sentence: answer words and question words together
    sent_ans, sent_joint = 0.0, 0.0
    if a_set:
        q_keys = {w[:5] for w in q_content}
        start = 0
        for i in range(len(norm) + 1):
            if i == len(norm) or premise_words[i] in (".", "!", "?"):
                sent = norm[start:i]
                start = i + 1
                if not sent:
                    continue
                ws = set(sent)
                ac = len(a_set & ws) / len(a_set)
                qc = (len(q_keys & {w[:5] for w in ws}) / len(q_keys)) if q_keys else 1.0
                sent_ans = max(sent_ans, ac)
                sent_joint = max(sent_joint, min(ac, qc))
    # the question often carries the claim (copula QAs: "Who is an outspoken conservative? Mike")
    stems = {w[:5] for w in vocab_norm}
    q_all = [w for w in content_words(question, drop_stopwords=True)]
    q_long = [w for w in q_all if len(w) >= 6]
    q_bi = list(zip(content_words(question), content_words(question)[1:]))
    prem_bi = set(zip(norm, norm[1:]))
    extra = {
        "q_stem_cov": (sum(w[:5] in stems for w in q_content) / len(q_content)) if q_content else 1.0,
        "q_long_cov": (sum(w in vocab_norm for w in q_long) / len(q_long)) if q_long else 1.0,
        "q_bigram_cov": (sum(b in prem_bi for b in q_bi) / len(q_bi)) if q_bi else 1.0,
        "answer_pronoun": float(len(a_norm) == 1 and a_norm[0] in {"he", "she", "it", "they", "him", "her", "his",
                                                                     "its", "their", "them", "i", "we", "you"}),
    }
    digits = [w for w in a_norm if any(c.isdigit() for c in w)]
    caps = [w.lower().strip(string.punctuation) for w in answer.split() if w[:1].isupper()]
    return {
        "lex_raw": raw_cov,
        "lex_raw_all": float(raw_cov >= 1.0),
        "lex_norm": sum(w in vocab_norm for w in a_norm) / len(a_norm),
        "lex_content": sum(w in vocab_norm for w in a_content) / len(a_content),
        "answer_phrase": run,
        "question_cov": (sum(w in vocab_norm for w in q_content) / len(q_content)) if q_content else 1.0,
        "predicate_near_answer": near,
        "answer_len": min(len(a_norm), 30) / 30.0,
        "digits_cov": (sum(w in vocab_norm for w in digits) / len(digits)) if digits else 1.0,
        "caps_cov": (sum(w in vocab_norm for w in caps) / len(caps)) if caps else 1.0,
        "sent_answer_cov": sent_ans,
        "sent_joint": sent_joint,
        **extra,
    }
