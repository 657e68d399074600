"""ChatProtect's prompts for a chat model (conf/chat_prompts/chatprotect.yaml, models/self_contradiction/prompts.py):
the messages each step sends, and a prompts file that lacks a step is refused by name."""
import math

import hydra
import pytest

from models.generate.base import yes_no_share
from models.self_contradiction.prompts import ChatPrompts
from parser_helpers import compose_cfg


@pytest.fixture(scope="module")
def prompts() -> ChatPrompts:
    return hydra.utils.instantiate(compose_cfg("eval_self_contradiction", []).chat_prompts)


def test_gen_sentence_withholds_the_object_after_three_demonstrations(prompts):
    m = prompts.gen_sentence_messages("Please tell me about Ada Lovelace", "", "Ada Lovelace", "was born in")
    assert [x["role"] for x in m] == ["system"] + ["user", "assistant"] * 3 + ["user"]
    assert "(Douglas Adams; most famous work is; _)" in m[1]["content"]
    last = m[-1]["content"]
    assert "description about Ada Lovelace:" in last and "(Ada Lovelace; was born in; _)" in last
    assert "There is no preceding description." in last  # no text before the sentence


def test_revise_and_detect_carry_the_context(prompts):
    r = prompts.revise_messages("Please tell me about Ada", "Ada was a mathematician.", "She was born in 1815.",
                                "She was born in 1816.")
    assert len(r) == 1 and all(s in r[0]["content"] for s in ("Ada was a mathematician.", "She was born in 1815.",
                                                               "She was born in 1816.", "Remove the conflicting"))
    d = prompts.detect_messages("Please tell me about Ada", "", "A.", "B.", explanation="They differ.")
    assert [x["role"] for x in d] == ["user", "assistant", "user"] and "Yes or No" in d[-1]["content"]
    assert prompts.generate_messages("Please tell me about Ada")[0]["role"] == "system"


def test_a_prompts_file_without_a_step_is_refused():
    with pytest.raises(ValueError, match="chat_prompts.revise lacks user"):
        ChatPrompts(gen_sentence={"system": "", "user": "", "demonstrations": []},
                    detect={"explain": "", "conclude": ""}, revise={})


def test_yes_no_share_sums_the_spellings():
    lp = {"Yes": math.log(0.3), " yes": math.log(0.1), "No": math.log(0.2), "Maybe": math.log(0.4)}
    assert yes_no_share(lp) == pytest.approx(0.4 / 0.6)
    assert yes_no_share({"Maybe": 0.0}) is None
