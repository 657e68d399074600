"""Answer strings -> token spans of the sentence: the aligner behind models.parser.qa_format.decode.

A generated answer is matched against the sentence's tokens at the first level that has any
hit: exact token match, then case-insensitive, then ignoring whitespace / case / accents / quote
and bracket spellings (<unk> as a wildcard), then a truncated last word snapped to its token.
Among several hits: the answers of one QA take distinct spans; an answer avoids nesting in
another answer; with ordering="answer_position" the QAs' earliest answers must not decrease in the
order written; then the nearest to the predicate. Only the text decides: never the gold spans.
Gold round trip (gold -> text -> decode, UA F1, qanom protocol; both presets): QA-SRL GS test
0.9998, QANom test 0.9987 (nearest-to-predicate alone: 0.9952 / 0.9903). What remains is the same
word repeated ("I", "he") with nothing in the text to tell the mentions apart.
"""
from __future__ import annotations

import re
import unicodedata
from typing import Sequence

# Tokenizer artifacts stripped before splitting / matching (T5 / BART / BERT spellings).
ARTIFACTS = ("<pad>", "</s>", "<s>", "[PAD]", "[CLS]", "[SEP]")
UNK_TOKENS = ("<unk>", "[UNK]")

# Spellings that differ between tokenized text and detokenized / wordpiece-decoded answers;
# applied after removing whitespace and lower-casing (so "` `" and "``" meet).
_CHAR_MAP = (("``", '"'), ("''", '"'), ("\u201c", '"'), ("\u201d", '"'), ("\u201e", '"'),
             ("\u2018", "'"), ("\u2019", "'"), ("`", "'"), ("-lrb-", "("), ("-rrb-", ")"),
             ("-lsb-", "["), ("-rsb-", "]"), ("-lcb-", "{"), ("-rcb-", "}"), ("\u2013", "-"),
             ("\u2014", "-"))
_WILDCARD = "\x00"
_OVERLAP_COST = 10_000  # more than any distance


def _norm_chars(text: str) -> str:
    """Lower case, no whitespace, no accents (an uncased wordpiece tokenizer drops them), one
    spelling for quotes, brackets and dashes."""
    text = "".join(text.split()).lower()
    text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    for k, v in _CHAR_MAP:
        text = text.replace(k, v)
    return text


class Aligner:
    """Finds the token spans an answer string can stand for, and picks among them."""

    def __init__(self, tokens: Sequence[str], predicate_index: int):
        self.tokens = [str(t) for t in tokens]
        self.pred = predicate_index
        self.lower = [t.lower() for t in self.tokens]
        # normalized characters of the sentence and, for each, the token it comes from
        self.norm_toks = [_norm_chars(t) for t in self.tokens]
        self.chars, self.owner, self.tok_start = [], [], []
        for i, t in enumerate(self.norm_toks):
            self.tok_start.append(len(self.chars))
            self.chars.extend(t)
            self.owner.extend([i] * len(t))
        self.text = "".join(self.chars)
        self.starts = {pos: i for i, pos in enumerate(self.tok_start) if self.norm_toks[i]}
        self.ends = {}
        for i, t in enumerate(self.norm_toks):
            if t:
                self.ends[self.tok_start[i] + len(t)] = i + 1

    def candidates(self, answer: str) -> list[tuple[int, int]]:
        """All spans the answer matches at the first level that has any."""
        for a in ARTIFACTS:
            answer = answer.replace(a, " ")
        words = answer.split()
        if not words:
            return []
        n, k = len(self.tokens), len(words)
        hits = [(i, i + k) for i in range(n - k + 1) if self.tokens[i:i + k] == words]
        if hits:
            return hits
        lw = [w.lower() for w in words]
        hits = [(i, i + k) for i in range(n - k + 1) if self.lower[i:i + k] == lw]
        if hits:
            return hits
        return self._char_candidates(answer)

    def _char_candidates(self, answer: str) -> list[tuple[int, int]]:
        """Matches that ignore whitespace, case, accents and quote / bracket spellings ("U.S.",
        "don't" for "do n't", '"Okay"' for "`` Okay ''"); <unk> matches anything. A match must
        start at a token start; one that ends inside a token (a truncated last word) is kept,
        snapped to whole tokens, only if nothing matches on token boundaries."""
        a = answer
        for u in UNK_TOKENS:
            a = a.replace(u, _WILDCARD)
        a = _norm_chars(a)
        if not a.strip(_WILDCARD):
            return []
        has_wildcard = _WILDCARD in a
        # an <unk> stands for a few characters (one piece or word), not for any stretch of text
        rx = re.compile(".{1,20}?".join(re.escape(p) for p in a.split(_WILDCARD)), re.S)
        exact, snapped = set(), set()
        for start, s_tok in self.starts.items():
            m = rx.match(self.text, start)
            if not m:
                continue
            if m.end() in self.ends:
                exact.add((s_tok, self.ends[m.end()]))
                continue
            if has_wildcard:  # the shortest wildcard match that ends on a token boundary
                end = next((e for e in sorted(self.ends) if e > m.end()
                            and rx.fullmatch(self.text, start, e)), None)
                if end is not None:
                    exact.add((s_tok, self.ends[end]))
                    continue
            span = (s_tok, self.owner[m.end() - 1] + 1)
            covered = len(a.replace(_WILDCARD, ""))
            if covered >= 0.5 * sum(len(t) for t in self.norm_toks[span[0]:span[1]]):
                snapped.add(span)
        return sorted(exact or snapped)

    def distance(self, span: tuple[int, int]) -> int:
        s, e = span
        if s <= self.pred < e:
            return 0
        return s - self.pred if s > self.pred else self.pred - e + 1

    def _cost(self, span, others) -> int:
        """Distance to the predicate, plus a large cost for nesting in or around another answer
        of the same predicate: arguments rarely overlap, so "the Universe" next to "in the
        Universe" is more likely the other mention."""
        s, e = span
        overlap = any(o != span and s < o[1] and o[0] < e for o in others)
        return self.distance(span) + (_OVERLAP_COST if overlap else 0)

    def _assign(self, cand_lists: Sequence[Sequence[tuple[int, int]]], lower: int,
                forced: tuple[int, tuple[int, int]] | None = None, others=()):
        """Spans for one QA's answers: distinct (two answers of one QA are two spans), starting at
        `lower` or later, each the nearest such to the predicate; most constrained answer first.
        Returns (cost, penalties, spans). A choice that breaks a constraint costs a penalty."""
        spans: list = [None] * len(cand_lists)
        used: set = set()
        cost = penalties = 0
        if forced is not None:
            j, span = forced
            spans[j] = span
            used.add(span)
            cost += self._cost(span, others[j] if others else ())
        order = sorted((j for j in range(len(cand_lists)) if spans[j] is None and cand_lists[j]),
                       key=lambda j: (len(cand_lists[j]), j))
        for j in order:
            free = [c for c in cand_lists[j] if c not in used]
            ok = [c for c in free if c[0] >= lower]
            oth = others[j] if others else ()
            near = lambda cs: min(cs, key=lambda sp: (self._cost(sp, oth), sp)) if cs else None
            pick = near(ok)
            if pick is None:
                penalties += 1
                pick = near(free) or near(cand_lists[j])
            spans[j] = pick
            used.add(pick)
            cost += self._cost(pick, oth)
        return cost, penalties, spans

    def align_qas(self, answers_per_qa: Sequence[Sequence[str]],
                  ordered: bool = False) -> list[list[tuple[int, int] | None]]:
        """A span (or None) for every answer of every QA.

        Each answer goes to the nearest of its matches to the predicate, with two constraints
        the text itself implies (never the gold spans): the answers of one QA are distinct spans
        ("he<sep>he" names two mentions), and, when the format orders QAs by answer position
        (`ordered`), the QAs' earliest answers are non-decreasing in the order they were written.
        Constraints are soft: an answer that cannot meet them still gets its nearest match.
        """
        cands = [[self.candidates(a) for a in answers] for answers in answers_per_qa]
        first = self._align(cands, ordered, None)
        # second pass: the same, avoiding spans that overlap the other answers of the first pass
        chosen = [(i, j, sp) for i, spans in enumerate(first) for j, sp in enumerate(spans) if sp]
        others = [[[sp for (i2, j2, sp) in chosen if (i2, j2) != (i, j)] for j in range(len(c))]
                  for i, c in enumerate(cands)]
        return self._align(cands, ordered, others)

    def _align(self, cands, ordered: bool, others):
        if not ordered:
            return [self._assign(c, 0, others=others[i] if others else ())[2] for i, c in enumerate(cands)]
        # Options per QA: (earliest start, penalties, cost, spans): for every start an answer can
        # take, the best assignment with that answer there and the others at or after it.
        options = []
        for i, c in enumerate(cands):
            opts = {}
            for j, cl in enumerate(c):
                for span in cl:
                    cost, pen, spans = self._assign(c, span[0], forced=(j, span),
                                                    others=others[i] if others else ())
                    m = min(sp[0] for sp in spans if sp is not None)
                    key = (pen, cost)
                    if m not in opts or key < opts[m][:2]:
                        opts[m] = (pen, cost, spans)
            if not opts:
                opts[None] = (0, 0, [None] * len(c))
            options.append(opts)
        # DP over QAs: state = earliest start of the previous QA (None: no aligned answer yet).
        # Score = (constraint violations, total distance); ties go to the smaller earliest start.
        best = {None: ((0, 0), [])}
        for opts in options:
            nxt = {}
            for prev, (score, path) in best.items():
                for m, (pen, cost, spans) in opts.items():
                    if m is None:
                        state, viol = prev, 0
                    else:
                        state, viol = m, int(prev is not None and m < prev)
                    cand = ((score[0] + pen + viol, score[1] + cost), path + [spans])
                    if state not in nxt or cand[0] < nxt[state][0]:
                        nxt[state] = cand
            best = nxt
        _, path = min(best.values(), key=lambda v: v[0])
        return path
