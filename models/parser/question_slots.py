"""QA-SRL questions <-> their 7 slots (wh, aux, subj, verb, obj, prep, obj2).

QA-SRL questions follow a fixed template (FitzGerald et al. 2018, the QA-SRL question state
machine): wh [aux] [subj] verb-group [obj] [prep] [obj2] ?  where the verb group is an optional
prefix ("not", "have", "be", "been", "being", ...) plus one inflected verb word. A question is
accepted either as natural text ("Who was given something by someone?") or in the 7-slot form
with "_" for empty slots ("who _ _ researched something _ _ ?", Klein et al. 2022).

No Python port of the state machine is installable here: kleinay/QANom `qanom/question_info.py`
(get_slots) wraps a DFA from the unpublished `constrained_decoding` package and only reads the
"_"-form. So this is a small deterministic parser: it enumerates every split of the question
over the template (closed vocabularies for every slot but the verb word, learnt from the slot
columns of QA-SRL GS / QANom and the Bank's questionSlots) and picks the best one. Given the
predicate's verb form (lemma), the split whose verb word looks like an inflection of it wins.

`parse_question(q, verb_form=None) -> ParsedQuestion | None` (None: not a template question);
`slots_to_question(slots)` and `slots_to_slot_string(slots)` write a question back.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

SLOT_NAMES = ("wh", "aux", "subj", "verb", "obj", "prep", "obj2")
EMPTY = "_"

WH = ("how much", "how long", "who", "what", "when", "where", "why", "how")
# QA-SRL itself only uses the singular forms (its subject is someone/something); the plural and
# the other modals are accepted so that a model's near-miss still parses.
_AUX_POS = ("is", "are", "am", "was", "were", "does", "do", "did", "has", "have", "had", "can",
            "could", "will", "would", "might", "should", "must", "may", "shall")
_AUX_NEG = ("isn't", "aren't", "wasn't", "weren't", "doesn't", "don't", "didn't", "hasn't",
            "haven't", "hadn't", "can't", "cannot", "couldn't", "won't", "wouldn't", "mightn't",
            "shouldn't", "mustn't", "shan't")
AUX = frozenset(_AUX_POS + _AUX_NEG)
# QA-SRL writes "does someone not comply" as aux "doesn't" + verb "comply"; only auxiliaries
# without a contracted negative (might, may, must) keep "not" in the verb ("might not be given").
NEG_CONTRACTION = {"is": "isn't", "are": "aren't", "was": "wasn't", "were": "weren't",
                   "does": "doesn't", "do": "don't", "did": "didn't", "has": "hasn't",
                   "have": "haven't", "had": "hadn't", "can": "can't", "could": "couldn't",
                   "will": "won't", "would": "wouldn't", "should": "shouldn't"}
BE_AUX = frozenset({"is", "are", "am", "was", "were", "isn't", "aren't", "wasn't", "weren't"})
SUBJ = frozenset({"someone", "something", "it"})
OBJ = frozenset({"someone", "something", "it"})
OBJ2 = frozenset({"someone", "something", "somewhere", "do", "doing"})
# Words of the verb prefix ("might not have been given": aux=might, verb="not have been given").
VERB_PREFIX_WORDS = frozenset({"not", "have", "be", "been", "being"})
BE_FORMS = frozenset({"be", "been", "being"})
# Words of the prep slot: prepositions and particles, possibly several ("out of", "to as",
# "on to"), the last one possibly followed by do/doing ("to do", "from doing").
PREP_WORDS = frozenset("""
    aboard about above according across after against ahead along alongside amid amidst among
    amongst apart around as aside at away back because before behind below beneath beside
    besides between beyond by close despite down during except for forth forward from in inside
    instead into like near next of off on onto opposite out outside over past per regarding round
    since than through throughout till to together toward towards under underneath unlike until
    unto up upon via with within without""".split())

# Prepositions that are never a verb word ("Who had to do something?" is not aux=had verb=to).
NON_VERB_PREPS = frozenset("""
    about above across after against along amid amidst among amongst as at because before behind
    below beneath beside besides between beyond by despite during except for from in inside into
    of on onto outside per since than through throughout till to toward towards under underneath
    unlike until unto upon via with within without""".split())

_VERB_WORD = re.compile(r"^[a-z][a-z'\-]*$")
# Words that are never the verb word (aux-like words can be: "Who has something?").
_CLOSED = frozenset({"who", "what", "when", "where", "why", "how", "much", "someone", "something",
                     "somewhere", "it", "not"})


@dataclass(frozen=True)
class ParsedQuestion:
    slots: dict
    is_passive: bool
    is_negated: bool

    def as_qa_fields(self) -> dict:
        return {"slots": dict(self.slots), "is_passive": self.is_passive, "is_negated": self.is_negated}


def _tokens(question: str) -> list[str]:
    q = question.strip().lower()
    q = q.replace("?", " ").replace("\u2019", "'")
    q = re.sub(r"\s*'\s*", "'", q)  # "doesn ' t" (a wordpiece decode) -> "doesn't"
    q = re.sub(r"\s*-\s*", "-", q)  # "re - elected" -> "re-elected"
    return q.split()


def _prep_splits(words: list[str]):
    """Every way to read `words` (what follows the object) as prep + obj2, as (prep, obj2)."""
    n = len(words)
    if n == 0:
        yield EMPTY, EMPTY
        return
    # obj2 is the last word (someone/something/somewhere/do/doing), or "do something" / "doing
    # something" whose do/doing QA-SRL files under prep ("to do" + "something").
    endings = [(words, EMPTY)]
    if words[-1] in OBJ2:
        endings.append((words[:-1], words[-1]))
    for head, obj2 in endings:
        if not head:
            if obj2 != EMPTY:
                yield EMPTY, obj2
            continue
        body, tail = head, []
        if head[-1] in ("do", "doing") and obj2 == "something":
            body, tail = head[:-1], [head[-1]]
        elif head[-1] in ("do", "doing") and obj2 == EMPTY and len(head) == 1:
            continue  # a lone "do" is obj2 ("What did someone help do?"), handled above
        if all(w in PREP_WORDS for w in body) and (body or tail):
            yield " ".join(body + tail), obj2


def _candidates(toks: list[str]):
    """Every template reading of the question tokens, as slot dicts (natural and "_" forms)."""
    n = len(toks)
    # wh
    whs = []
    if n >= 2 and " ".join(toks[:2]) in ("how much", "how long"):
        whs.append((" ".join(toks[:2]), 2))
    if n >= 1 and toks[0] in WH:
        whs.append((toks[0], 1))
    for wh, i in whs:
        # aux: a word of AUX, an explicit "_", or absent ("did ... not" is folded in by _normalize)
        auxs = [(EMPTY, i)]
        if i < n and toks[i] == EMPTY:
            auxs = [(EMPTY, i + 1)]
        elif i < n and toks[i] in AUX:
            auxs.append((toks[i], i + 1))
        for aux, j in auxs:
            subjs = [(EMPTY, j)]
            if j < n and toks[j] == EMPTY:
                subjs = [(EMPTY, j + 1)]
            elif j < n and toks[j] in SUBJ:
                subjs.append((toks[j], j + 1))
            for subj, k in subjs:
                # verb group: prefix words then the verb word
                m = k
                while True:
                    if m < n and _VERB_WORD.match(toks[m]) and toks[m] not in _CLOSED:
                        prefix = toks[k:m]
                        yield from _after_verb(toks, m + 1, wh, aux, subj, " ".join(prefix + [toks[m]]))
                    if m < n and toks[m] in VERB_PREFIX_WORDS:
                        m += 1
                        continue
                    break


def _after_verb(toks, i, wh, aux, subj, verb):
    rest = toks[i:]
    underscore_form = EMPTY in rest
    objs = [(EMPTY, 0)]
    if rest and rest[0] == EMPTY:
        objs = [(EMPTY, 1)]
    elif rest and rest[0] in OBJ:
        objs.insert(0, (rest[0], 1))
    for obj, a in objs:
        tail = rest[a:]
        if underscore_form:
            # 7-slot form: exactly prep and obj2 remain, each a filler or "_"
            # (multi-word prep: everything but the last filler)
            if not tail:
                continue
            obj2 = tail[-1]
            prep_words = tail[:-1]
            if obj2 != EMPTY and obj2 not in OBJ2:
                continue
            if prep_words == [EMPTY]:
                prep = EMPTY
            elif prep_words and EMPTY not in prep_words and all(
                    w in PREP_WORDS or (w in ("do", "doing") and x == len(prep_words) - 1)
                    for x, w in enumerate(prep_words)):
                prep = " ".join(prep_words)
            else:
                continue
            yield {"wh": wh, "aux": aux, "subj": subj, "verb": verb, "obj": obj, "prep": prep, "obj2": obj2}
        else:
            for prep, obj2 in _prep_splits(tail):
                yield {"wh": wh, "aux": aux, "subj": subj, "verb": verb, "obj": obj, "prep": prep, "obj2": obj2}


def _common_prefix(a: str, b: str) -> int:
    k = 0
    for x, y in zip(a, b):
        if x != y:
            break
        k += 1
    return k


def _verb_affinity(word: str, verb_form: str | None) -> int:
    """How much `word` looks like an inflection of `verb_form` (0 = not at all)."""
    if not verb_form:
        return 0
    lemma = verb_form.strip().lower()
    if not lemma:
        return 0
    if word == lemma:
        return 100
    k = _common_prefix(word, lemma)
    # "research"/"researched", "give"/"given", "try"/"tried", "run"/"ran" (irregulars share less)
    if k >= max(1, min(len(lemma), len(word)) - 2):
        return 50 + k
    return k


def _score(slots: dict, verb_form: str | None) -> tuple:
    verb_word = slots["verb"].split()[-1]
    filled = sum(1 for s in SLOT_NAMES if slots[s] != EMPTY)
    # Prefer: the verb word that matches the lemma; a verb word that is no preposition and no
    # be/have ("might be doing", not verb "be" + obj2 "doing"); then an aux over reading the aux
    # as the verb ("Who has been given something?"); then the reading with the most filled slots; then a
    # short verb prefix; then the object in obj rather than obj2.
    return (_verb_affinity(verb_word, verb_form), verb_word not in NON_VERB_PREPS,
            verb_word not in VERB_PREFIX_WORDS, slots["aux"] != EMPTY, filled,
            -len(slots["verb"].split()), slots["obj"] != EMPTY)


def _normalize(slots: dict) -> dict:
    """The QA-SRL conventions a surface reading leaves open."""
    slots = dict(slots)
    verb = slots["verb"].split()
    if len(verb) > 1 and verb[0] == "not" and slots["aux"] in NEG_CONTRACTION:
        slots["aux"] = NEG_CONTRACTION[slots["aux"]]
        slots["verb"] = " ".join(verb[1:])
    # "What did someone give someone?": with the subject filled, a who/what question's gap is the
    # object, so a lone object without a preposition is obj2 (as QA-SRL annotates it).
    if (slots["wh"] in ("who", "what") and slots["subj"] != EMPTY and slots["prep"] == EMPTY
            and slots["obj"] != EMPTY and slots["obj2"] == EMPTY):
        slots["obj"], slots["obj2"] = EMPTY, slots["obj"]
    return slots


def is_passive_voice(slots: Mapping[str, str]) -> bool:
    """Passive: the verb word is a participle right after a form of "be" (the aux when the verb
    has no prefix, else the last prefix word), and not an -ing form (that is the progressive)."""
    words = slots["verb"].split()
    verb = words[-1]
    before = words[-2] if len(words) > 1 else slots["aux"]
    if before not in BE_AUX and before not in BE_FORMS:
        return False
    if before == "being" and len(words) > 1:
        return True  # "is being paid"
    return not verb.endswith("ing")


def is_negated_question(slots: Mapping[str, str]) -> bool:
    return slots["aux"].endswith("n't") or slots["aux"] == "cannot" or "not" in slots["verb"].split()[:-1]


def parse_question(question: str, verb_form: str | None = None) -> ParsedQuestion | None:
    """The slots of a QA-SRL question (natural or "_" form), or None if it is not one.

    `verb_form` (the predicate's lemma) picks the verb word when the question reads several
    ways; without it the grammar alone decides. Never raises on odd input.
    """
    if not isinstance(question, str):
        return None
    toks = _tokens(question)
    if not toks:
        return None
    best, best_score = None, None
    for slots in _candidates(toks):
        score = _score(slots, verb_form)
        if best_score is None or score > best_score:
            best, best_score = slots, score
    if best is None:
        return None
    best = _normalize(best)
    return ParsedQuestion(best, is_passive_voice(best), is_negated_question(best))


def fallback_slots(question: str, verb_form: str | None = None) -> dict:
    """Best-effort slots for a question the template rejects: its wh-word when it has one, the
    verb form as the verb, the rest empty (enough for the adjunct roles of the LA metric)."""
    toks = _tokens(question) if isinstance(question, str) else []
    wh = EMPTY
    if len(toks) >= 2 and " ".join(toks[:2]) in ("how much", "how long"):
        wh = " ".join(toks[:2])
    elif toks and toks[0] in WH:
        wh = toks[0]
    slots = {s: EMPTY for s in SLOT_NAMES}
    slots["wh"] = wh
    slots["verb"] = (verb_form or "").strip().lower() or EMPTY
    return slots


def verb_word(slots: Mapping[str, str]) -> str:
    """The verb of a parsed question, lowercased, without its auxiliaries ("been approved" ->
    "approved"); "" when the slots have none."""
    return ((slots.get("verb") or "").split()[-1:] or [""])[0].lower()


def _slot_value(slots: Mapping[str, str], name: str) -> str:
    value = (slots.get(name) or "").strip()
    return EMPTY if value in ("", EMPTY) else value


def slots_to_question(slots: Mapping[str, str], capitalize: bool = True) -> str:
    """The natural question: non-empty slots joined by spaces, then "?"."""
    words = [_slot_value(slots, s) for s in SLOT_NAMES]
    text = " ".join(w for w in words if w != EMPTY)
    if capitalize and text:
        text = text[0].upper() + text[1:]
    return text + "?"


def slots_to_slot_string(slots: Mapping[str, str]) -> str:
    """The 7-slot form of Klein et al. 2022: every slot, "_" when empty, then " ?"
    (e.g. "who _ _ researched something _ _ ?"); lower case as in the QA-SRL slot data."""
    return " ".join(_slot_value(slots, s).lower() for s in SLOT_NAMES) + " ?"
