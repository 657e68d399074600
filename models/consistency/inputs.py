"""What a consistency pair must be before any model sees it: the types of its fields and every
index it gives (predicates, QAs, answer spans) inside the sentence it points to.

`pair_problems(pair)` lists what is wrong (empty when nothing is). The CLI refuses a file with a
bad pair before any model loads; inside `ConsistencyPipeline.run` a bad pair gets the status
`invalid_input` with these messages, and the other pairs are scored.
"""
from __future__ import annotations

from models.text import as_sentences


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_tokens(x) -> bool:
    return isinstance(x, list) and all(isinstance(w, str) for w in x)


def _text_problem(name: str, value, nested: bool) -> str | None:
    """A text is a string or a token list; the generated one may also be a list of token lists."""
    if isinstance(value, str) or _is_tokens(value):
        return None
    if nested and isinstance(value, list) and all(_is_tokens(s) for s in value):
        return None
    kinds = "a string, a token list or a list of token lists" if nested else "a string or a token list"
    return f"'{name}' must be {kinds}, not {type(value).__name__} {str(value)[:40]!r}"


def _index_problem(what: str, idx, n: int) -> str | None:
    if not _is_int(idx):
        return f"{what}: predicate_index {idx!r} is not an integer"
    if not 0 <= idx < n:
        return f"{what}: predicate_index {idx} is outside the sentence (tokens 0..{n - 1})"
    return None


def _qa_problems(k: int, qa, sentences: list[list[str]]) -> list[str]:
    what = f"qas[{k}]"
    if not isinstance(qa, dict):
        return [f"{what} is not an object"]
    j = qa.get("sentence", 0)
    if not _is_int(j) or not 0 <= j < len(sentences):
        return [f"{what}: sentence {j!r} does not exist (the generated text has {len(sentences)})"]
    n = len(sentences[j])
    out = [p for p in [_index_problem(what, qa.get("predicate_index"), n)] if p]
    if not isinstance(qa.get("question"), str) or not qa["question"].strip():
        out.append(f"{what}: 'question' must be a non-empty string")
    span = qa.get("answer_span")
    if span is not None:
        if not (isinstance(span, list) and len(span) == 2 and all(_is_int(x) for x in span)):
            out.append(f"{what}: answer_span {span!r} is not a pair of integers [start, end)")
        elif not 0 <= span[0] < span[1] <= n:
            out.append(f"{what}: answer_span {span} is not a span of sentence {j} ({n} tokens): "
                       "0 <= start < end <= length")
    return out


def pair_problems(pair) -> list[str]:
    """Everything wrong with one pair ({"reference", "generated", "predicates"?, "qas"?, "id"?})."""
    if not isinstance(pair, dict):
        return [f"a pair must be an object, not {type(pair).__name__}"]
    out = [p for p in (_text_problem("reference", pair.get("reference"), nested=True),
                       _text_problem("generated", pair.get("generated"), nested=True)) if p]
    if "id" in pair and not isinstance(pair["id"], (str, int)):
        out.append(f"'id' must be a string or an integer, not {type(pair['id']).__name__}")
    if out:
        return out  # indices cannot be checked against text that is not text
    sentences = as_sentences(pair["generated"])
    predicates = pair.get("predicates")
    if predicates is not None:
        if not isinstance(predicates, list) or len(predicates) > len(sentences):
            out.append(f"'predicates' must be a list with one list per generated sentence ({len(sentences)})")
        else:
            for j, preds in enumerate(predicates):
                if not isinstance(preds, list):
                    out.append(f"predicates[{j}] is not a list")
                    continue
                for k, p in enumerate(preds):
                    if not isinstance(p, dict):
                        out.append(f"predicates[{j}][{k}] is not an object with a predicate_index")
                        continue
                    problem = _index_problem(f"predicates[{j}][{k}]", p.get("predicate_index"), len(sentences[j]))
                    if problem:
                        out.append(problem)
    qas = pair.get("qas")
    if qas is not None:
        if not isinstance(qas, list):
            out.append("'qas' must be a list")
        else:
            for k, qa in enumerate(qas):
                out += _qa_problems(k, qa, sentences)
    return out


def invalid_report(pair_id: str, problems: list[str], threshold) -> dict:
    """The report of a pair that could not be checked: every field a report has, no score."""
    return {"id": pair_id, "score": None, "share": None, "n_qas": 0, "n_supported": 0, "status": "invalid_input",
            "messages": [f"invalid input: {p}" for p in problems], "reference_words": 0, "reference_chunks": 0,
            "threshold": threshold, "sentences": [], "unsupported": []}
