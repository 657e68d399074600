"""The whole loop over texts: parse -> pairs within each text (+ triggered alternatives with a generator) ->
detect -> mitigate -> detect again on what changed -> measures. Each step is timed (items per second)."""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from models.qa_alignment import extract_qas
from models.self_contradiction.detect import within_text_pairs
from models.self_contradiction.fact_revise import (FactReviseSettings, context_of, fact_revise_fixes,
                                                   log_likelihoods_after)
from models.self_contradiction.measures import (conflicting_qa_keys, informativeness, perplexity, ratio,
                                                loop_metrics)
from models.self_contradiction.mitigate import (MITIGATIONS, delete_fixes, flagged_by_sentence, mitigate_text,
                                                revise_fixes)
from models.self_contradiction.texts import AnalysedText, analyse_texts, detokenize
from models.self_contradiction.trigger import TriggerSettings, trigger_pairs

log = logging.getLogger(__name__)


@dataclass
class LoopSettings:
    mitigation: str = "delete"
    within: bool = True                  # pairs of sentences within one text (no generator needed)
    trigger: TriggerSettings = field(default_factory=TriggerSettings)
    rounds: int = 3                      # revise: rounds before a sentence that still conflicts is dropped
    trigger_sampling: object = None      # models.generate.SamplingSettings of the alternatives (sampled)
    revise_sampling: object = None
    perplexity: bool = True
    revise_strategy: str = "chatprotect"  # chatprotect: ChatProtect's prompt; fact: aimed at the conflicting answers
    fact: FactReviseSettings = field(default_factory=FactReviseSettings)

    def __post_init__(self):
        if self.mitigation not in MITIGATIONS:
            raise ValueError(f"mitigation={self.mitigation!r}: expected one of {', '.join(MITIGATIONS)}")
        if self.revise_strategy not in ("chatprotect", "fact"):
            raise ValueError(f"revise.strategy={self.revise_strategy!r}: expected chatprotect or fact")


def complete_sentences(text: str) -> str:
    """A generated text without its last sentence when max_new_tokens cut it off (no final punctuation)."""
    text = text.strip()
    if not text or text[-1] in '.!?"\')':
        return text
    cut = max(text.rfind(". "), text.rfind("! "), text.rfind("? "), text.rfind(".\n"))
    return text[:cut + 1] if cut > 0 else text


def generate_texts(rows: list[dict], generator, template: str, chat_prompts=None) -> list[dict]:
    """{id, prompt} rows -> {id, prompt, text, status, error}: one generator call for all (a base model gets
    the prompt through `template`, a chat model as it is, after the system message of `chat_prompts`)."""
    if generator.chat:
        asks = [chat_prompts.generate_messages(r["prompt"]) if chat_prompts else r["prompt"] for r in rows]
    else:
        asks = [template.format(prompt=r["prompt"]) for r in rows]
    out = []
    for r, ask, g in zip(rows, asks, generator.generate(asks)):
        out.append({"id": r["id"], "prompt": r["prompt"], "request": ask, "text": complete_sentences(g.text or ""),
                    "raw": g.text, "status": g.status, "error": g.error, "cached": g.cached})
    return out


def log_likelihoods(generator, texts: list[str]) -> list:
    """The generator's (log-likelihood, tokens) of each text, None for an empty one (in text order)."""
    keep = [k for k, x in enumerate(texts) if x.strip()]
    out = [None] * len(texts)
    for k, v in zip(keep, generator.log_likelihood([texts[k] for k in keep])):
        out[k] = v
    return out


class Timer:
    def __init__(self):
        self.steps: dict[str, dict] = {}

    def step(self, name: str, items: int, start: float) -> None:
        s = time.perf_counter() - start
        self.steps[name] = {"items": items, "seconds": round(s, 3), "per_second": round(items / s, 3) if s > 0 else None}


def revised_texts(texts, fixes, detector, parser) -> list[AnalysedText]:
    """The texts after mitigation as AnalysedText (dropped sentences removed; changed ones parsed again),
    with `origin[i]` = the original index of each sentence and `changed` its original indices that changed."""
    changed = [(f.text_id, f.index, f.revised) for f in fixes if f.revised is not None]
    qas = dict(zip([(t, i) for t, i, _ in changed], extract_qas([s for _, _, s in changed], detector, parser)
                   if changed else []))
    out = []
    for t in texts:
        sentences, _ = mitigate_text(t, fixes)
        r = AnalysedText(t.id, t.prompt, "", [], [])
        for i, s in enumerate(sentences):
            if s is None:
                continue
            r.sentences.append(s)
            r.qas.append(qas.get((t.id, i), t.qas[i]))
            r.origin.append(i)
            if (t.id, i) in qas:
                r.changed.add(i)
        r.text = " ".join(detokenize(s) for s in r.sentences)
        out.append(r)
    return out


def redetect(revised, scorer, generator, detector, parser, settings: LoopSettings) -> tuple[set, list[dict], dict]:
    """Detect again, on the revised texts, the pairs whose judged sentence changed: ({(text id, original index)}
    still flagged, the scored pairs, trigger counts)."""
    items = []
    for r in revised:
        if settings.within:
            items += [p for p in within_text_pairs(r) if r.origin[p["sentence"]] in r.changed]
    trig_counts = {}
    if generator is not None:
        changed = {(r.id, i) for r in revised for i, o in enumerate(r.origin) if o in r.changed}
        trig, trig_counts, _ = trigger_pairs(revised, generator, detector, parser, settings.trigger,
                                             settings.trigger_sampling, only=changed)
        items += trig
    by_id = {r.id: r for r in revised}
    scored = scorer.score([{**p, "id": p["id"] + "#after"} for p in items])
    still = {(p["text_id"], by_id[p["text_id"]].origin[p["sentence"]]) for p in scored if p.get("decision")}
    return still, scored, trig_counts


def self_contradiction_loop(rows: list[dict], scorer, detector, parser, generator=None,
                            settings: LoopSettings | None = None, reviser=None) -> dict:
    """rows: {id, prompt, text}. Returns {texts, revised, pairs, requests, fixes, per_text, metrics, steps}.
    `reviser`: the model that revises (and measures perplexity) when it is not the generator, e.g. for texts= input
    with no generator."""
    settings = settings or LoopSettings()
    reviser = reviser or generator
    timer = Timer()
    t0 = time.perf_counter()
    texts = analyse_texts(rows, detector, parser)
    timer.step("parse", sum(len(t.sentences) for t in texts), t0)

    items, requests, trig_counts = [], [], {}
    t0 = time.perf_counter()
    if settings.within:
        items += [p for t in texts for p in within_text_pairs(t)]
    timer.step("within_pairs", len(items), t0)
    if generator is not None:
        t0 = time.perf_counter()
        trig, trig_counts, requests = trigger_pairs(texts, generator, detector, parser, settings.trigger,
                                                    settings.trigger_sampling)
        items += trig
        timer.step("trigger", len(requests), t0)
    t0 = time.perf_counter()
    pairs = scorer.score(items)
    timer.step("detect", len(pairs), t0)

    flagged = flagged_by_sentence(pairs)
    t0 = time.perf_counter()
    fixes, revise_counts = [], {}
    if settings.mitigation == "delete":
        fixes = delete_fixes(flagged, scorer, detector, parser)
    elif settings.mitigation == "revise":
        if reviser is None:
            raise ValueError("mitigation=revise needs a generator or a reviser (generator=gemma3_270m or generator=openai)")
        if settings.revise_strategy == "fact":
            fixes, revise_counts = fact_revise_fixes(flagged, {t.id: t for t in texts}, scorer, reviser, detector, parser,
                                                     settings.rounds, settings.revise_sampling,
                                                     settings.trigger.chat_prompts, settings.fact)
        else:
            fixes, revise_counts = revise_fixes(flagged, {t.id: t for t in texts}, scorer, reviser, detector, parser,
                                                settings.rounds, settings.revise_sampling, settings.trigger.chat_prompts)
    timer.step("mitigate", len(flagged), t0)

    t0 = time.perf_counter()
    revised = revised_texts(texts, fixes, detector, parser)
    still, after, after_counts = redetect(revised, scorer, generator, detector, parser, settings) \
        if fixes else (set(), [], {})
    timer.step("redetect", len(after), t0)

    conflicting = conflicting_qa_keys(pairs)
    per_text = []
    for t, r in zip(texts, revised):
        fx = [f for f in fixes if f.text_id == t.id]
        after_qas = [None] * len(t.sentences)
        for k, i in enumerate(r.origin):
            after_qas[i] = r.qas[k]
        judged = {i for (tid, i) in flagged if tid == t.id}
        total, kept = informativeness(t, after_qas, conflicting)
        removed = sum(1 for f in fx if f.revised is None or (t.id, f.index) not in still)
        by_deletion = sum(1 for f in fx if f.revised is None)
        per_text.append({"id": t.id, "sentences": len(t.sentences), "self_contradictory": len(judged),
                         "removed": removed if fx else 0, "removed_by_deletion": by_deletion,
                         "removed_by_revision": removed - by_deletion if fx else 0,
                         "qas_nonconflicting": total, "qas_kept": kept,
                         "dropped": sum(f.action == "dropped" for f in fx), "edited": sum(f.action == "edited" for f in fx),
                         "revised": sum(f.action == "revised" for f in fx),
                         "self_contradiction_rate": ratio(len(judged), len(t.sentences)),
                         "informativeness_kept": ratio(kept, total)})

    ppl, sentence_ppl = (None, None), None
    if reviser is not None and settings.perplexity:  # under the reviser: the generator when there is one
        t0 = time.perf_counter()
        # both sides as the loop's sentences joined, so that only mitigation differs between them
        originals = [" ".join(detokenize(s) for s in t.sentences) for t in texts]
        before = log_likelihoods(reviser, originals)
        changed = [k for k, r in enumerate(revised) if r.text != originals[k]]
        after_ll = dict(zip(changed, log_likelihoods(reviser, [revised[k].text for k in changed])))
        ppl = (perplexity(before), perplexity([after_ll.get(k, v) for k, v in enumerate(before)]))
        # the changed sentences, before and after: is a revision as fluent as what it replaced? Alone, or after the
        # prompt and the text before them as the fact strategy measured them (revise.perplexity_context=prefix)
        kept = [f for f in fixes if f.revised is not None]
        by_id = {t.id: t for t in texts}
        ctx = [context_of(by_id[f.text_id], f.index, settings.fact.perplexity_context) for f in kept] * 2
        pairs_ll = log_likelihoods_after(reviser, [detokenize(f.original) for f in kept] +
                                         [detokenize(f.revised) for f in kept], ctx)
        sentence_ppl = {"sentences": len(kept), "original": perplexity(pairs_ll[:len(kept)]),
                        "revised": perplexity(pairs_ll[len(kept):]), "context": settings.fact.perplexity_context}
        timer.step("perplexity", len(texts) + len(changed) + 2 * len(kept), t0)

    metrics = loop_metrics(per_text, pairs, after, len(still), settings.mitigation, trig_counts, revise_counts,
                           after_counts, ppl, sentence_ppl)
    metrics.update({
        "generator_usage": getattr(generator, "usage", None),
        "reviser_usage": getattr(reviser, "usage", None) if reviser is not generator else None,
        "steps": timer.steps,
    })
    return {"texts": texts, "revised": revised, "pairs": pairs, "requests": requests, "fixes": fixes,
            "revise_requests": revise_counts.get("requests", []),
            "after": after, "still": still, "per_text": per_text, "metrics": metrics}

