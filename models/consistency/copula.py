"""Copular facts: "Andrew Shue is an actor" -> "Who is an actor? Andrew Shue".

QA-SRL and QANom annotate no copula, so the predicate detector and the parser never produce these
QAs; QASemConsistency asks an LLM for them. This is a rule over tokens and the verb-form table the
predicate detector already carries (inflected form -> lemma):

- a copula is a form of "be" whose complement is a noun phrase, an adjective or a prepositional
  phrase; a "be" followed (past adverbs and negation) by a participle or an -ing verb form is the
  auxiliary of a passive or progressive verb ("was arrested", "is running"), whose QAs the parser
  gives, and is skipped;
- the subject (the answer) is the noun phrase that opens the copula's clause: left of "be", back to a
  clause boundary; past a participial or adverbial phrase to the phrase before it ("Born in Tehran,
  she is"); to the clause's own subject after "and" ("Wenham has acted ..., and is an actor"); to the
  antecedent of a relative pronoun ("Merkel, who is a physicist");
- the attribute runs to the clause's end (a comma or "and" followed by a verb, a relative pronoun,
  a participle phrase, the sentence's end); coordinated attributes ("an actor, entrepreneur, and
  activist") give one QA each.

Defined behaviour for the rest, each counted by reason, nothing dropped silently: "There is ..."
(existential), "It was ... that" (cleft), questions ("Is he ...?"), "be" + "to" (infinitival), a
"be" with no complement: no QA. A negated copula ("X is not a member") gives its QA marked
`is_negated` ("Who is not a member?").

Each copular predicate becomes a record like the parser's: predicate_type "copular", verb_form
"be", QAs with slots, `is_negated`, answers and answer_texts, and `copular: true`.
"""
from __future__ import annotations

from collections import Counter
from typing import Mapping, Sequence

BE_FORMS = frozenset("is are was were am be been being".split())
ADVERBS = frozenset("also currently still now often widely best well most very later once formerly previously "
                    "mainly primarily particularly perhaps probably possibly then already always just only "
                    "really quite originally generally considered arguably certainly mostly largely "
                    "famously".split())
NEGATION = frozenset({"not", "n't", "never"})
BOUNDARY = frozenset(", ; : ( ) -- where when while whereas because although though since if after before as "
                     "unless until whether so than and but or that which who whom whose".split())
PREPOSITIONS = frozenset("of in on at for with from by to about as into during since between among".split())
NAME_PARTICLES = frozenset("da de di del der van von la le bin al du dos".split())
RELATIVE = frozenset({"who", "which", "that"})
CLAUSE_END = frozenset({".", ";", ":", "?", "!", "(", ")", "--", "who", "which", "whose", "where", "when", "while",
                        "whereas", "because", "although", "though", "but"})
DETERMINERS = frozenset("a an the his her their its my our your this that these those one two three several many some "
                        "no another each every".split())
PERSONAL = frozenset("he she they i we you who".split())
MODALS = frozenset("will would can could may might must shall should has have had do does did".split())


IRREGULAR = frozenset({"born"})  # participles the inflection table lacks


class Lexicon:
    """Which words are verb forms: `participles` (-ing, past, past participle: after "be" they make a
    passive or progressive) and `finite` (3rd singular, past: after "and" they open a new clause).
    `verbal`: extra token indices of one sentence known to be verbal predicates (the detector's)."""

    def __init__(self, participles, finite):
        self.participles, self.finite = frozenset(participles) | IRREGULAR, frozenset(finite)

    @classmethod
    def from_table(cls, forms: list[list[str]]) -> "Lexicon":
        """From the Wiktionary rows [stem, 3rd singular, -ing, past, past participle]."""
        part = {w.lower() for f in forms for w in f[2:5] if w}
        fin = {f[k].lower() for f in forms for k in (1, 3) if len(f) > k and f[k]}
        return cls(part, fin)

    @classmethod
    def from_lemmas(cls, verbal: Mapping[str, str]) -> "Lexicon":
        """From an inflected-form -> lemma map (the detector's verb_forms.json): every form that is
        not its own lemma, split by its ending."""
        inflected = {w for w, lemma in verbal.items() if w != lemma and w[:1].isalpha()}
        return cls({w for w in inflected if not w.endswith("s")}, {w for w in inflected if not w.endswith("ing")})

    def participle(self, word: str) -> bool:
        return word[:1].isalpha() and word.lower() in self.participles

    def finite_or_aux(self, word: str) -> bool:
        w = word.lower()
        return w in BE_FORMS or w in MODALS or w in self.finite or w in self.participles


def _adverb(w: str) -> bool:
    return w in ADVERBS or (w.endswith("ly") and len(w) > 4)


def find_copulas(tokens: Sequence[str], lex: Lexicon, verbs: set[int] = frozenset()) -> tuple[list[dict], Counter]:
    """(copular predicates of one sentence as {predicate_index, predicate, negated, complement
    start}, counts of the be-forms skipped by reason). `verbs`: indices the detector found to be
    verbal predicates (a "be" right before one is its auxiliary)."""
    out, skipped = [], Counter()
    low = [t.lower() for t in tokens]
    for i, w in enumerate(low):
        if w not in BE_FORMS:
            continue
        j = i + 1
        negated = False
        while j < len(low) and (_adverb(low[j]) or low[j] in NEGATION):
            negated |= low[j] in NEGATION
            j += 1
        k = i - 1  # "should not be": a negation before "be", past its auxiliaries
        while k >= 0 and (low[k] in MODALS or low[k] in NEGATION or _adverb(low[k])):
            negated |= low[k] in NEGATION
            k -= 1
        if i > 0 and low[i - 1] == "there":
            skipped["existential_there"] += 1
        elif k >= 0 and low[k] == "it" and "that" in low[j:]:
            skipped["cleft_it_that"] += 1  # "It was in 1990 that ...", "it is true that ...": no fact of "it"
        elif low[-1] == "?" and (i == 0 or low[i - 1] in MODALS):
            skipped["question"] += 1
        elif j >= len(low) or low[j] in CLAUSE_END or low[j] in (",", "."):
            skipped["no_complement"] += 1
        elif low[j] == "to":
            skipped["infinitival"] += 1
        elif (j in verbs or lex.participle(low[j])) and low[j - 1] != "-":
            skipped["auxiliary"] += 1  # passive or progressive: the parser's verb
        else:
            out.append({"predicate_index": i, "predicate": tokens[i], "negated": negated, "complement": j,
                        "aux_start": k + 1})
    return out, skipped


def subject_span(tokens: Sequence[str], be: int, lex: Lexicon) -> tuple[int, int] | None:
    """[start, end) of the subject of the copula at `be` (see the module doc), or None."""
    low = [t.lower() for t in tokens]
    end = be
    while end > 0 and (low[end - 1] in ADVERBS or low[end - 1] in NEGATION or low[end - 1] in MODALS):
        end -= 1
    if end == 0:
        return None
    if low[end - 1] in RELATIVE:  # "Merkel, who is": the antecedent
        end -= 1
        while end > 0 and low[end - 1] in (",",):
            end -= 1
        start = _phrase_start(low, end)
        return (start, end) if start < end else None
    if low[end - 1] in ("and", "but", "or"):  # "Wenham has acted ..., and is": the clause's own subject
        pos = end - 1
        while True:  # leftwards, segment by segment, to one that opens with a subject
            start = _phrase_start(low, pos)
            if start < pos and not _opens_modifier(low, start, lex):
                break
            if start == 0:
                return None
            pos = start - 1
        stop = start
        while stop < pos and not lex.finite_or_aux(low[stop]) and low[stop] not in BOUNDARY:
            stop += 1
        while stop > start and _adverb(low[stop - 1]):
            stop -= 1  # "She currently lives": "She"
        return (start, stop) if start < stop else None
    start = _phrase_start(low, end)
    for k in range(end - 1, start - 1, -1):  # "Laura Muir says she is": the subject follows the last finite verb
        if low[k] in lex.finite and low[k] not in BE_FORMS:
            start = k + 1
            break
    return (start, end) if start < end else None


def _phrase_start(low: Sequence[str], end: int) -> int:
    start = end
    while start > 0 and low[start - 1] not in BOUNDARY:
        start -= 1
    return start


def _opens_modifier(low: Sequence[str], start: int, lex: Lexicon) -> bool:
    """The segment at `start` is a participial / prepositional opener ("Born in Tehran ,"), not a subject."""
    return lex.participle(low[start]) or low[start] in ("in", "on", "at", "after", "before", "during", "since")


def attributes(tokens: Sequence[str], start: int, lex: Lexicon) -> list[tuple[int, int]]:
    """[start, end) of each coordinated attribute from the complement's start to the clause's end."""
    low = [t.lower() for t in tokens]
    end = start
    while end < len(low) and low[end] not in CLAUSE_END:
        if low[end] in (",", "and", "or") and end + 1 < len(low):
            k = end + 1
            while k < len(low) and (_adverb(low[k]) or low[k] in ("and", "or", ",")):
                k += 1
            if k >= len(low) or lex.finite_or_aux(low[k]) or low[k] in CLAUSE_END or low[k] in ("such",):
                break  # "... , and often expresses": a new clause
        if end > start and lex.participle(low[end]) and low[end - 1] != "-" and low[end - 1] not in DETERMINERS:
            break  # "an activist best known for": a participle phrase
        if low[end] in ("that", "such") and end > start:
            break  # a relative clause, or "such as" examples
        end += 1
    while end > start and (low[end - 1] in ADVERBS or low[end - 1] in (",", "and", "or")):
        end -= 1  # "an actor best" -> "an actor"
    pieces, cur, in_pp = [], start, False
    for k in range(start, end + 1):
        if k < end and low[k] in PREPOSITIONS:
            in_pp = True
        # inside a prepositional phrase only "and" / "or" + a determiner starts a new attribute
        # ("the son of X and the brother of Y"); elsewhere a comma does too ("an actor, producer")
        split = k == end or (low[k] in (",", "and", "or") and (not in_pp or (
            low[k] in ("and", "or") and k + 1 < end and low[k + 1] in DETERMINERS)))
        if split:
            if any(t[:1].isalnum() for t in low[cur:k]):
                pieces.append((cur, k))
            cur, in_pp = k + 1, False
    return pieces


def wh_word(subject: Sequence[str]) -> str:
    """Who for a personal pronoun or a name, What otherwise."""
    if not subject:
        return "what"
    head = subject[-1].lower()
    if head.endswith(("ing", "ion", "ment", "ness", "ity")):
        return "what"  # "Smoking", "The decision": capitalised at a sentence's start, but no name
    if head in PERSONAL or (subject[0][:1].isupper() and subject[0].lower() not in DETERMINERS
                            and all(t[:1].isupper() or t in NAME_PARTICLES for t in subject if t.isalpha())):
        return "who"
    return "what"


def copular_records(tokens: Sequence[str], lex: Lexicon, sentence_id: str = "0",
                    verbs: set[int] = frozenset()) -> tuple[list[dict], Counter]:
    """Predicted records (one per copular predicate, parser-record fields) of one sentence, and the
    counts of what was skipped. `verbs`: the detector's verbal predicate indices, if known."""
    tokens = list(tokens)
    found, counts = find_copulas(tokens, lex, verbs)
    records = []
    for c in found:
        i = c["predicate_index"]
        subj = subject_span(tokens, i, lex)
        atts = attributes(tokens, c["complement"], lex)
        if subj is None:
            counts["no_subject"] += 1
            continue
        if not atts:
            counts["no_attribute"] += 1
            continue
        s, e = subj
        wh = wh_word(tokens[s:e])
        qas = []
        first_det = tokens[atts[0][0]].lower() if tokens[atts[0][0]].lower() in ("a", "an") else None
        for n, (a, b) in enumerate(atts):
            words = " ".join(tokens[a:b])
            if n and first_det and tokens[a].lower() not in DETERMINERS and tokens[a][:1].islower():
                words = f"{'an' if tokens[a][:1].lower() in 'aeiou' else 'a'} {words}"  # "an actor, entrepreneur" -> "an entrepreneur"
            chain = [t.lower() for t in tokens[c["aux_start"]:i + 1] if t.lower() in MODALS or t.lower() in BE_FORMS]
            be = " ".join(chain[:1] + (["not"] if c["negated"] else []) + chain[1:]) if len(chain) > 1 else \
                f"{chain[0]}{' not' if c['negated'] else ''}"
            question = f"{wh.capitalize()} {be} {words}?"
            qas.append({"question": question,
                        "slots": {"wh": wh, "aux": "_", "subj": "_", "verb": be, "obj": words, "prep": "_", "obj2": "_"},
                        "is_passive": False, "is_negated": c["negated"], "copular": True,
                        "answers": [[s, e]], "answer_texts": [" ".join(tokens[s:e])], "attribute": [a, b]})
        counts["copulas"] += 1
        counts["negated"] += c["negated"]
        records.append({"sentence_id": sentence_id, "tokens": tokens, "predicate_index": i, "predicate": tokens[i],
                        "predicate_type": "copular", "verb_form": "be", "qas": qas})
    return records, counts
