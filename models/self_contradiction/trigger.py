"""Trigger: for a sentence and one of its QAs, ask the same model for a second sentence in the same context that
states the same fact with the answer left open (ChatProtect's trigger, with a QA in place of its
subject-relation-object triple).

The QA must answer after its predicate, so that the words of the sentence before the answer hold the subject
and the predicate: that is the cloze ("He was born" for "When was someone born? in 356 BC"). A base model
continues the context (the prompt as the texts were generated, the text before the sentence, the cloze); a
chat model gets ChatProtect's gen_sentence prompt (models/self_contradiction/prompts.py). The alternative is the first sentence of the cloze and
its completion (base) or the answer (chat), and it is kept only when its parse has a QA of the same predicate
and role. Every refused alternative has a reason, counted in `alternatives_refused`."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from metrics.roles import ADJUNCT_WH_WORDS
from models.text import script_warnings, tokenize_sentences
from models.self_contradiction.texts import AnalysedText, detokenize

# which QA of a sentence is withheld when only one is: the object first, then the adjuncts most often stated
# as facts (ChatProtect withholds the triple's object)
ROLE_ORDER = ("R1", "R2", "when", "where", "how much", "how long", "how", "why", "R0")
BASE_TEMPLATE = "{prompt}\n\n"  # how the loop asks a base model for a text: keep the trigger's context the same
RETRY_REASONS = ("empty", "several_sentences")  # a reply that is not one sentence is asked for once more


@dataclass
class TriggerSettings:
    qas: str = "main"          # main: one QA per sentence (ROLE_ORDER); all: every QA answered after its predicate
    template: str = BASE_TEMPLATE
    chat_prompts: object = None  # models.self_contradiction.prompts.ChatPrompts: what a chat model is asked

    def __post_init__(self):
        if self.qas not in ("main", "all"):
            raise ValueError(f"trigger.qas={self.qas!r}: expected main or all")


def role_rank(role: str | None) -> int:
    base = (role or "").split("_")[0] if (role or "").split("_")[0] in ADJUNCT_WH_WORDS else (role or "")
    base = "R2" if base.startswith("R2") else base
    return ROLE_ORDER.index(base) if base in ROLE_ORDER else len(ROLE_ORDER)


def withheld_qas(qas: list[dict], mode: str) -> list[dict]:
    """The QAs of a sentence that can be withheld (answer after the predicate), the chosen ones first."""
    usable = [q for q in qas if q.get("role") and q["answer_span"][0] > q["predicate_index"]]
    usable.sort(key=lambda q: (q["predicate_index"], role_rank(q["role"]), q["answer_span"][0]))
    return usable[:1] if mode == "main" else usable


def context_prompt(text: AnalysedText, i: int, qa: dict, chat: bool, settings: TriggerSettings) -> tuple:
    """(the request to the model, the cloze) for sentence i of `text` with `qa`'s answer withheld. A chat model gets
    ChatProtect's gen_sentence messages: the subject (the words before the predicate, else the topic) and the
    predicate up to the withheld answer."""
    tokens = text.sentences[i]
    cloze = detokenize(tokens[:qa["answer_span"][0]])
    prefix = text.prefix(i)
    if chat:
        if settings.chat_prompts is None:
            raise ValueError("a chat generator needs its prompts (chat_prompts=chatprotect)")
        p = settings.chat_prompts
        subject = detokenize(tokens[:qa["predicate_index"]]).strip(" ,") or p.topic(text.prompt)
        predicate = detokenize(tokens[qa["predicate_index"]:qa["answer_span"][0]])
        return p.gen_sentence_messages(text.prompt, prefix, subject, predicate), cloze
    return settings.template.format(prompt=text.prompt) + (prefix + " " if prefix else "") + cloze, cloze


def requests_for(texts: list[AnalysedText], chat: bool, settings: TriggerSettings,
                 only: set | None = None) -> tuple[list[dict], int]:
    """(one request per withheld QA, the number of sentences with no QA to withhold); `only`: the
    (text id, sentence index) to trigger, default every sentence."""
    out, without = [], 0
    for t in texts:
        first: dict[tuple, int] = {}
        for i, qas in enumerate(t.qas):
            # a sentence the text repeats word for word (small models loop) reuses its first occurrence's
            # alternatives: the same claim, asked once
            repeat_of = first.setdefault(tuple(w.lower() for w in t.sentences[i]), i)
            if only is not None and (t.id, i) not in only:
                continue
            chosen = withheld_qas(qas, settings.qas)
            without += not chosen
            for k, qa in enumerate(chosen):
                request, cloze = context_prompt(t, i, qa, chat, settings)
                out.append({"id": f"{t.id}/s{i}/t{k}", "text_id": t.id, "sentence": i, "k": k, "qa": qa,
                            "request": request, "cloze": cloze,
                            "repeat_of": repeat_of if repeat_of != i else None})
    return out, without


def _norm(s: str) -> str:
    return " ".join(s.lower().split())


def alternative(req: dict, completion: str | None, chat: bool, prompt: str) -> tuple[list[str] | None, str | None]:
    """(the alternative sentence's tokens, None) or (None, why it is refused)."""
    if completion is None:
        return None, "generation_failed"
    if not completion.strip():
        return None, "empty"
    if len(_norm(prompt)) > 10 and _norm(completion).startswith(_norm(prompt)[:60]):
        return None, "prompt_echoed"
    if chat:
        sentences = tokenize_sentences(completion.strip().strip('"').strip())
        if len(sentences) > 1:
            return None, "several_sentences"
    else:
        joiner = "" if completion[:1].isspace() or completion[:1] in ",.;:" else " "
        sentences = tokenize_sentences((req["cloze"] + joiner + completion).split("\n")[0])
    if not sentences:
        return None, "empty"
    alt = sentences[0]
    words = lambda toks: sum(any(c.isalnum() for c in t) for t in toks)  # noqa: E731
    if not chat and words(alt) <= words(tokenize_sentences(req["cloze"])[0] if req["cloze"].strip() else []):
        return None, "empty"  # the completion ended the sentence without a word
    if script_warnings(alt):
        return None, "non_english"
    return alt, None


def same_fact(qa: dict, alt_qas: list[dict]) -> bool:
    return any((q["verb_form"], q["predicate_type"], q["role"]) == (qa["verb_form"], qa["predicate_type"], qa["role"])
               for q in alt_qas)


def trigger_pairs(texts: list[AnalysedText], generator, detector, parser, settings: TriggerSettings,
                  sampling=None, only: set | None = None) -> tuple[list[dict], dict, list[dict]]:
    """(pair items for ContradictionScorer.score, counts: requested, kept, refused by reason, sentences without a
    QA to withhold, generation errors; every request with its generation and refusal). One generator call for
    every request of every text."""
    from models.qa_alignment import extract_qas

    by_id = {t.id: t for t in texts}
    reqs, without = requests_for(texts, generator.chat, settings, only)
    asked = [r for r in reqs if r["repeat_of"] is None]
    answers = dict(zip([(r["text_id"], r["sentence"], r["k"]) for r in asked],
                       generator.generate([r["request"] for r in asked], sampling)))
    # a repeat whose first occurrence was not asked (re-detection's `only`) is asked itself
    missing = [r for r in reqs if r["repeat_of"] is not None and (r["text_id"], r["repeat_of"], r["k"]) not in answers]
    answers.update(zip([(r["text_id"], r["repeat_of"], r["k"]) for r in missing],
                       generator.generate([r["request"] for r in missing], sampling)))
    first_of = {(r["text_id"], r["sentence"], r["k"]): r for r in asked}
    first_of.update({(r["text_id"], r["repeat_of"], r["k"]): r for r in missing})
    # a reply that is not one sentence (or is empty) is asked for once more, with another seed, then counted
    retry = [key for key, g in answers.items()
             if alternative(first_of[key], g.text, generator.chat, by_id[key[0]].prompt)[1] in RETRY_REASONS]
    if retry:
        base = sampling or getattr(generator, "settings", None)
        again = replace(base, seed=base.seed + 1000) if base is not None else None
        answers.update(zip(retry, generator.generate([first_of[k]["request"] for k in retry], again)))
    gens = [answers[(r["text_id"], r["sentence"] if r["repeat_of"] is None else r["repeat_of"], r["k"])] for r in reqs]
    refused: Counter = Counter()
    candidates = []
    for r, g in zip(reqs, gens):
        r["generation"] = {"text": g.text, "status": g.status, "error": g.error, "cached": g.cached}
        alt, why = alternative(r, g.text, generator.chat, by_id[r["text_id"]].prompt)
        if why:
            refused[why] += 1
            r["refused"] = why
        else:
            candidates.append((r, alt))
    alt_qas = extract_qas([alt for _, alt in candidates], detector, parser) if candidates else []
    items = []
    for (r, alt), qas in zip(candidates, alt_qas):
        if not same_fact(r["qa"], qas):
            refused["different_fact"] += 1
            r["refused"] = "different_fact"
            continue
        t, i = by_id[r["text_id"]], r["sentence"]
        items.append({"id": r["id"], "kind": "trigger", "text_id": t.id, "sentence": i, "other": None,
                      "prompt": t.prompt, "prefix": t.prefix(i), "a_tokens": t.sentences[i], "b_tokens": alt,
                      "qas_a": t.qas[i], "qas_b": qas, "question": r["qa"]["question"],
                      "withheld": r["qa"]["answer"], "role": r["qa"]["role"], "request": r["request"]})
    counts = {"requested": len(reqs), "asked": len(asked) + len(missing),
              "reused_for_repeated_sentences": len(reqs) - len(asked) - len(missing),
              "kept": len(items), "refused": dict(sorted(refused.items())),
              "retried": len(retry), "sentences_without_qa": without, "generation_errors": sum(g.status != "ok" for g in gens),
              "cached": sum(g.cached for g in gens)}
    return items, counts, reqs
