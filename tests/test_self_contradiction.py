"""The self-contradiction loop's logic (models/self_contradiction), with the scripted detector and parser of
tests/test_contradiction.py standing in for trained models: pairs within a text, trigger requests and the
reasons an alternative is refused, delete mitigation (an adjunct removed, a core argument or a sentence-level
conflict dropped, an unflagged sentence never touched), the measures, the release resolution and the input
readers. The real models and the real language model run in tests/test_self_contradiction_e2e.py."""
from __future__ import annotations

import json
import math

import pytest

from models.generate.base import Generation
from models.self_contradiction.components import ReleaseConfigError, model_paths
from models.self_contradiction.detect import ContradictionScorer, within_text_pairs
from models.self_contradiction.loop import LoopSettings, complete_sentences, self_contradiction_loop
from models.self_contradiction.mitigate import delete_spans, removable
from models.self_contradiction.texts import analyse_texts
from models.self_contradiction.trigger import TriggerSettings, alternative, requests_for, withheld_qas
from test_contradiction import MODELS

DETECTOR, PARSER, ENTAILMENT, EMBEDDER = MODELS


def scorer():
    from models.contradiction import ContradictionModel

    model = ContradictionModel(["aligned_numbers_differ"], coef=[4.0], intercept=-2.0, mean=[0.0], std=[1.0])
    return ContradictionScorer(model, ENTAILMENT, EMBEDDER)


TEXT = {"id": "merkel", "prompt": "Please tell me about Merkel",
        "text": "Merkel joined the CDU in 1990. She was elected in 2005. Merkel joined the CDU in 1985."}


def test_pairs_within_a_text_are_the_sentences_whose_qas_align():
    (t,) = analyse_texts([TEXT], DETECTOR, PARSER)
    pairs = within_text_pairs(t)
    assert [(p["sentence"], p["other"]) for p in pairs] == [(2, 0)]  # "elected" shares no predicate
    (scored,) = scorer().score(pairs)
    assert scored["decision"] and scored["conflicts"][0]["role"] == "when"
    assert scored["prefix"] == "Merkel joined the CDU in 1990. She was elected in 2005."


def test_delete_removes_the_conflicting_adjunct_and_nothing_else():
    res = self_contradiction_loop([TEXT], scorer(), DETECTOR, PARSER, None, LoopSettings(mitigation="delete"))
    (fix,) = res["fixes"]
    assert (fix.index, fix.action) == (2, "edited") and fix.revised == ["Merkel", "joined", "the", "CDU", "."]
    assert res["revised"][0].text == "Merkel joined the CDU in 1990. She was elected in 2005. Merkel joined the CDU."
    m = res["metrics"]
    assert m["sentences"] == 3 and m["self_contradiction_rate"] == pytest.approx(1 / 3)
    assert m["mitigation_removed"] == 1.0 and m["sentences_edited"] == 1
    # 7 QAs are not in conflict (3 + 2 + 2); the edited sentence keeps "who" but the scripted parser reads an
    # object only before "in", so its "what" is lost
    assert m["qas_nonconflicting"] == 7 and m["qas_kept"] == 6


def test_a_core_conflict_drops_the_sentence_and_none_leaves_the_text_alone():
    text = {**TEXT, "text": "Merkel joined the CDU in 1990. Merkel joined the SPD in 1990."}
    core = scorer()
    core.model.features, core.model.coef = ["aligned_disjoint"], core.model.coef  # disjoint R1 answers flag it
    res = self_contradiction_loop([text], core, DETECTOR, PARSER, None, LoopSettings(mitigation="delete"))
    assert [(f.index, f.action) for f in res["fixes"]] == [(1, "dropped")]
    assert "core argument" in res["fixes"][0].reason
    assert res["revised"][0].text == "Merkel joined the CDU in 1990."
    none = self_contradiction_loop([text], core, DETECTOR, PARSER, None, LoopSettings(mitigation="none"))
    assert none["fixes"] == [] and none["revised"][0].text == "Merkel joined the CDU in 1990. Merkel joined the SPD in 1990."
    assert none["metrics"]["mitigation_removed"] is None and none["metrics"]["informativeness_kept"] == 1.0


def test_delete_spans_tidies_commas_and_capitals():
    assert delete_spans("In 1815 , Ada was born in London .".split(), [(0, 2)]) == "Ada was born in London .".split()
    assert delete_spans("Ada was born , in 1815 , in London .".split(), [(4, 6)]) == "Ada was born , in London .".split()
    assert removable("when") and removable("where_from") and not removable("R1") and not removable("how much")
    assert removable("R1", "in 1815") and not removable("R0", "in the morning") and not removable("R1", "the CDU")


class ScriptedGenerator:
    """A generator's interface with fixed answers per request ending; `chat` as given."""

    def __init__(self, answers, chat=False):
        self.answers, self.chat, self.name = answers, chat, "scripted"

    def generate(self, prompts, settings=None):
        out = []
        for p in prompts:
            a = next((v for k, v in self.answers.items() if p.endswith(k)), "")
            out.append(Generation(None, status="error", error="down") if a is None else Generation(a))
        return out

    def log_likelihood(self, texts):
        return [(-2.0 * len(t.split()), len(t.split())) for t in texts]


def test_trigger_builds_the_cloze_and_refuses_with_reasons():
    (t,) = analyse_texts([TEXT], DETECTOR, PARSER)
    reqs, without = requests_for([t], chat=False, settings=TriggerSettings())
    assert without == 0
    # the object is withheld where there is one, else the time
    assert [(r["cloze"], r["qa"]["role"]) for r in reqs] == [("Merkel joined", "R1"), ("She was elected", "when"),
                                                             ("Merkel joined", "R1")]
    assert reqs[2]["request"] == ("Please tell me about Merkel\n\nMerkel joined the CDU in 1990. She was elected in 2005. "
                                  "Merkel joined")
    req = {"cloze": "Merkel joined"}
    assert alternative(req, " the SPD in 1987. She left.", False, "p")[0] == "Merkel joined the SPD in 1987 .".split()
    assert alternative(req, None, False, "p")[1] == "generation_failed"
    assert alternative(req, "   ", False, "p")[1] == "empty"
    assert alternative(req, ".", False, "p")[1] == "empty"
    assert alternative(req, "Please tell me about Merkel and more", False, "Please tell me about Merkel")[1] == "prompt_echoed"
    assert alternative(req, " Партию в 1987 году вступила.", False, "p")[1] == "non_english"
    assert alternative(req, "Merkel joined the SPD. She left.", True, "p")[1] == "several_sentences"
    assert alternative(req, '"Merkel joined the SPD in 1987."', True, "p")[0][:3] == ["Merkel", "joined", "the"]


def test_the_loop_with_a_generator_counts_what_it_refused():
    gen = ScriptedGenerator({"2005. Merkel joined": " something blue.", "Merkel joined": " the CDU in 1989.",
                             "She was elected": " in 2003."})
    res = self_contradiction_loop([TEXT], scorer(), DETECTOR, PARSER, gen, LoopSettings(mitigation="delete"))
    m = res["metrics"]
    assert m["pairs"]["trigger"] == 2 and m["alternatives"]["requested"] == 3
    assert m["alternatives_refused"] == {"different_fact": 1}  # "joined something blue" states no object
    assert m["self_contradictory_sentences"] == 3  # 0 and 1 against their alternatives, 2 against sentence 0
    assert m["perplexity_original"] == pytest.approx(7.389, abs=1e-3)
    down = ScriptedGenerator({"": None})
    res = self_contradiction_loop([TEXT], scorer(), DETECTOR, PARSER, down, LoopSettings(mitigation="none"))
    assert res["metrics"]["alternatives_refused"] == {"generation_failed": 3}


def test_withheld_qas_prefer_the_object_then_time():
    qas = [{"role": r, "predicate_index": 1, "answer_span": s} for r, s in
           [("R0", [0, 1]), ("when", [4, 6]), ("R1", [2, 4])]]
    assert [q["role"] for q in withheld_qas(qas, "all")] == ["R1", "when"]
    assert [q["role"] for q in withheld_qas(qas, "main")] == ["R1"]


def test_complete_sentences_drops_a_cut_off_tail():
    assert complete_sentences("He was born in 1815. He was the first king of the Maced") == "He was born in 1815."
    assert complete_sentences("One sentence.") == "One sentence."


def test_the_release_names_the_models_and_a_given_path_wins(tmp_path):
    from models.release import ReleaseError

    names = ("parser", "detector", "entailment", "contradiction")
    for name in names:
        (tmp_path / "m" / "models" / name).mkdir(parents=True)
    (tmp_path / "m" / "manifest.json").write_text(json.dumps(
        {"models": {n: {"path": f"models/{n}", "files": {}} for n in names}}))
    assert model_paths(str(tmp_path / "m"), {})["contradiction"] == str(tmp_path / "m" / "models" / "contradiction")
    assert model_paths(str(tmp_path / "m"), {"parser": "/elsewhere"})["parser"] == "/elsewhere"
    (tmp_path / "m" / "models" / "detector").rmdir()
    with pytest.raises(ReleaseError, match="detector"):
        model_paths(str(tmp_path / "m"), {})
    with pytest.raises(ReleaseConfigError, match="release=DIR"):
        model_paths(None, {"parser": "p"})


def test_input_readers_name_bad_lines(tmp_path):
    from data_prep.records import DataFormatError
    from evaluation.self_contradiction_inputs import read_prompts, read_texts, read_topics

    f = tmp_path / "texts.jsonl"
    f.write_text('{"id": "a", "prompt": "p", "text": "t"}\nnot json\n{"id": "a", "text": "u"}\n{"text": 3}\n')
    with pytest.raises(DataFormatError) as err:
        read_texts(f)
    assert f"{f}:2: not valid JSON" in str(err.value) and f"{f}:3: id 'a' repeats" in str(err.value)
    assert f"{f}:4: expected an object" in str(err.value)
    topics = tmp_path / "topics.txt"
    topics.write_text("Ada Lovelace\n\n# a comment\nAlexander the Great\n")
    rows, skipped = read_topics(topics)
    assert [r["prompt"] for r in rows] == ["Please tell me about Ada Lovelace", "Please tell me about Alexander the Great"]
    assert skipped == {"blank_or_comment": 2}
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text('{"prompt": "P1", "orig": "a"}\n{"prompt": "P1"}\n{"prompt": "P2"}\n')
    rows, skipped = read_prompts(pairs)
    assert [r["prompt"] for r in rows] == ["P1", "P2"] and skipped == {"repeated_prompt": 1}


def test_a_repeated_sentence_reuses_its_first_alternative():
    text = {**TEXT, "text": "Merkel joined the CDU in 1990. Merkel joined the CDU in 1990. She was elected in 2005."}
    asked = []

    class Counting(ScriptedGenerator):
        def generate(self, prompts, settings=None):
            asked.extend(prompts)
            return super().generate(prompts, settings)

    gen = Counting({"Merkel joined": " the CDU in 1989.", "She was elected": " in 2003."})
    res = self_contradiction_loop([text], scorer(), DETECTOR, PARSER, gen, LoopSettings(mitigation="delete"))
    a = res["metrics"]["alternatives"]
    assert a["requested"] == 3 and a["asked"] == 2 and a["reused_for_repeated_sentences"] == 1
    # both copies are judged against the same alternative, and both are mitigated
    assert res["metrics"]["self_contradictory_sentences"] == 3
    assert [f.action for f in res["fixes"]] == ["edited", "edited", "edited"]


def test_perplexity_skips_empty_texts_without_shifting_the_others():
    gen = ScriptedGenerator({"": " nothing."})
    rows = [{"id": "empty", "prompt": "p", "text": ""}, TEXT]
    res = self_contradiction_loop(rows, scorer(), DETECTOR, PARSER, gen, LoopSettings(mitigation="delete"))
    assert res["metrics"]["perplexity_original"] == pytest.approx(7.389, abs=1e-3)
    assert res["metrics"]["perplexity_revised"] == pytest.approx(7.389, abs=1e-3)


def test_a_revision_must_keep_the_rest_of_the_sentence():
    from models.self_contradiction.mitigate import revision

    original = "Ballance is a small town with a population of 1,000 people .".split()
    keep = {"ballance", "is", "small", "town", "population"}
    assert revision("the same.", False, original, keep) == (None, "lost_content")
    assert revision("Ballance is a small town.", False, original, keep)[0] == "Ballance is a small town .".split()
    assert revision("Ballance is a small town with a population of 1,000 people.", False, original, keep)[1] == "unchanged"


def chat_prompts():
    """conf/chat_prompts/chatprotect.yaml as the loop gets it."""
    import hydra
    from parser_helpers import compose_cfg

    return hydra.utils.instantiate(compose_cfg("eval_self_contradiction", []).chat_prompts)


class SeededChat:
    """A chat reviser whose answer depends on the sampling seed only (candidate k of a round gets seed k)."""
    chat, name = True, "seeded"

    def __init__(self, by_seed):
        self.by_seed, self.asked = by_seed, []

    def generate(self, prompts, settings=None):
        self.asked += [(settings.seed, p) for p in prompts]
        return [Generation(self.by_seed.get(settings.seed, "")) for _ in prompts]

    def log_likelihood(self, texts):
        return [(-2.0 * len(t.split()), len(t.split())) for t in texts]


def test_fact_revise_asks_for_the_draft_and_keeps_the_first_candidate_that_passes():
    from models.generate.base import SamplingSettings
    from models.self_contradiction.fact_revise import FactReviseSettings

    gen = SeededChat({0: "Merkel joined the CDU in 1985 and stayed .", 1: "Merkel joined the CDU."})
    settings = LoopSettings(mitigation="revise", within=True, revise_strategy="fact", rounds=1,
                            trigger=TriggerSettings(chat_prompts=chat_prompts()), revise_sampling=SamplingSettings(),
                            fact=FactReviseSettings(candidates=3, keep_qas=0.5, max_perplexity_increase=0.1))
    res = self_contradiction_loop([TEXT], scorer(), DETECTOR, PARSER, None, settings, reviser=gen)
    (fix,) = res["fixes"]
    assert (fix.index, fix.action, fix.revised) == (2, "revised", "Merkel joined the CDU .".split())
    # candidate 0 still states 1985 (refused, still in conflict); candidate 1 passes; candidate 2 is never asked
    assert [s for s, _ in gen.asked] == [0, 1]
    ask = gen.asked[0][1]
    assert ask[0]["role"] == "system" and [m["role"] for m in ask[1:]] == ["user", "assistant"] * 3 + ["user"]
    assert 'Information to remove: "in 1985"' in ask[-1]["content"]
    assert "Draft with it removed: Merkel joined the CDU." in ask[-1]["content"]
    assert [r["refused"] for r in res["revise_requests"]] == ["still_conflicts", None]
    m = res["metrics"]
    assert m["removed_by_revision"] == 1.0 and m["removed_by_deletion"] == 0.0


def test_fact_revise_refuses_a_less_fluent_candidate_and_drops_after_its_rounds():
    from models.generate.base import SamplingSettings
    from models.self_contradiction.fact_revise import FactReviseSettings

    class Disfluent(SeededChat):  # the revision's words are less likely than the original's
        def log_likelihood(self, texts):
            return [(-(3.0 if "CDU ." in t or t.endswith("CDU.") else 2.0) * len(t.split()), len(t.split())) for t in texts]

    gen = Disfluent({0: "Merkel joined the CDU."})
    settings = LoopSettings(mitigation="revise", revise_strategy="fact", rounds=2,
                            trigger=TriggerSettings(chat_prompts=chat_prompts()), revise_sampling=SamplingSettings(),
                            fact=FactReviseSettings(candidates=1, max_perplexity_increase=0.1))
    res = self_contradiction_loop([TEXT], scorer(), DETECTOR, PARSER, None, settings, reviser=gen)
    (fix,) = res["fixes"]
    assert fix.action == "dropped" and fix.rounds == 2
    assert res["metrics"]["revisions_refused"] == {"empty": 1, "perplexity": 1}  # round 2's seed answers nothing


def test_fact_revise_draft_first_keeps_the_rule_made_draft_without_asking_the_model():
    from models.generate.base import SamplingSettings
    from models.self_contradiction.fact_revise import FactReviseSettings

    gen = SeededChat({0: "Merkel joined the CDU in 1985 and stayed ."})
    settings = LoopSettings(mitigation="revise", revise_strategy="fact", rounds=1,
                            trigger=TriggerSettings(chat_prompts=chat_prompts()), revise_sampling=SamplingSettings(),
                            fact=FactReviseSettings(candidates=1, draft_first=True))
    res = self_contradiction_loop([TEXT], scorer(), DETECTOR, PARSER, None, settings, reviser=gen)
    (fix,) = res["fixes"]
    assert (fix.action, fix.revised, fix.reason) == ("revised", "Merkel joined the CDU .".split(), "the rule-made draft")
    assert gen.asked == []  # the draft passed every check: no model call
    (req,) = res["revise_requests"]
    assert (req["id"].endswith("/s2/draft"), req["request"], req["refused"]) == (True, None, None)
    assert res["metrics"]["revisions_accepted"] == {"draft": 1} and res["metrics"]["removed_by_revision"] == 1.0


def test_fact_revise_a_refused_draft_falls_back_to_the_model():
    from models.generate.base import SamplingSettings
    from models.self_contradiction.fact_revise import FactReviseSettings

    # keep_qas 1.0: the draft "Merkel joined the CDU." loses the scripted parser's "what" (read before "in" only)
    gen = SeededChat({0: "Merkel joined the CDU in Bonn."})
    settings = LoopSettings(mitigation="revise", revise_strategy="fact", rounds=1,
                            trigger=TriggerSettings(chat_prompts=chat_prompts()), revise_sampling=SamplingSettings(),
                            fact=FactReviseSettings(candidates=1, keep_qas=1.0, draft_first=True))
    res = self_contradiction_loop([TEXT], scorer(), DETECTOR, PARSER, None, settings, reviser=gen)
    assert [(r["id"].rsplit("/", 1)[1], r["refused"]) for r in res["revise_requests"]] == [("draft", "lost_qas"),
                                                                                             ("r1c0", None)]
    (fix,) = res["fixes"]
    assert (fix.revised, fix.reason) == ("Merkel joined the CDU in Bonn .".split(), "revised by the model (fact)")
    assert res["metrics"]["revisions_accepted"] == {"model": 1}


def test_remove_main_takes_only_each_pairs_primary_conflict():
    from models.self_contradiction.fact_revise import answers_to_remove

    a = lambda span, ans: {"span": span, "answer": ans}
    pair = {"conflicts": [{"a": a([4, 6], "in 1985"), "b": {"answer": "in 1990"}},
                          {"a": a([2, 4], "the CDU"), "b": {"answer": "in 1990"}},
                          {"a": a([0, 1], "Merkel"), "b": {"answer": "Kohl"}}]}
    assert [x["answer"] for x in answers_to_remove([pair], "aligned")] == ["the CDU", "in 1985"]
    assert [x["answer"] for x in answers_to_remove([pair], "main")] == ["in 1985"]
    with pytest.raises(ValueError, match="revise.remove='all'"):
        from models.self_contradiction.fact_revise import FactReviseSettings
        FactReviseSettings(remove="all")


def test_perplexity_in_context_is_the_texts_tokens_given_the_prompt_and_prefix():
    from models.self_contradiction.fact_revise import context_of, sentence_perplexity

    class Words:  # each word costs its length in nats: a word's cost does not depend on what precedes it
        def log_likelihood(self, texts):
            return [(-float(sum(len(w) for w in t.split())), len(t.split())) for t in texts]

    (t,) = analyse_texts([TEXT], DETECTOR, PARSER)
    ctx = context_of(t, 2, "prefix")
    assert ctx == "Please tell me about Merkel\n\nMerkel joined the CDU in 1990. She was elected in 2005."
    assert context_of(t, 2, "sentence") is None
    # given its context, "a bb" costs 1 + 2 nats over 2 words, as alone
    assert sentence_perplexity(Words(), ["a bb"], [ctx]) == pytest.approx(sentence_perplexity(Words(), ["a bb"]))
    assert sentence_perplexity(Words(), ["a bb"], [ctx])[0] == pytest.approx(math.exp(1.5))
    assert sentence_perplexity(Words(), ["a bb"], [""])[0] == pytest.approx(math.exp(1.5))  # no context: alone


def test_other_qas_leave_out_answers_that_hold_a_removed_one():
    from models.self_contradiction.fact_revise import other_qa_keys

    q = lambda span, ans, role: {"answer_span": span, "answer": ans, "role": role, "verb_form": "go",
                                 "predicate_type": "verbal"}
    qas = [q([0, 2], "Siles Zuazo", "R0"), q([5, 11], "following a military coup in 1964", "when"),
           q([10, 11], "1964", "when")]
    assert other_qa_keys(qas, [{"span": [10, 11], "answer": "1964"}]) == {("go", "verbal", "R0", "siles zuazo")}
