"""The self-contradiction pair encoder as a QA-entailment feature (models/entailment/contradiction_signal.py):
each QA against its nearest reference sentences, the highest P(contradiction); trained into the stacked
classifier as a CV candidate, saved by reference and rebuilt where the checkpoint loads."""
import json

import numpy as np
import pytest

from models.entailment.contradiction_signal import ContradictionSignal
from test_contradiction_encoder import _tiny_encoder
from test_entailment_structure import REF, Synonyms


class Recorder:
    """A pair encoder that scores a pair by the length of its second sentence and remembers the pairs."""
    symmetric = False

    def __init__(self):
        self.pairs = []

    def score(self, pairs):
        self.pairs += list(pairs)
        return [len(p["b"]) / 100 for p in pairs]


def test_each_qa_meets_its_k_nearest_sentences_and_keeps_the_highest_p():
    rec = Recorder()
    sig = ContradictionSignal(rec, Synonyms(), k=1)
    qas = ["Who signed something? The mayor", "What did someone approve? the budget"]
    out = sig.scores(REF, qas)
    assert [p["b"] for p in rec.pairs] == ["The mayor signed the law .", "The council approved the budget in 2019 ."]
    assert out == [len("The mayor signed the law .") / 100, len("The council approved the budget in 2019 .") / 100]
    assert all(p["prompt"] == "" and p["a"] in qas for p in rec.pairs)
    two = ContradictionSignal(Recorder(), Synonyms(), k=5)  # k beyond the reference: every sentence, the max
    sentences = ["The council approved the budget in 2019 .", "The mayor signed the law ."]
    assert two.scores(REF, qas[:1]) == [max(len(s) for s in sentences) / 100]
    assert two.pairs_scored == 2 and ContradictionSignal(Recorder(), Synonyms()).scores([], qas) == [0.0, 0.0]
    # the similarity alone (the pair encoder not asked): the nearest sentence's cosine, no pair scored
    alone = ContradictionSignal(Recorder(), Synonyms(), k=1)
    sims = alone.features(REF, qas, contradiction=False)
    assert [set(f) for f in sims] == [{"ctr_sent_sim"}] * 2 and alone.pairs_scored == 0
    assert all(-1 - 1e-6 <= f["ctr_sent_sim"] <= 1 + 1e-6 for f in sims)
    with pytest.raises(ValueError, match="k=0"):
        ContradictionSignal(rec, Synonyms(), k=0)


def test_fold_encoders_score_as_their_mean_and_a_missing_folder_is_named(tmp_path):
    for k in (0, 1):
        _tiny_encoder(context="prompt").save_pretrained(tmp_path / f"fold{k}")
    folds = [str(tmp_path / f"fold{k}") for k in (0, 1)]
    sig = ContradictionSignal.from_pretrained(folds, embedder_model=Synonyms(), k=2)
    one = [ContradictionSignal.from_pretrained([f], embedder_model=Synonyms(), k=2).scores(REF, ["Who signed it? The mayor"])
           for f in folds]
    both = ContradictionSignal.from_pretrained(folds, embedder_model=Synonyms(), k=2)
    assert sig.paths == {"encoders": folds, "embedder": "minilm", "k": 2}
    # max over sentences of the mean over folds: between the folds' own maxima, at most their mean
    got = both.scores(REF, ["Who signed it? The mayor"])[0]
    assert min(one)[0] - 1e-6 <= got <= np.mean(one) + 1e-6
    with pytest.raises(FileNotFoundError, match="nowhere"):
        ContradictionSignal.from_pretrained([str(tmp_path / "nowhere")], embedder_model=Synonyms())
    with pytest.raises(ValueError, match="no pair encoder"):
        ContradictionSignal.from_pretrained([], embedder_model=Synonyms())


def test_the_stacked_classifier_tries_it_by_cv_and_rebuilds_it_from_the_checkpoint(tmp_path, monkeypatch):
    import models.entailment.contradiction_signal as cs
    from models.entailment import load_scorer
    from parser_helpers import compose_cfg
    from test_entailment import FIXTURE
    from train.entailment import train

    _tiny_encoder(context="prompt").save_pretrained(tmp_path / "enc")
    real = cs.ContradictionSignal.from_pretrained.__func__

    def with_synonyms(cls, encoders, embedder="minilm", k=3, batch_size=32, embedder_model=None):
        return real(cls, encoders, embedder, k, batch_size, embedder_model=Synonyms())

    monkeypatch.setattr(cs.ContradictionSignal, "from_pretrained", classmethod(with_synonyms))
    overrides = ["classifier=stacked", f"data.train_file={FIXTURE}", "cv.folds=2",
                 f"contradiction_signal.encoders=[{tmp_path / 'enc'}]", "contradiction_signal.embedder=syn"]
    stacked = train(compose_cfg("train_entailment", overrides), tmp_path / "R")["stacked"]
    assert set(stacked["candidates"]) == {"lexical", "with_context", "with_sentence_similarity", "with_contradiction"}
    assert stacked["candidates"]["with_contradiction"]["features"][-2:] == ["ctr_sent_sim", "ctr_max"]
    assert stacked["candidates"]["with_contradiction"]["cv"]["at_0.5"]["overall"]["bacc"] is not None
    fmt = json.loads((tmp_path / "R" / "stacked" / "entailment_format.json").read_text())
    assert (fmt["contradiction"] is not None) == (stacked["chosen"] == "with_contradiction")
    # whichever was chosen, a checkpoint that uses the signal names it and loads it back
    fmt.update(features=fmt["features"] + ["ctr_max"] * ("ctr_max" not in fmt["features"]),
               contradiction={"encoders": [str(tmp_path / "enc")], "embedder": "syn", "k": 2})
    n = len(fmt["features"])
    fmt.update(coef=(fmt["coef"] + [1.0])[:n], mean=(fmt["mean"] + [0.0])[:n], std=(fmt["std"] + [1.0])[:n])
    (tmp_path / "R" / "stacked" / "entailment_format.json").write_text(json.dumps(fmt))
    loaded = load_scorer(tmp_path / "R" / "stacked")
    assert loaded.contradiction.k == 2 and loaded.contradiction.paths["encoders"] == [str(tmp_path / "enc")]
    probs = loaded.score(REF, ["Who signed something? The mayor"], answers=["The mayor"])
    assert 0 < probs[0] < 1 and loaded.stats["contradiction_pairs"] == 2
    with pytest.raises(ValueError, match="ctr_max.*pair encoder"):
        from models.entailment import StackedScorer
        StackedScorer(["lex_raw", "ctr_max"])
