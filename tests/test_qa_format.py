"""QA text formats (models/parser/qa_format.py), answer alignment (models/parser/answer_alignment.py), question
slots (models/parser/question_slots.py) and the format round trip (evaluation/roundtrip.py), on small
hand-written records."""
from __future__ import annotations

import json

import pytest

from data_prep.records import validate_record
from models.parser.answer_alignment import Aligner
from models.parser.qa_format import PRESETS, QAFormat, get_format, prediction_record
from models.parser.question_slots import (parse_question, slots_to_question, slots_to_slot_string)


def S(wh, aux="_", subj="_", verb="_", obj="_", prep="_", obj2="_"):
    return {"wh": wh, "aux": aux, "subj": subj, "verb": verb, "obj": obj, "prep": prep, "obj2": obj2}


def qa(question, slots, answers, tokens, passive=False, negated=False):
    return {"question": question, "slots": slots, "is_passive": passive, "is_negated": negated,
            "answers": [list(a) for a in answers],
            "answer_texts": [" ".join(tokens[s:e]) for s, e in answers]}


def record(sid, text, pidx, ptype, verb_form, qas):
    toks = text.split()
    rec = {"sentence_id": sid, "tokens": toks, "predicate_index": pidx, "predicate": toks[pidx],
           "predicate_type": ptype, "verb_form": verb_form,
           "qas": [qa(q, s, a, toks, *rest) for q, s, a, *rest in qas], "source": "fixture",
           "split": "test"}
    validate_record(rec)
    return rec


# Klein et al. 2022's model card example (kleinay/qanom-seq2seq-model-baseline README).
LUKE = record("fx:luke", "The student was interested in Luke 's research about sea animals .", 7,
              "nominal", "research",
              [("Who researched something?", S("who", verb="researched", obj="something"), [(5, 6)]),
               ("What did someone research?", S("what", "did", "someone", "research"), [(9, 11)])])
# The qasem_parser docstring / DESIGN.md example.
FOX = record("fx:fox", "The fox jumped over the fence", 2, "verbal", "jump",
             [("Who jumped?", S("who", verb="jumped"), [(0, 2)]),
              ("Where did someone jump?", S("where", "did", "someone", "jump"), [(3, 6)])])
# Repeated mentions: two "he" in one QA; "we" twice, the gold one the farther from the predicate.
HE = record("fx:he", "She said he had friends and he was often the leader in order to improve things .",
            14, "verbal", "improve",
            [("Who was improving something?", S("who", "was", verb="improving", obj="something"),
              [(6, 7), (2, 3)]),
             ("What was being improved?", S("what", "was", verb="being improved"), [(15, 16)], True)])
WE = record("fx:we", "... Sometimes we have to get really high to see how small we are '' .", 9,
            "verbal", "see",
            [("Who sees something?", S("who", verb="sees", obj="something"), [(2, 3)]),
             ("How does someone see something?", S("how", "does", "someone", "see", "something"), [(3, 8)]),
             ("What does someone see?", S("what", "does", "someone", "see"), [(10, 14)])])
# Nested text: "the Universe" also occurs inside the other answer "in the Universe".
UNIVERSE = record("fx:universe", "the distribution of matter in the Universe , and the evolution of the Universe", 1,
                  "nominal", "distribute",
                  [("What is distributed?", S("what", "is", verb="distributed"), [(3, 4)], True),
                   ("Where is something distributed?", S("where", "is", "something", "distributed"),
                    [(12, 14), (4, 7)], True)])
FIXTURES = [LUKE, FOX, HE, WE, UNIVERSE]


# ----------------------------------------------------------------------------- presets

def test_klein2022_exact_strings():
    src, tgt = get_format("klein2022").encode(LUKE)
    assert src == ("parse: The student was interested in Luke 's <extra_id_10> research <extra_id_10> "
                   "about sea animals . <extra_id_1> research")
    assert tgt == ("who _ _ researched something _ _ ?<extra_id_7>Luke<extra_id_9>"
                   "what did someone research _ _ _ ?<extra_id_7>sea animals")


def test_qasem_parser_exact_strings():
    src, tgt = get_format("qasem_parser").encode(FOX)
    assert src == "Generate QA pairs: The fox <extra_id_0>jumped<extra_id_1> over the fence"
    assert tgt == "who jumped?The fox<extra_id_2>where did someone jump?over the fence"


def test_several_answers_use_the_answer_separator():
    _, tgt = get_format("qasem_parser").encode(UNIVERSE)
    assert tgt == ("what is distributed?matter<extra_id_2>"
                   "where is something distributed?the Universe<extra_id_3>in the Universe")


def test_encode_source_for_raw_text():
    fmt = get_format("klein2022")
    assert fmt.encode_source(["Dogs", "bark"], 1, "verbal", "bark") == \
        "parse: Dogs <extra_id_10> bark <extra_id_10> <extra_id_1> bark"
    typed = get_format({"base": "qasem_parser", "prefix": "Generate QAs for {predicate_type} QASRL: ",
                        "append_verb_form": True, "verb_form_separator": "<extra_id_5>"})
    assert typed.encode_source(["Dogs", "bark"], 1, "verbal", "bark") == \
        "Generate QAs for verbal QASRL: Dogs <extra_id_0>bark<extra_id_1> <extra_id_5> bark"


def test_predicate_type_markers():
    typed = get_format({"base": "klein2022",
                        "predicate_type_markers": {"verbal": "<extra_id_11>", "nominal": "<extra_id_12>"}})
    assert typed.encode(LUKE)[0] == ("parse: The student was interested in Luke 's <extra_id_12> research "
                                     "<extra_id_12> about sea animals . <extra_id_1> research")
    assert "<extra_id_12>" in typed.special_tokens


def test_encode_and_orderings():
    sources, targets = zip(*(get_format("qasem_parser").encode(r) for r in (FOX, LUKE)))
    assert len(sources) == len(targets) == 2 and sources[0].startswith("Generate QA pairs: ")
    by_role = get_format({"base": "qasem_parser", "ordering": "role"})
    _, tgt = by_role.encode(WE)
    assert [p.split("?")[0] for p in tgt.split("<extra_id_2>")] == \
        ["who sees something", "what does someone see", "how does someone see something"]


def test_format_config_round_trip_and_errors(tmp_path):
    for name in PRESETS:
        fmt = get_format(name)
        again = QAFormat.from_dict(json.loads(json.dumps(fmt.to_dict())))
        assert again == fmt and again.encode(FOX) == fmt.encode(FOX)
    with pytest.raises(ValueError, match="klein2022.*qasem_parser"):
        get_format("t5-qa")
    with pytest.raises(ValueError, match="unknown option"):
        QAFormat.from_dict({"name": "x", "colour": "red"})
    with pytest.raises(ValueError, match="ordering"):
        get_format({"base": "klein2022", "ordering": "random"})
    assert get_format("klein2022") is not get_format("klein2022")  # presets are not shared


# ----------------------------------------------------------------------------- decoding

@pytest.mark.parametrize("name", sorted(PRESETS))
def test_round_trip_reproduces_gold_spans(name):
    fmt = get_format(name)
    for rec in FIXTURES:
        _, tgt = fmt.encode(rec)
        res = fmt.decode(tgt, rec["tokens"], rec["predicate_index"], rec["verb_form"])
        assert res.counts() == {"malformed": 0, "unaligned": 0, "invalid_question": 0}
        # identical answer strings ("he", "he") come back as the same spans, in either order
        assert [sorted(q["answers"]) for q in res.qas] == \
            [sorted(q["answers"]) for q in fmt._ordered(rec["qas"])], rec["sentence_id"]
        gold_slots = [(q["slots"], q["is_passive"], q["is_negated"]) for q in fmt._ordered(rec["qas"])]
        assert [(q["slots"], q["is_passive"], q["is_negated"]) for q in res.qas] == gold_slots
        for q in res.qas:
            assert q["question"].endswith("?") and q["answer_texts"]


def test_roundtrip_function_scores_perfectly_on_fixtures():
    from evaluation.roundtrip import roundtrip
    out = roundtrip(FIXTURES, "qasem_parser")
    assert out["ua"]["f1"] == 1.0 and out["la"]["f1"] == 1.0
    assert out["decode"] == {"malformed": 0, "unaligned": 0, "invalid_question": 0}


def test_roundtrip_cli(tmp_path, capsys):
    from evaluation.roundtrip import main
    path = tmp_path / "gold.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in FIXTURES))
    assert main([str(path), "--format", "klein2022", "--protocol", "gs"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ua"]["f1"] == 1.0 and out["protocol"] == "gs" and "decode" in out
    with pytest.raises(SystemExit):
        main([str(path), "--format", "nope"])


def test_tokenizer_artifacts_are_stripped():
    fmt = get_format("klein2022")
    text = "<pad> who _ _ jumped _ _ _ ?<extra_id_7> The fox</s><pad><pad>"
    res = fmt.decode(text, FOX["tokens"], 2, "jump")
    assert [q["answers"] for q in res.qas] == [[[0, 2]]] and res.counts()["malformed"] == 0


@pytest.mark.parametrize("text, counts, n_qas", [
    ("", (0, 0, 0), 0),
    ("who jumped the fox", (1, 0, 0), 0),                                 # no "?" separator
    ("who jumped?<extra_id_2>where did someone jump?over the fence", (1, 0, 0), 1),  # empty answer
    ("?The fox", (1, 0, 0), 0),                                           # empty question
    ("who jumped?The fox<extra_id_3><extra_id_2>", (1, 0, 0), 1),         # empty 2nd answer
    ("who jumped?The cat", (0, 1, 0), 0),                                 # not in the sentence
    ("zzz qqq?The fox", (0, 0, 1), 1),                                    # not a QA-SRL question
    ("who jumped?The fox<extra_id_2>where did some", (1, 0, 0), 1),       # truncated output
    ("who jumped?The fox<extra_id_2>where did someone jump?over the fe", (0, 0, 0), 2),  # truncated word
    ("<extra_id_2><extra_id_2>??<extra_id_3>?", (1, 0, 0), 0),            # garbage
    ("\u00e9\u00e9 ?? <unk> <extra_id_99>", (0, 1, 1), 0),
])
def test_malformed_text_never_raises_and_is_counted(text, counts, n_qas):
    res = get_format("qasem_parser").decode(text, FOX["tokens"], 2, "jump")
    assert (res.malformed, res.unaligned, res.invalid_question) == counts
    assert len(res.qas) == n_qas


def test_decode_never_raises_on_odd_input():
    fmt = get_format("klein2022")
    for text in [None, "<extra_id_7>", "<extra_id_9>" * 5, "?" * 50, "who _ _ ?<extra_id_7>" * 3,
                 "what _ _ jumped _ _ _ ?<extra_id_7>" + "fox " * 100]:
        res = fmt.decode(text, FOX["tokens"], 2, None)
        assert isinstance(res.qas, list)
    assert get_format("qasem_parser").decode("who jumped?The fox", [], 0).unaligned == 1


def test_invalid_question_is_kept_with_fallback_slots():
    res = get_format("qasem_parser").decode("where on earth did it go?over the fence",
                                            FOX["tokens"], 2, "jump")
    assert res.invalid_question == 1 and len(res.qas) == 1
    assert res.qas[0]["slots"]["wh"] == "where" and res.qas[0]["answers"] == [[3, 6]]


# ----------------------------------------------------------------------------- alignment

def test_alignment_prefers_the_span_nearest_the_predicate():
    toks = "the dog saw the cat and the dog ran".split()
    assert Aligner(toks, 8).candidates("the dog") == [(0, 2), (6, 8)]
    res = get_format("qasem_parser").decode("who ran?the dog", toks, 8, "run")
    assert res.qas[0]["answers"] == [[6, 8]]
    res = get_format("qasem_parser").decode("who saw something?the dog", toks, 2, "see")
    assert res.qas[0]["answers"] == [[0, 2]]


def test_alignment_exact_case_first_then_case_insensitive():
    toks = "The fox and the fox".split()
    assert Aligner(toks, 0).candidates("the fox") == [(3, 5)]      # exact case wins
    assert Aligner(toks, 0).candidates("THE FOX") == [(0, 2), (3, 5)]
    res = get_format("qasem_parser").decode("who jumped?THE FOX", FOX["tokens"], 2, "jump")
    assert res.qas[0]["answers"] == [[0, 2]] and res.unaligned == 0


@pytest.mark.parametrize("answer, span", [
    ("don't go", (3, 6)),                  # tokens: do n't go
    ('"Okay"', (7, 10)),                   # tokens: `` Okay ''
    ("Luke's work", (11, 14)),             # tokens: Luke 's work
    ("the U.S. (today)", (15, 20)),        # -LRB- / -RRB-
    ("Garcés", (20, 21)),
    ("garces", (20, 21)),                  # an uncased wordpiece decode drops accents
    ("the u.s . - lrb - today - rrb -", (15, 20)),
    ("do n ' t go", (3, 6)),
    ("Luke <unk> work", (11, 14)),         # <unk> stands for the characters it replaced
    ("the U.S", (15, 17)),                 # a truncated last word snaps to the token
])
def test_alignment_tolerates_whitespace_and_punctuation(answer, span):
    toks = "He said : do n't go , `` Okay '' to Luke 's work in the U.S. -LRB- today -RRB- Garcés".split()
    assert Aligner(toks, 1).candidates(answer) == [span]


def test_alignment_does_not_match_inside_a_token():
    assert Aligner("the foxes ran".split(), 2).candidates("oxes") == []


def test_qa_format_still_exports_the_aligner():
    import models.parser.qa_format as Q

    assert Q.Aligner is Aligner


def test_repeated_answers_of_one_qa_get_distinct_spans():
    fmt = get_format("qasem_parser")
    res = fmt.decode("who was improving something?he<extra_id_3>he", HE["tokens"], 14, "improve")
    assert sorted(res.qas[0]["answers"]) == [[2, 3], [6, 7]]


def test_position_ordering_disambiguates_repeated_mentions():
    # "we" at 2 and 12: the nearer (12) would be wrong; the QA written after it starts at 3, so
    # the position ordering of the format says "we" is the one before it.
    we = dict(WE, qas=WE["qas"][:2])
    fmt = get_format("qasem_parser")
    _, tgt = fmt.encode(we)
    assert tgt == "who sees something?we<extra_id_2>how does someone see something?have to get really high"
    assert fmt.decode(tgt, we["tokens"], 9, "see").qas[0]["answers"] == [[2, 3]]
    as_is = get_format({"base": "qasem_parser", "ordering": "as_is"})
    assert as_is.decode(tgt, we["tokens"], 9, "see").qas[0]["answers"] == [[12, 13]]
    # with the third QA, "how small we are" holds the other "we": no answer nests in another
    _, tgt = as_is.encode(WE)
    assert as_is.decode(tgt, WE["tokens"], 9, "see").qas[0]["answers"] == [[2, 3]]


def test_answers_avoid_nesting_inside_other_answers():
    fmt = get_format("qasem_parser")
    res = fmt.decode("what is distributed?matter<extra_id_2>where is something distributed?"
                     "the Universe<extra_id_3>in the Universe", UNIVERSE["tokens"], 1, "distribute")
    assert res.qas[1]["answers"] == [[12, 14], [4, 7]]


def test_prediction_record_keeps_the_predicate_fields():
    res = get_format("qasem_parser").decode("who jumped?The fox", FOX["tokens"], 2, "jump")
    pred = prediction_record(FOX, res.qas)
    validate_record(pred)
    assert {k: v for k, v in pred.items() if k != "qas"} == {k: v for k, v in FOX.items() if k != "qas"}
    assert pred["qas"][0]["answers"] == [[0, 2]] and FOX["qas"][0]["answers"] == [[0, 2]]


# ----------------------------------------------------------------------------- question slots

@pytest.mark.parametrize("question, verb_form, slots, passive, negated", [
    ("Who jumped?", "jump", S("who", verb="jumped"), False, False),
    ("What did someone research?", "research", S("what", "did", "someone", "research"), False, False),
    ("Where did someone jump?", "jump", S("where", "did", "someone", "jump"), False, False),
    ("How might someone be orientated?", "orientate", S("how", "might", "someone", "be orientated"), True, False),
    ("Who was given something by someone?", "give",
     S("who", "was", verb="given", obj="something", prep="by", obj2="someone"), True, False),
    ("What was someone given?", "give", S("what", "was", "someone", "given"), True, False),
    ("How much did something cost?", "cost", S("how much", "did", "something", "cost"), False, False),
    ("How long has someone been working?", "work", S("how long", "has", "someone", "been working"), False, False),
    ("What is being done?", "do", S("what", "is", verb="being done"), True, False),
    ("Who didn't remove something?", "remove", S("who", "didn't", verb="remove", obj="something"), False, True),
    ("Who did not remove something?", "remove", S("who", "didn't", verb="remove", obj="something"), False, True),
    ("What might not have been given?", "give", S("what", "might", verb="not have been given"), True, True),
    ("What did someone give something to?", "give",
     S("what", "did", "someone", "give", "something", "to"), False, False),
    ("What did someone give someone?", "give", S("what", "did", "someone", "give", obj2="someone"), False, False),
    ("What is something bound to do?", "bind", S("what", "is", "something", "bound", prep="to", obj2="do"), True, False),
    ("Who was forced to do something?", "force", S("who", "was", verb="forced", prep="to do", obj2="something"), True, False),
    ("What did someone go on to do?", "go", S("what", "did", "someone", "go", prep="on to", obj2="do"), False, False),
    ("Where did someone go out of doing something?", "go",
     S("where", "did", "someone", "go", prep="out of doing", obj2="something"), False, False),
    ("Where was someone sent somewhere?", "send", S("where", "was", "someone", "sent", obj2="somewhere"), True, False),
    ("What has someone had?", "have", S("what", "has", "someone", "had"), False, False),
    ("Who has something?", "have", S("who", verb="has", obj="something"), False, False),
    ("What does someone do?", "do", S("what", "does", "someone", "do"), False, False),
    ("Who had to do something?", None, S("who", verb="had", prep="to do", obj2="something"), False, False),
    ("What was re - elected?", "re-elect", S("what", "was", verb="re-elected"), True, False),
    ("what doesn ' t someone say?", "say", S("what", "doesn't", "someone", "say"), False, True),
])
def test_parse_question(question, verb_form, slots, passive, negated):
    parsed = parse_question(question, verb_form)
    assert parsed is not None, question
    assert parsed.slots == slots
    assert (parsed.is_passive, parsed.is_negated) == (passive, negated)


@pytest.mark.parametrize("question", ["", "Who?", "How many someone be aligned toward something?",
                                      "The fox jumped over the fence", "what is the reason for it?",
                                      "who jumped the fence with a pole?", "¿qué?"])
def test_non_template_questions_are_rejected(question):
    assert parse_question(question) is None


def test_slot_string_round_trip():
    for slots in [S("who", verb="researched", obj="something"),
                  S("how much", "might", "someone", "not have been given", "something", "out of doing", "something"),
                  S("where", "didn't", "something", "go", prep="to", obj2="somewhere"),
                  S("what", "is", "something", "bound", prep="to", obj2="do")]:
        text = slots_to_slot_string(slots)
        assert len(text.split()) >= 8 and text.endswith(" ?")
        assert parse_question(text).slots == slots
        assert parse_question(slots_to_question(slots)).slots == slots
    assert slots_to_slot_string(S("who", verb="researched", obj="something")) == "who _ _ researched something _ _ ?"
    assert slots_to_question(S("who", verb="researched", obj="something")) == "Who researched something?"

# The round trip on the real test sets (full, both presets): tests/test_real_data.py::test_format_ceiling
