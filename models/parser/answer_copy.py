"""Constrained decoding that makes every answer a span of the sentence.

A small parser trained on a CPU writes well-formed questions but answers that are often not in
the sentence ("from italy"). Once the decoder has written the question-answer separator (or an
answer separator), the next token must continue some span of the sentence's own token ids, or end
the answer at a word boundary. Questions are left free.

Token-level: it assumes the tokenizer splits an answer the way it splits the sentence, which
holds for WordPiece (BERT splits on punctuation and spaces first) and for sentencepiece formats
that put a space before each answer.
"""
from __future__ import annotations

import torch
from transformers import LogitsProcessor


class SentenceIndex:
    """The sentence's token ids, and which positions start a word."""

    def __init__(self, ids: list[int], word_start: list[bool]):
        self.ids = ids
        self.word_start = word_start + [True]  # the end of the sentence is a boundary

    @classmethod
    def from_tokens(cls, tokenizer, tokens: list[str]) -> "SentenceIndex":
        enc = tokenizer(list(tokens), is_split_into_words=True, add_special_tokens=False)
        word_ids = enc.word_ids()
        starts = [i == 0 or w != word_ids[i - 1] for i, w in enumerate(word_ids)]
        return cls(list(enc["input_ids"]), starts)

    def allowed(self, prefix: list[int]) -> tuple[set[int], bool]:
        """(next tokens that continue `prefix` as a span, whether `prefix` may end here)."""
        ids, n, k = self.ids, len(self.ids), len(prefix)
        if k == 0:
            return {ids[i] for i in range(n) if self.word_start[i]}, False
        nxt, can_end = set(), False
        for i in range(n - k + 1):
            if self.word_start[i] and ids[i:i + k] == prefix:
                if i + k < n:
                    nxt.add(ids[i + k])
                can_end = can_end or self.word_start[i + k]
        return nxt, can_end


class AnswerCopyProcessor(LogitsProcessor):
    def __init__(self, sentences: list[SentenceIndex], num_beams: int, answer_start_ids: set[int],
                 answer_end_ids: set[int], qa_end_ids: set[int]):
        """answer_start_ids: tokens after which an answer begins (question-answer and answer
        separators); answer_end_ids: tokens that may end an answer (answer separator, QA
        separator, EOS); qa_end_ids: tokens that end a QA (QA separator, EOS)."""
        self.sentences, self.num_beams = sentences, num_beams
        self.answer_start_ids, self.answer_end_ids = answer_start_ids, answer_end_ids
        self.qa_end_ids = qa_end_ids

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        boundary = self.answer_start_ids | self.qa_end_ids
        for row in range(input_ids.shape[0]):
            seq = input_ids[row].tolist()
            last = max((i for i, t in enumerate(seq) if t in boundary), default=-1)
            if last < 0 or seq[last] not in self.answer_start_ids:
                continue  # writing a question: free
            nxt, can_end = self.sentences[row // self.num_beams].allowed(seq[last + 1:])
            if can_end:
                nxt |= self.answer_end_ids
            if not nxt:  # nothing fits: let the model end the QA rather than dead-end
                nxt = set(self.answer_end_ids)
            mask = torch.full_like(scores[row], float("-inf"))
            mask[list(nxt)] = 0
            scores[row] = scores[row] + mask
        return scores
