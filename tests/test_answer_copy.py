"""The answer-copy constraint: after the question-answer separator every token continues a span
of the sentence, and an answer ends only at a word boundary."""
import torch
from transformers import AutoTokenizer

from models.parser.answer_copy import AnswerCopyProcessor, SentenceIndex
from models.parser.seq2seq_model import resolve_name


def test_sentence_index_continuations():
    idx = SentenceIndex([10, 11, 12, 10, 13], [True, True, False, True, True])  # word 2 = ids 11 12
    starts, can_end = idx.allowed([])
    assert starts == {10, 11, 13} and not can_end          # 12 starts no word
    assert idx.allowed([10]) == ({11, 13}, True)            # "10" occurs twice; both continue
    assert idx.allowed([11]) == ({12}, False)               # inside a word: cannot end
    assert idx.allowed([11, 12]) == ({10}, True)
    assert idx.allowed([13]) == (set(), True)               # sentence end is a boundary
    assert idx.allowed([12, 10]) == (set(), False)          # does not start at a word start


def test_processor_masks_only_answers():
    tok = AutoTokenizer.from_pretrained(resolve_name("minilm"))
    sent = SentenceIndex.from_tokens(tok, ["The", "fox", "jumped", "over", "the", "fence"])
    qmark, sep, eos = tok.convert_tokens_to_ids("?"), 1, tok.sep_token_id
    proc = AnswerCopyProcessor([sent], 1, {qmark}, {sep, eos}, {sep, eos})
    vocab = len(tok)
    who = tok.convert_tokens_to_ids("who")
    # writing the question: nothing masked
    scores = proc(torch.tensor([[101, who]]), torch.zeros(1, vocab))
    assert torch.isfinite(scores).all()
    # just after "?": only words of the sentence may start the answer
    scores = proc(torch.tensor([[101, who, qmark]]), torch.zeros(1, vocab))
    allowed = set(torch.isfinite(scores[0]).nonzero().flatten().tolist())
    assert allowed == set(tok.convert_tokens_to_ids(["the", "fox", "jumped", "over", "fence"]))
    # after "the": "fox" or "fence" continue it, and the answer may end
    the = tok.convert_tokens_to_ids("the")
    scores = proc(torch.tensor([[101, who, qmark, the]]), torch.zeros(1, vocab))
    allowed = set(torch.isfinite(scores[0]).nonzero().flatten().tolist())
    assert allowed == set(tok.convert_tokens_to_ids(["fox", "fence"])) | {sep, eos}
