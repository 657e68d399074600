"""Mitigate the sentences that take part in a detected self-contradiction, and only those:
- `delete` (no model): remove the conflicting argument (each flagged pair's primary conflict) when it is an
  adjunct (when, where, how, how long, why) or a prepositional phrase other than the subject, and does not hold
  its own predicate, so that the rest stays a sentence; drop the sentence when the conflict is a core argument,
  names no fact (a sentence-level conflict), or is still detected once the adjunct is gone;
- `revise` (the generator): ChatProtect's step (a chat model gets its prompt: models/self_contradiction/prompts.py,
  a base model a cloze): the model rewrites the sentence without the conflicting
  information and keeps the rest (a revision that loses more than half of the other content words is refused); the revision is re-detected against the same alternatives, up to `rounds`
  rounds, and the sentence is dropped when a conflict remains;
- `none`: the text is left as it is (detection only).
A sentence without a detected conflict is never changed."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace

from models.qa_alignment import STOP, extract_qas
from models.text import script_warnings, tokenize_sentences
from models.self_contradiction.texts import AnalysedText, detokenize

MITIGATIONS = ("none", "delete", "revise")
REMOVABLE_ROLES = frozenset({"when", "where", "how", "how long", "why"})
MODIFIER_PREPOSITIONS = frozenset("in on at during since from until till after before by near throughout within "
                                  "around across inside outside".split())
BASE_REVISE = ('Sentence: {sentence}\nIt contradicts: {alt}\nThe sentence with the conflicting information '
               '("{answer}") removed and everything else kept:')


def removable(role: str | None, answer: str = "") -> bool:
    """An answer that can go without breaking the sentence: an adjunct ("when_in" counts as "when"), or a
    prepositional phrase that is not the subject ("in 1815" read as R1 or R2 by a parser that mislabels roles)."""
    if not role:
        return False
    if role.split("_")[0] in REMOVABLE_ROLES:
        return True
    words = answer.split()
    return role != "R0" and len(words) > 1 and words[0].lower() in MODIFIER_PREPOSITIONS


def primary_conflict(pair: dict) -> dict | None:
    """The aligned QA pair a flagged pair names first (numbers or names that differ, then disjoint answers,
    then the lowest support: models.contradiction's order); the others are differences beside it."""
    return (pair.get("conflicts") or [None])[0]


def delete_spans(tokens: list[str], spans: list[tuple[int, int]]) -> list[str]:
    """The tokens without the spans, with a comma left dangling before punctuation or at either end removed."""
    drop = {k for s, e in spans for k in range(s, e)}
    out = [t for k, t in enumerate(tokens) if k not in drop]
    tidy = []
    for k, t in enumerate(out):
        nxt = out[k + 1] if k + 1 < len(out) else None
        if t == "," and (not tidy or nxt in (None, ",", ".", ";", ":", "!", "?")):
            continue
        tidy.append(t)
    if tidy and tokens and tidy[0] != tokens[0] and tidy[0][:1].islower() and tokens[0][:1].isupper():
        tidy[0] = tidy[0][:1].upper() + tidy[0][1:]
    return tidy


@dataclass
class SentenceFix:
    text_id: str
    index: int
    original: list[str]
    revised: list[str] | None      # None: dropped
    action: str                    # edited | revised | dropped
    reason: str
    pairs: list[str]
    rounds: int = 0


def flagged_by_sentence(pairs: list[dict]) -> dict[tuple[str, int], list[dict]]:
    out: dict = defaultdict(list)
    for p in pairs:
        if p.get("decision"):
            out[(p["text_id"], p["sentence"])].append(p)
    return dict(out)


def _rescore(scorer, pairs: list[dict], tokens: list[str], qas: list[dict], tag: str) -> list[dict]:
    return scorer.score([{**p, "id": f"{p['id']}#{tag}", "a_tokens": tokens, "qas_a": qas} for p in pairs])


def own_predicate(conflict: dict, qas: list[dict]) -> int:
    """The predicate index of the sentence's QA that a conflict names (-1 when none matches)."""
    for q in qas:
        if list(q["answer_span"]) == list(conflict["a"]["span"]) and q["question"] == conflict["a"]["question"]:
            return q["predicate_index"]
    return -1


def delete_fixes(flagged: dict, scorer, detector, parser) -> list[SentenceFix]:
    fixes, edits = [], []
    for (tid, i), pairs in flagged.items():
        tokens = pairs[0]["a_tokens"]
        conflicts = [primary_conflict(p) for p in pairs if p.get("conflicts")]
        sentence_level = any(not p.get("conflicts") for p in pairs)
        spans = [tuple(c["a"]["span"]) for c in conflicts]
        core = [c["role"] for c in conflicts if not removable(c["role"], c["a"]["answer"])]
        holds_predicate = [c for c in conflicts if own_predicate(c, pairs[0]["qas_a"]) in range(*c["a"]["span"])]
        ids = [p["id"] for p in pairs]
        if sentence_level or core or holds_predicate:
            why = ("a sentence-level conflict (no aligned fact)" if sentence_level else
                   f"a core argument conflicts ({', '.join(sorted(set(core)))})" if core else "the conflicting answer holds a predicate")
            fixes.append(SentenceFix(tid, i, tokens, None, "dropped", why, ids))
            continue
        new = delete_spans(tokens, spans)
        if len([t for t in new if t.isalnum()]) < 3:
            fixes.append(SentenceFix(tid, i, tokens, None, "dropped", "too little left once the modifier is removed", ids))
            continue
        edits.append((tid, i, tokens, new, pairs, ids))
    new_qas = extract_qas([e[3] for e in edits], detector, parser) if edits else []
    for (tid, i, tokens, new, pairs, ids), qas in zip(edits, new_qas):
        still = [r for r in _rescore(scorer, pairs, new, qas, "deleted") if r.get("decision")]
        if still:
            fixes.append(SentenceFix(tid, i, tokens, None, "dropped", "still detected once the modifier was removed", ids, 1))
        else:
            fixes.append(SentenceFix(tid, i, tokens, new, "edited", "conflicting modifier removed", ids, 1))
    return fixes


def revise_request(text: AnalysedText, tokens: list[str], pair: dict, chat: bool, chat_prompts=None):
    """What the generator is asked: ChatProtect's revise messages for a chat model (chat_prompts), a cloze for a
    base model."""
    alt = detokenize(pair["b_tokens"])
    conflict = (pair.get("conflicts") or [{}])[0]
    answer = conflict.get("a", {}).get("answer") or pair.get("withheld") or ""
    if chat:
        if chat_prompts is None:
            raise ValueError("a chat generator needs its prompts (chat_prompts=chatprotect)")
        return chat_prompts.revise_messages(text.prompt, text.prefix(pair["sentence"]), detokenize(tokens), alt)
    return BASE_REVISE.format(sentence=detokenize(tokens), alt=alt, answer=answer)


def content_words(tokens) -> set[str]:
    return {t.lower() for t in tokens if any(c.isalnum() for c in t) and t.lower() not in STOP}


def kept_words(tokens: list[str], pair: dict) -> set[str]:
    """The content words a revision must mostly keep: the sentence's, less the conflicting answer's."""
    c = primary_conflict(pair)
    return content_words(tokens) - content_words((c["a"]["answer"] if c else "").split())


def revision(completion: str | None, chat: bool, original: list[str],
             keep: set[str] = frozenset()) -> tuple[list[str] | None, str | None]:
    """(the revised sentence's tokens, None) or (None, why the answer is not a revision); `keep`: content words
    of which a revision must keep at least half ("keep everything else": "the same." is no revision)."""
    if completion is None:
        return None, "generation_failed"
    sentences = tokenize_sentences(completion.strip().split("\n")[0].strip().strip('"'))
    if not sentences:
        return None, "empty"
    if chat and len(tokenize_sentences(completion.strip())) > 1:
        return None, "several_sentences"
    new = sentences[0]
    if script_warnings(new):
        return None, "non_english"
    if [t.lower() for t in new] == [t.lower() for t in original]:
        return None, "unchanged"
    if keep and len(keep & content_words(new)) < 0.5 * len(keep):
        return None, "lost_content"
    return new, None


def revise_fixes(flagged: dict, texts: dict, scorer, generator, detector, parser, rounds: int = 3,
                 sampling=None, chat_prompts=None) -> tuple[list[SentenceFix], dict]:
    """ChatProtect's loop over every flagged sentence at once, one generator call per round."""
    from collections import Counter

    state = {key: {"tokens": pairs[0]["a_tokens"], "pairs": pairs, "done": False, "rounds": 0} for key, pairs in flagged.items()}
    refused: Counter = Counter()
    requests = []  # every revise request with its answer and why it was refused (generations.jsonl)
    for rnd in range(1, rounds + 1):
        todo = [k for k, s in state.items() if not s["done"]]
        if not todo:
            break
        asks = [revise_request(texts[k[0]], state[k]["tokens"], state[k]["pairs"][0], generator.chat, chat_prompts)
                for k in todo]
        # another seed each round: a refused answer is not asked for again word for word
        gens = generator.generate(asks, replace(sampling, seed=sampling.seed + rnd - 1) if sampling else None)
        accepted = []
        for k, ask, g in zip(todo, asks, gens):
            state[k]["rounds"] = rnd
            new, why = revision(g.text, generator.chat, state[k]["tokens"],
                                kept_words(state[k]["pairs"][0]["a_tokens"], state[k]["pairs"][0]))
            requests.append({"id": f"{k[0]}/s{k[1]}/r{rnd}", "request": ask, "text": g.text, "status": g.status,
                             "error": g.error, "cached": g.cached, "refused": why})
            if why:
                refused[why] += 1
            else:
                accepted.append((k, new))
        qas = extract_qas([new for _, new in accepted], detector, parser) if accepted else []
        for (k, new), q in zip(accepted, qas):
            still = [r for r in _rescore(scorer, state[k]["pairs"], new, q, f"r{rnd}") if r.get("decision")]
            state[k]["tokens"] = new
            state[k]["done"] = not still
    fixes = [revision_outcome(k, s["pairs"][0]["a_tokens"], s, [p["id"] for p in s["pairs"]], "revised by the model")
             for k, s in state.items()]
    return fixes, {"refused": dict(sorted(refused.items())), "requests": requests}


def revision_outcome(key: tuple, original: list[str], s: dict, ids: list[str], how: str) -> SentenceFix:
    """A sentence at the end of its revision rounds: revised when the last accepted revision is no longer
    detected, else dropped (ChatProtect's last resort)."""
    tid, i = key
    if s["done"]:
        return SentenceFix(tid, i, original, s["tokens"], "revised", how, ids, s["rounds"])
    return SentenceFix(tid, i, original, None, "dropped", f"still detected after {s['rounds']} round(s)", ids, s["rounds"])


def mitigate_text(text: AnalysedText, fixes: list[SentenceFix]) -> tuple[list[list[str] | None], str]:
    """(each sentence's tokens after mitigation, None when dropped; the revised text)."""
    by_index = {f.index: f for f in fixes if f.text_id == text.id}
    sentences = [by_index[i].revised if i in by_index else s for i, s in enumerate(text.sentences)]
    return sentences, " ".join(detokenize(s) for s in sentences if s)
