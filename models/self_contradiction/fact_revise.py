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
flagged; after `rounds` rounds a sentence still in conflict is dropped (ChatProtect's rule)."""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace

from models.qa_alignment import extract_qas
from models.self_contradiction.measures import qa_key
from models.self_contradiction.mitigate import (SentenceFix, _rescore, content_words, delete_spans,
                                                primary_conflict, revision, revision_outcome)
from models.self_contradiction.texts import detokenize


@dataclass
class FactReviseSettings:
    candidates: int = 4                  # sampled answers per round (seeds seed + k)
    keep_qas: float = 0.5                # share of the sentence's non-conflicting QAs a revision must still state
    max_perplexity_increase: float | None = 0.10   # None: no fluency check


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
    """The sentence's QAs whose answer is not one of the removed answers (what a revision should keep)."""
    spans = {tuple(a["span"]) for a in removed}
    return {qa_key(q) for q in qas if tuple(q["answer_span"]) not in spans}


def sentence_perplexity(generator, texts: list[str]) -> list[float | None]:
    """Each text's perplexity under the model (None where it gives no log-probabilities)."""
    return [math.exp(-v[0] / v[1]) if v and v[1] else None for v in generator.log_likelihood(texts)]


def fact_revise_fixes(flagged: dict, texts: dict, scorer, generator, detector, parser, rounds: int, sampling,
                      chat_prompts, settings: FactReviseSettings) -> tuple[list[SentenceFix], dict]:
    if chat_prompts is None or not generator.chat:
        raise ValueError("revise.strategy=fact needs a chat model as reviser and chat_prompts with revise_fact")
    state = {}
    for key, pairs in flagged.items():
        tokens = pairs[0]["a_tokens"]
        state[key] = {"tokens": tokens, "pairs": pairs, "done": False, "rounds": 0,
                      "ppl": sentence_perplexity(generator, [detokenize(tokens)])[0]}
    refused: Counter = Counter()
    requests = []
    for rnd in range(1, rounds + 1):
        carry = {}
        for cand in range(settings.candidates):
            todo = [k for k, s in state.items() if not s["done"]]
            if not todo:
                break
            asks, keeps, removed_of = [], [], []
            for k in todo:
                s = state[k]
                removed = conflicting_answers(s["pairs"])  # none for a sentence-level conflict: the model decides
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
                    valid.append((k, new, removed, len(requests) - 1))
            qas = extract_qas([v[1] for v in valid], detector, parser) if valid else []
            ppls = sentence_perplexity(generator, [detokenize(v[1]) for v in valid]) if valid else []
            for (k, new, removed, r_ix), q, ppl in zip(valid, qas, ppls):
                s = state[k]
                want = other_qa_keys(s["pairs"][0]["qas_a"], removed)
                have = {qa_key(x) for x in q}
                why = None
                if want and len(want & have) < settings.keep_qas * len(want):
                    why = "lost_qas"
                elif (settings.max_perplexity_increase is not None and s["ppl"] and ppl
                      and ppl > s["ppl"] * (1 + settings.max_perplexity_increase)):
                    why = "perplexity"
                if why:
                    refused[why] += 1
                    requests[r_ix]["refused"] = why
                    continue
                rescored = _rescore(scorer, s["pairs"], new, q, f"r{rnd}c{cand}")
                if any(r.get("decision") for r in rescored):
                    refused["still_conflicts"] += 1
                    requests[r_ix]["refused"] = "still_conflicts"
                    carry.setdefault(k, (new, rescored))
                    continue
                s["tokens"], s["done"] = new, True
        for k, (new, rescored) in carry.items():  # next round: the carried sentence, aimed at what still conflicts
            if not state[k]["done"]:
                state[k]["tokens"] = new
                state[k]["pairs"] = [{**r, "a_tokens": new} if r.get("decision") else r for r in rescored]
                state[k]["pairs"] = [r for r in state[k]["pairs"] if r.get("decision")] or state[k]["pairs"]
    fixes = [revision_outcome(k, flagged[k][0]["a_tokens"], s, [p["id"].split("#")[0] for p in flagged[k]],
                              "revised by the model (fact)") for k, s in state.items()]
    return fixes, {"refused": dict(sorted(refused.items())), "requests": requests}
