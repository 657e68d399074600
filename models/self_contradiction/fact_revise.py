"""`revise.strategy=fact`: a revision aimed at the fact the scorer names, with candidates checked before one is kept.
ChatProtect's revise prompt says only "remove the conflicting information"; a 0.5B-1.5B chat model then copies the
alternative, repeats the sentence or echoes the instruction. Here the QA alignment says which answers conflict
(each flagged pair's primary conflict and the sentence's other answers set against the same alternative answer):
they are removed from the sentence by rule (the draft), and the model is asked only to make the draft one fluent
sentence without them (conf/chat_prompts/: `revise_fact`, with demonstrations). Each round samples up to
`candidates` answers (another seed each) and keeps the first that
- is a revision (models.self_contradiction.mitigate.revision: one sentence, changed, most other content words kept),
- is no longer flagged against any of the sentence's alternatives,
- states at least `keep_qas` of the sentence's QAs that were not in conflict,
- has a perplexity under the model at most (1 + `max_perplexity_increase`) times the original sentence's.
A candidate that passes all but the conflict check carries into the next round, which targets what is still
flagged; after `rounds` rounds a sentence still in conflict is dropped (ChatProtect's rule).
Options (chosen on dev, docs/experiments/self_contradiction.md): `remove` (main: only each flagged pair's primary
conflict), `draft_first` (the rule-made draft is itself the first candidate, under the same checks: no model call
when it passes) and `perplexity_context` (prefix: each sentence's perplexity given the prompt and the text before it,
the way the generator wrote it, rather than the sentence alone)."""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace

from models.qa_alignment import extract_qas
from models.self_contradiction.measures import qa_key
from models.self_contradiction.mitigate import (SentenceFix, _rescore, content_words, delete_spans,
                                                primary_conflict, revision, revision_outcome)
from models.self_contradiction.texts import detokenize


REMOVE = ("aligned", "main")
PERPLEXITY_CONTEXTS = ("sentence", "prefix")


@dataclass
class FactReviseSettings:
    candidates: int = 4                  # sampled answers per round (seeds seed + k)
    keep_qas: float = 0.5                # share of the sentence's non-conflicting QAs a revision must still state
    max_perplexity_increase: float | None = 0.10   # None: no fluency check
    remove: str = "aligned"              # aligned: conflicting_answers; main: each flagged pair's primary conflict only
    draft_first: bool = False            # the rule-made draft is the first candidate of round 1 (no model call if it passes)
    perplexity_context: str = "sentence"  # sentence: the sentence alone; prefix: given the prompt and the text before it

    def __post_init__(self):
        if self.remove not in REMOVE:
            raise ValueError(f"revise.remove={self.remove!r}: expected one of {', '.join(REMOVE)}")
        if self.perplexity_context not in PERPLEXITY_CONTEXTS:
            raise ValueError(f"revise.perplexity_context={self.perplexity_context!r}: expected one of "
                             f"{', '.join(PERPLEXITY_CONTEXTS)}")



def conflicting_answers(pairs: list[dict]) -> list[dict]:
    """The sentence's answers to remove: each flagged pair's primary conflict, and the pair's other conflicts set
    against the same alternative answer ("from 2009" and "2011" both against "in 2014"), in sentence order."""
    out = {}
    for p in pairs:
        c = primary_conflict(p)
        if not c:
            continue
        for d in p.get("conflicts") or []:
            if d is c or d["b"]["answer"] == c["b"]["answer"]:
                out[tuple(d["a"]["span"])] = d["a"]
    return [out[k] for k in sorted(out)]


def other_qa_keys(qas: list[dict], removed: list[dict]) -> set[tuple]:
    """The sentence's QAs whose answer does not overlap a removed answer (what a revision should keep): an answer
    that holds a removed one ("following a military coup in 1964" when "1964" goes) cannot be stated as it was."""
    spans = [tuple(a["span"]) for a in removed]
    return {qa_key(q) for q in qas
            if not any(q["answer_span"][0] < e and s < q["answer_span"][1] for s, e in spans)}


def answers_to_remove(pairs: list[dict], remove: str) -> list[dict]:
    """The answers the draft leaves out: `aligned` (conflicting_answers) or `main` (each pair's primary conflict)."""
    if remove == "aligned":
        return conflicting_answers(pairs)
    out = {tuple(c["a"]["span"]): c["a"] for p in pairs if (c := primary_conflict(p))}
    return [out[k] for k in sorted(out)]


def log_likelihoods_after(generator, texts: list[str], contexts: list[str | None]) -> list[tuple[float, int] | None]:
    """(sum of log-probabilities, tokens) of each text alone (context None or empty), or given its context: that of
    context + text less that of the context, the text's tokens as the model would continue the context (any model
    that scores whole texts)."""
    out = [None] * len(texts)
    alone = [k for k, c in enumerate(contexts) if not (c or "").strip()]
    for k, v in zip(alone, generator.log_likelihood([texts[k] for k in alone])):
        out[k] = v
    given = [k for k, c in enumerate(contexts) if (c or "").strip()]
    lls = generator.log_likelihood([contexts[k] for k in given] + [f"{contexts[k]} {texts[k]}" for k in given])
    for k, c, f in zip(given, lls[:len(given)], lls[len(given):]):
        if c and f and f[1] > c[1]:
            out[k] = (f[0] - c[0], f[1] - c[1])
    return out


def sentence_perplexity(generator, texts: list[str], contexts: list[str] | None = None) -> list[float | None]:
    """Each text's perplexity under the model (None where it gives no log-probabilities), alone or given its context."""
    values = log_likelihoods_after(generator, texts, contexts or [None] * len(texts))
    return [math.exp(-v[0] / v[1]) if v and v[1] else None for v in values]


def context_of(text, index: int, how: str) -> str | None:
    """What a sentence's perplexity is conditioned on: None (alone), or the prompt and the text before it."""
    if how == "sentence" or text is None:
        return None
    return "\n\n".join(x for x in (text.prompt.strip(), text.prefix(index).strip()) if x)


def fact_revise_fixes(flagged: dict, texts: dict, scorer, generator, detector, parser, rounds: int, sampling,
                      chat_prompts, settings: FactReviseSettings) -> tuple[list[SentenceFix], dict]:
    if chat_prompts is None or not generator.chat:
        raise ValueError("revise.strategy=fact needs a chat model as reviser and chat_prompts with revise_fact")
    state = {}
    for key, pairs in flagged.items():
        tokens = pairs[0]["a_tokens"]
        ctx = context_of(texts.get(key[0]), key[1], settings.perplexity_context)
        state[key] = {"tokens": tokens, "pairs": pairs, "done": False, "rounds": 0, "ctx": ctx,
                      "ppl": sentence_perplexity(generator, [detokenize(tokens)], None if ctx is None else [ctx])[0]}
    refused: Counter = Counter()
    accepted: Counter = Counter()
    requests = []

    def check(valid: list[tuple], tag: str, carry: dict) -> None:
        """Keep, for each sentence, the first valid candidate that passes every check (valid: (key, tokens,
        removed, request index, source)); one that passes all but the conflict check carries to the next round."""
        qas = extract_qas([v[1] for v in valid], detector, parser) if valid else []
        ctxs = [state[v[0]]["ctx"] for v in valid]
        ppls = sentence_perplexity(generator, [detokenize(v[1]) for v in valid],
                                   None if settings.perplexity_context == "sentence" else [c or "" for c in ctxs]) \
            if valid else []
        for (k, new, removed, r_ix, source), q, ppl in zip(valid, qas, ppls):
            s = state[k]
            if s["done"]:
                continue
            want = other_qa_keys(s["pairs"][0]["qas_a"], removed)
            have = {qa_key(x) for x in q}
            why = None
            if want and len(want & have) < settings.keep_qas * len(want):
                why = "lost_qas"
            elif (settings.max_perplexity_increase is not None and s["ppl"] and ppl
                  and ppl > s["ppl"] * (1 + settings.max_perplexity_increase)):
                why = "perplexity"
            if why is None:
                rescored = _rescore(scorer, s["pairs"], new, q, tag)
                if any(r.get("decision") for r in rescored):
                    why = "still_conflicts"
                    carry.setdefault(k, (new, rescored))
            requests[r_ix].update(refused=why, perplexity=ppl, perplexity_original=s["ppl"])
            if why:
                refused[why] += 1
                continue
            s["tokens"], s["done"], s["source"] = new, True, source
            accepted[source] += 1

    for rnd in range(1, rounds + 1):
        carry = {}
        if rnd == 1 and settings.draft_first:  # the rule-made draft, checked as the model's answers are
            valid = []
            for k, s in state.items():
                removed = answers_to_remove(s["pairs"], settings.remove)
                if not removed:
                    continue  # a sentence-level conflict: no draft
                s["rounds"] = rnd
                draft = delete_spans(s["tokens"], [tuple(a["span"]) for a in removed])
                keep = content_words(s["tokens"]) - content_words(" ".join(a["answer"] for a in removed).split())
                new, why = revision(detokenize(draft), True, s["tokens"], keep)
                requests.append({"id": f"{k[0]}/s{k[1]}/draft", "request": None, "text": detokenize(draft),
                                 "status": "rule", "error": None, "cached": False, "refused": why})
                if why:
                    refused[why] += 1
                else:
                    valid.append((k, new, removed, len(requests) - 1, "draft"))
            check(valid, "draft", carry)
        for cand in range(settings.candidates):
            todo = [k for k, s in state.items() if not s["done"]]
            if not todo:
                break
            asks, keeps, removed_of = [], [], []
            for k in todo:
                s = state[k]
                removed = answers_to_remove(s["pairs"], settings.remove)  # none for a sentence-level conflict
                draft = delete_spans(s["tokens"], [tuple(a["span"]) for a in removed]) if removed else s["tokens"]
                answers = "; ".join(f'"{a["answer"]}"' for a in removed) or "the conflicting information"
                asks.append(chat_prompts.revise_fact_messages(detokenize(s["tokens"]), answers, detokenize(draft)))
                keeps.append(content_words(s["pairs"][0]["a_tokens"]) - content_words(" ".join(a["answer"] for a in removed).split()))
                removed_of.append(removed)
            seed = sampling.seed + (rnd - 1) * settings.candidates + cand
            gens = generator.generate(asks, replace(sampling, seed=seed))
            valid = []
            for k, ask, g, keep, removed in zip(todo, asks, gens, keeps, removed_of):
                state[k]["rounds"] = rnd
                new, why = revision(g.text, True, state[k]["tokens"], keep)
                requests.append({"id": f"{k[0]}/s{k[1]}/r{rnd}c{cand}", "request": ask, "text": g.text,
                                 "status": g.status, "error": g.error, "cached": g.cached, "refused": why})
                if why:
                    refused[why] += 1
                else:
                    valid.append((k, new, removed, len(requests) - 1, "model"))
            check(valid, f"r{rnd}c{cand}", carry)
        for k, (new, rescored) in carry.items():  # next round: the carried sentence, aimed at what still conflicts
            if not state[k]["done"]:
                state[k]["tokens"] = new
                state[k]["pairs"] = [{**r, "a_tokens": new} if r.get("decision") else r for r in rescored]
                state[k]["pairs"] = [r for r in state[k]["pairs"] if r.get("decision")] or state[k]["pairs"]
    fixes = [revision_outcome(k, flagged[k][0]["a_tokens"], s, [p["id"].split("#")[0] for p in flagged[k]],
                              "the rule-made draft" if s.get("source") == "draft" else "revised by the model (fact)")
             for k, s in state.items()]
    return fixes, {"refused": dict(sorted(refused.items())), "accepted": dict(sorted(accepted.items())),
                   "requests": requests}
