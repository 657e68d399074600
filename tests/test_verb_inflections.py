"""Verb forms of realised questions (models/parser/verb_inflections.py, question_templates.inflect):
irregular verbs from the committed Wiktionary table, the corrections of its bad rows, a checkpoint's
seen forms, the regular rules for the rest, and the committed table in step with the resource."""
import pytest

from models.parser.question_templates import inflect, realise
from models.parser.verb_inflections import CLASSES, TABLE, irregular_rows, regular_form, table


@pytest.mark.parametrize("lemma,cls,word", [
    ("spend", "PASTPART", "spent"), ("spend", "PAST", "spent"), ("write", "PASTPART", "written"),
    ("go", "PAST", "went"), ("go", "S3", "goes"), ("begin", "ING", "beginning"), ("stop", "PAST", "stopped"),
    ("buy", "PASTPART", "bought"), ("lead", "PAST", "led"), ("bear", "PAST", "bore"), ("bear", "PASTPART", "borne"),
    ("born", "PASTPART", "born"), ("be", "PASTPART", "been"), ("rise", "PASTPART", "risen"),
    ("die", "ING", "dying"), ("found", "PAST", "founded"),  # regular, and no row needed
    ("blorf", "PAST", "blorfed"), ("glurpy", "S3", "glurpies"),  # unknown verbs: the rules
])
def test_irregular_and_regular_forms(lemma, cls, word):
    assert inflect(lemma, cls) == word


def test_realised_questions_use_the_right_forms():
    assert realise("what|is|_|PASTPART|_|_|_", "spend")["question"] == "What is spent?"
    assert realise("when|was|someone|PASTPART|_|_|_", "born")["question"] == "When was someone born?"
    assert realise("who|_|_|PAST|something|_|_", "write")["question"] == "Who wrote something?"
    assert realise("what|has|someone|PASTPART|_|_|_", "take")["question"] == "What has someone taken?"


def test_a_checkpoint_table_wins_except_over_a_correction():
    seen = {"born": {"PASTPART": "bornt"}, "dream": {"PAST": "dreamt"}}  # as old checkpoints saved them
    assert inflect("born", "PASTPART", seen) == "born"
    assert inflect("dream", "PAST", seen) == "dreamt"
    assert inflect("dream", "PAST") == "dreamed"


def test_the_committed_table_has_only_rows_the_rules_get_wrong():
    rows = table()
    assert 2000 < len(rows) < 5000 and rows["spend"]["PASTPART"] == "spent"
    assert all(any(regular_form(lemma, c) != forms[c] for c in CLASSES) for lemma, forms in rows.items())
    # a lower-cased stem shared by two rows keeps the lower-case row
    kept = irregular_rows([["AND", "ANDs", "ANDing", "ANDed", "ANDed"], ["and", "ands", "anding", "anded", "anded"],
                           ["go", "goes", "going", "went", "gone"], ["walk", "walks", "walking", "walked", "walked"]],
                          regular_form)
    assert kept == [["go", "goes", "going", "went", "gone"]]


def test_the_committed_table_matches_the_resource(data_dir, tmp_path):
    from models.parser.verb_inflections import write_table

    out = tmp_path / "verb_inflections.tsv"
    write_table(data_dir, out)
    assert out.read_text(encoding="utf-8") == TABLE.read_text(encoding="utf-8"), \
        "rebuild it: python -m models.parser.verb_inflections DATA_DIR"
