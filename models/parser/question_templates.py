"""QA-SRL questions as templates: the 7 slots with the verb word replaced by its inflection class,
so that one template ("what is being PASTPART?") serves every predicate, and back to a question
with the predicate's verb form ("What is being suspended?").

The span parser predicts one template per answer span, a joint class over the 7 slots rather
than 7 independent slot classifiers: every predicted question is then a question the training
data holds, so slots never disagree ("did" with "being given"). The inflection class follows from
the QA-SRL grammar (what precedes the verb word), except after no auxiliary at all, where the
word itself tells past from 3rd-person present.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Iterable, Mapping

from models.parser.question_slots import (BE_AUX, BE_FORMS, EMPTY, SLOT_NAMES, is_negated_question,
                                   is_passive_voice, slots_to_question)
from models.parser.verb_inflections import correction, known_form, regular_form

STEM, S3, ING, PAST, PASTPART = "STEM", "S3", "ING", "PAST", "PASTPART"
CLASSES = (STEM, S3, ING, PAST, PASTPART)
_HAVE = frozenset({"have", "has", "had", "haven't", "hasn't", "hadn't"})


def inflection_class(slots: Mapping[str, str], verb_form: str | None) -> str:
    """The inflection class of the verb word, from the word before it (prefix or aux)."""
    words = slots["verb"].split()
    word, prefix = words[-1], [w for w in words[:-1] if w != "not"]
    before = prefix[-1] if prefix else (slots.get("aux") or EMPTY)
    if before in BE_FORMS or before in BE_AUX:
        return ING if word.endswith("ing") and word != (verb_form or "") else PASTPART
    if before in _HAVE:
        return PASTPART
    if before != EMPTY:
        return STEM  # do / does / did / a modal, with or without "not"
    lemma = (verb_form or "").lower()
    if word != lemma and word in {lemma + "s", lemma + "es", lemma[:-1] + "ies"}:
        return S3
    return PAST  # "who put something?": an irregular past equal to the stem


def template_of(slots: Mapping[str, str], verb_form: str | None) -> str:
    """The template string: slots joined by '|' with the verb word abstracted."""
    words = slots["verb"].split()
    verb = " ".join(words[:-1] + [inflection_class(slots, verb_form)])
    values = [verb if s == "verb" else (slots.get(s) or EMPTY).strip() or EMPTY for s in SLOT_NAMES]
    return "|".join(values)


def inflect(lemma: str, cls: str, table: Mapping[str, Mapping[str, str]] | None = None) -> str:
    """The verb word of `lemma` in class `cls`: a correction of the Wiktionary table first ("born"), then
    the form seen in training (a checkpoint's table), then the Wiktionary form of an irregular verb
    (models/parser/verb_inflections.py: "spent", "written"), then the regular English rules."""
    lemma = (lemma or "").strip().lower() or "do"
    return (correction(lemma, cls) or (table or {}).get(lemma, {}).get(cls) or known_form(lemma, cls)
            or regular_form(lemma, cls))


def realise(template: str, verb_form: str | None, table: Mapping | None = None) -> dict:
    """A QA's question fields (question, slots, is_passive, is_negated) from a template."""
    values = template.split("|")
    slots = dict(zip(SLOT_NAMES, values))
    words = slots["verb"].split()
    if words and words[-1] in CLASSES:
        words[-1] = inflect(verb_form or "", words[-1], table)
    slots["verb"] = " ".join(words) or EMPTY
    return {"question": slots_to_question(slots), "slots": slots,
            "is_passive": is_passive_voice(slots), "is_negated": is_negated_question(slots)}


def build_vocabulary(records: Iterable[Mapping], min_count: int = 2) -> tuple[list[str], dict, Counter]:
    """(templates seen at least `min_count` times, most frequent first; the inflection table
    {lemma: {class: most frequent word}}; counts of the QAs the vocabulary leaves out)."""
    counts, forms = Counter(), defaultdict(Counter)
    for rec in records:
        lemma = (rec.get("verb_form") or "").lower()
        for qa in rec.get("qas") or []:
            slots = qa.get("slots")
            if not slots or not (slots.get("verb") or "").strip():
                continue
            counts[template_of(slots, lemma)] += 1
            forms[(lemma, inflection_class(slots, lemma))][slots["verb"].split()[-1]] += 1
    templates = [t for t, c in counts.most_common() if c >= min_count]
    table: dict = defaultdict(dict)
    for (lemma, cls), words in forms.items():
        word = words.most_common(1)[0][0]
        if lemma and word != inflect(lemma, cls) and not correction(lemma, cls):  # only what the rules get wrong
            table[lemma][cls] = word
    kept = set(templates)
    left_out = Counter({"qas": sum(c for t, c in counts.items() if t not in kept),
                        "templates": sum(1 for t in counts if t not in kept)})
    return templates, dict(table), left_out
