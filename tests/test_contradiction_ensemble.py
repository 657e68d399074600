"""A seed ensemble of contradiction models (models/contradiction/ensemble.py): written from finished model folders
(python -m train.contradiction ensemble.members=[...]), loaded wherever one model is, and scored by evaluation.contradiction as the mean of
what each member gives alone."""
import json

import pytest

from parser_helpers import compose_cfg
from test_contradiction import _pairs_file
from test_contradiction_encoder import TINY, scripted  # noqa: F401 (the fixture)

CKPT = ["parser=P", "detector=D", "entailment=E"]


def _train(tmp_path, pairs, seed: int):
    from train.contradiction import train

    over = [*CKPT, f"seed={seed}", f"data.train_file={pairs}", "selection.files=[]", "cv.folds=2", "cv.C=[1.0]",
            "cv.feature_sets=[encoder_numbers]", TINY, "encoder.tokenizer=minilm", f"encoder.train_files=[{pairs}]",
            "encoder.report_files=[]", "encoder.trainer.args.max_steps=2", "encoder.trainer.args.per_device_train_batch_size=4", "encoder.trainer.args.bf16=false",
            "gate.parsed=[1.0,0.5]", "gate.max_f1_loss=1.0", f"analysis_cache={tmp_path / 'cache'}"]
    train(compose_cfg("train_contradiction", over), tmp_path / f"R{seed}")
    return tmp_path / f"R{seed}" / "contradiction"


def _predictions(folder):
    return {p["id"]: p for p in map(json.loads, (folder / "predictions.jsonl").read_text().splitlines())}


def test_the_ensemble_scores_the_mean_of_its_members(tmp_path, scripted):  # noqa: F811
    from evaluation.contradiction import run
    from models.contradiction import ContradictionEnsemble, ContradictionModel, load_contradiction_model, write_ensemble

    pairs = _pairs_file(tmp_path / "pairs.jsonl")
    members = [_train(tmp_path, pairs, seed) for seed in (13, 14)]
    alone = []
    for k, m in enumerate(members):  # every pair parsed (gate=0): each member's own P
        run(compose_cfg("eval_contradiction", [*CKPT, f"contradiction={m}", f"pairs={pairs}", "html=false", "gate=0"]),
            tmp_path / f"D{k}")
        alone.append(_predictions(tmp_path / f"D{k}"))

    ens_dir = write_ensemble(tmp_path / "E", members, threshold=0.5, info={"seeds": [13, 14]})
    ens = load_contradiction_model(ens_dir)
    assert isinstance(ens, ContradictionEnsemble) and isinstance(load_contradiction_model(members[0]), ContradictionModel)
    gates = [ContradictionModel.load(m).gate for m in members]
    assert ens.gate == pytest.approx(min(gates)) and ens.threshold == 0.5 and ens.info["seeds"] == [13, 14]

    summary = run(compose_cfg("eval_contradiction", [*CKPT, f"contradiction={ens_dir}", f"pairs={pairs}", "html=false",
                                                     "gate=0"]), tmp_path / "DE")
    both = _predictions(tmp_path / "DE")
    assert summary["threshold"] == 0.5 and set(both) == set(alone[0])
    assert sum(a["p_contradiction"] is not None for a in alone[0].values()) == 21  # the no-predicate pair too
    for pid, p in both.items():
        ps = [a[pid]["p_contradiction"] for a in alone]
        if ps[0] is None:
            assert p["p_contradiction"] is None
            continue
        assert p["p_contradiction"] == pytest.approx(sum(ps) / 2, abs=1e-6)
        assert p["encoder_p"] == pytest.approx((alone[0][pid]["encoder_p"] + alone[1][pid]["encoder_p"]) / 2, abs=1e-6)
        assert p["decision"] == (p["p_contradiction"] >= 0.5) and p["basis"] == alone[0][pid]["basis"]

    # with its gate: the pairs under it are scored without the alignment, by every member
    gated = run(compose_cfg("eval_contradiction", [*CKPT, f"contradiction={ens_dir}", f"pairs={pairs}", "html=false"]),
                tmp_path / "DG")
    assert gated["gate"] == pytest.approx(min(gates)) and gated["pairs"] == summary["pairs"]


def test_an_ensemble_needs_its_members(tmp_path):
    from models.contradiction import load_contradiction_model, write_ensemble

    with pytest.raises(FileNotFoundError, match="not a contradiction checkpoint"):
        write_ensemble(tmp_path / "E", [tmp_path / "nothing"], threshold=0.5)
    (tmp_path / "E").mkdir()
    (tmp_path / "E" / "contradiction_ensemble.json").write_text(json.dumps({"members": ["member0"], "threshold": 0.5}))
    with pytest.raises(FileNotFoundError, match=r"members \['member0'\] have no contradiction.json"):
        load_contradiction_model(tmp_path / "E")
