"""The prompts a chat model gets in the loop (ChatProtect's: conf/chat_prompts/chatprotect.yaml holds the text),
as chat messages: `gen_sentence` (the trigger: the next sentence for a subject and predicate with the object
withheld, after a few demonstrations), `revise` (the sentence without the conflicting information) and `detect`
(an explanation first, then Yes or No), and the texts themselves (`generate`: a system message before the prompt). A base model gets the cloze of models/self_contradiction/trigger.py
instead."""
from __future__ import annotations

from dataclasses import dataclass


def _message(role: str, content: str) -> dict:
    return {"role": role, "content": content}


@dataclass
class ChatPrompts:
    gen_sentence: dict     # system, user, demonstrations [{topic, prefix, subject, predicate, answer}]
    detect: dict           # explain, conclude
    revise: dict           # user
    generate: dict | None = None  # system: the system message before a text's prompt (none when absent)
    topic_prefix: str = ""
    no_prefix: str = ""
    revise_fact: dict | None = None  # system, user, demonstrations [{sentence, answers, draft, answer}]: revise.strategy=fact

    def __post_init__(self):
        for step, keys in (("gen_sentence", ("system", "user", "demonstrations")), ("detect", ("explain", "conclude")),
                           ("revise", ("user",))):
            missing = [k for k in keys if k not in (getattr(self, step) or {})]
            if missing:
                raise ValueError(f"chat_prompts.{step} lacks {', '.join(missing)}")

    def topic(self, prompt: str) -> str:
        return prompt[len(self.topic_prefix):] if self.topic_prefix and prompt.startswith(self.topic_prefix) else prompt

    def generate_messages(self, prompt: str) -> list[dict]:
        system = (self.generate or {}).get("system")
        return ([_message("system", system)] if system else []) + [_message("user", prompt)]

    def gen_sentence_messages(self, prompt: str, prefix: str, subject: str, predicate: str) -> list[dict]:
        g = self.gen_sentence
        messages = [_message("system", g["system"])]
        for d in g["demonstrations"]:
            messages += [_message("user", g["user"].format(topic=d["topic"], prefix=d["prefix"], subject=d["subject"],
                                                           predicate=d["predicate"])),
                         _message("assistant", d["answer"])]
        messages.append(_message("user", g["user"].format(topic=self.topic(prompt), prefix=prefix or self.no_prefix,
                                                          subject=subject, predicate=predicate)))
        return messages

    def revise_messages(self, prompt: str, prefix: str, sentence: str, alt: str) -> list[dict]:
        return [_message("user", self.revise["user"].format(prompt=prompt, topic=self.topic(prompt),
                                                            prefix=prefix or self.no_prefix, sentence=sentence, alt=alt))]

    def revise_fact_messages(self, sentence: str, answers: str, draft: str) -> list[dict]:
        """The sentence, the answers the scorer found in conflict and the sentence without them (a draft to repair),
        after the demonstrations."""
        f = self.revise_fact
        if not f or any(k not in f for k in ("system", "user", "demonstrations")):
            raise ValueError("revise.strategy=fact needs chat_prompts.revise_fact with system, user and demonstrations")
        messages = [_message("system", f["system"])]
        for d in f["demonstrations"]:
            messages += [_message("user", f["user"].format(sentence=d["sentence"], answers=d["answers"], draft=d["draft"])),
                         _message("assistant", d["answer"])]
        return messages + [_message("user", f["user"].format(sentence=sentence, answers=answers, draft=draft))]

    def detect_messages(self, prompt: str, prefix: str, stmt1: str, stmt2: str,
                        explanation: str | None = None) -> list[dict]:
        """The explain request; with the model's `explanation`, the conversation that asks for the conclusion."""
        first = [_message("user", self.detect["explain"].format(prompt=prompt, topic=self.topic(prompt),
                                                                prefix=prefix or self.no_prefix, stmt1=stmt1, stmt2=stmt2))]
        if explanation is None:
            return first
        return first + [_message("assistant", explanation), _message("user", self.detect["conclude"])]
