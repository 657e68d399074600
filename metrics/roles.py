"""Map a QA-SRL question (its slots) to a coarse semantic role, for the labeled (LA) metric.

Source: the He et al. (2015) mapping (Section 4 / Table 7 of "Question-Answer Driven Semantic
Role Labeling"), as reconstructed in the QANom evaluation code, kleinay/QANom
`qanom/metrics/roles.py::question_to_sem_role`. The role space is
    R0, R1, R2, R2_<prep>, <wh>, <wh>_<prep>   with <wh> in {where, when, why, how, how much, how long}.

Deliberate differences from that code (they change no role it would return):
- Records mark an empty slot with "_" (QANom's CSV uses ""), so both count as empty here.
- Roles are plain strings, not an Enum over the prepositions seen in the QANom data; the
  reference raises for an adjunct/R2 preposition outside its list, we just build the string.
- wh is lower-cased before building the role (the reference lower-cases only for the test, so
  "How" + prep would not be a valid role there).
- Questions the mapping cannot place get UNGRAMMATICAL, as in the latest reference version
  (older versions raised). Like the reference, two ungrammatical questions share that role.
"""
from __future__ import annotations

from typing import Mapping

CORE_WH_WORDS = frozenset({"what", "who"})
ADJUNCT_WH_WORDS = frozenset({"how", "how long", "how much", "when", "where", "why"})
UNGRAMMATICAL = "Ungrammatical-question"


def _slot(slots: Mapping[str, str | None], name: str) -> str:
    """The slot's value, with every spelling of "empty" ("_", "", None, missing) as ""."""
    value = slots.get(name) or ""
    value = value.strip()
    return "" if value == "_" else value


def question_to_sem_role(slots: Mapping[str, str | None], is_passive: bool) -> str:
    """The role of a question given its 7 slots and voice (He et al. 2015, Table 7)."""
    wh = _slot(slots, "wh").lower()
    subj, obj, prep, obj2 = (_slot(slots, n) for n in ("subj", "obj", "prep", "obj2"))

    def r2() -> str:
        # A preposition separates an indirect second object ("to whom") from a direct one.
        return f"R2_{prep}" if prep else "R2"

    if wh in CORE_WH_WORDS and not is_passive:
        # Active voice: the wh-word fills the first empty core slot.
        if not subj:
            return "R0"
        if not obj:
            return "R1"
        if not obj2 or obj2 in ("do", "doing"):
            return r2()
        return UNGRAMMATICAL  # all core slots filled, nothing left for the wh-word

    if wh in CORE_WH_WORDS and is_passive:
        # Passive: the subject position holds the patient; "by" marks the agent.
        if not subj:
            return "R1"
        if prep == "by":
            # Same with or without an object; the reference checks the two cases separately
            # but maps both alike ("what was someone awarded something for?" -> R2_for).
            return "R0"
        return r2()

    if wh in ADJUNCT_WH_WORDS:
        # Voice has no effect on adjuncts; a dangling preposition refines them ("where ... from?").
        if not obj2 and prep:
            return f"{wh}_{prep}"
        return wh

    return UNGRAMMATICAL


def qa_role(qa: Mapping) -> str | None:
    """The role of a canonical-record QA, or None when it carries no slots to map from."""
    slots = qa.get("slots")
    if not slots:
        return None
    return question_to_sem_role(slots, bool(qa.get("is_passive", False)))
