"""Windows over a sentence's words that fit an encoder's subword budget (the entailment scorer's
premise chunks, the predicate detector's and the span parser's long sentences): never a silent
truncation."""
from __future__ import annotations

from typing import Sequence


def budget_windows(word_costs: Sequence[int], budget: int, max_words: int, overlap: int) -> list[tuple[int, int]]:
    """Overlapping windows whose summed cost (subword tokens) stays within `budget` and whose
    length stays within `max_words`; every word is covered; a single word longer than the budget
    is its own window (the caller splits or reports it)."""
    n = len(word_costs)
    if n == 0:
        return [(0, 0)]
    budget = max(1, budget)
    out, start = [], 0
    while start < n:
        end, cost = start, 0
        while end < n and end - start < max_words and (cost + word_costs[end] <= budget or end == start):
            cost += word_costs[end]
            end += 1
        out.append((start, end))
        if end >= n:
            break
        # step back by `overlap` words but always move forward
        start = max(start + 1, end - overlap)
    return out
