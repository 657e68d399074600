"""The contradiction pair encoder (models/contradiction/pair_encoder.py): its inputs and context, train.contradiction
with a tiny random encoder (out-of-fold scores, the stacker over both signals, the saved folder),
evaluation.contradiction's basis and explanations, and a pair with no predicate scored by the encoder."""
import json

import pytest

from parser_helpers import compose_cfg
from test_contradiction import MODELS, _pairs_file

TINY = ("encoder.random_config={model_type: bert, hidden_size: 32, num_hidden_layers: 1, num_attention_heads: 2, "
        "intermediate_size: 37, vocab_size: 30522, max_position_embeddings: 128}")


@pytest.fixture()
def scripted(monkeypatch):
    import models.contradiction as mc
    import models.contradiction.model as mcm
    import train.contradiction.run as tc

    for module in (mc, mcm, tc):
        monkeypatch.setattr(module, "load_components", lambda *a, **k: MODELS)


def _tiny_encoder(**kw):
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from models.model_paths import minilm_path
    from models.contradiction.pair_encoder import PairEncoder

    tok = AutoTokenizer.from_pretrained(minilm_path())
    model = BertForSequenceClassification(BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                                     intermediate_size=37, max_position_embeddings=128))
    return PairEncoder(model, tok, **kw)


def test_context_is_cut_from_the_left_and_fits_max_length():
    enc = _tiny_encoder(context="prompt_prefix", context_words=6, max_length=24)
    pair = {"group": "Please tell me about Merkel", "prefix": "one two three four five six seven eight",
            "a": "She joined the CDU in 1990 .", "b": "She joined the CDU in 1985 ."}
    first, second = enc.segments(pair)
    assert first.endswith("[SEP] She joined the CDU in 1990 .") and second == pair["b"]
    assert "eight" in first and "Please" not in first  # the words nearest the sentence are kept
    (ids,) = enc.encode([pair])
    assert len(ids["input_ids"]) <= 24
    none = _tiny_encoder(context="none")
    assert none.segments(pair) == (pair["a"], pair["b"])
    with pytest.raises(ValueError, match="context"):
        _tiny_encoder(context="paragraph")


def test_scores_do_not_depend_on_batching_or_order():
    enc = _tiny_encoder(context="prompt", batch_size=2)
    pairs = [{"group": "x", "a": "A " * n, "b": "b"} for n in (1, 9, 3, 5, 2)]
    one = [enc.score([p])[0] for p in pairs]
    assert enc.score(pairs) == pytest.approx(one, abs=1e-5)


def test_train_with_an_encoder_then_evaluate(tmp_path, scripted):
    from evaluation.contradiction import run
    from models.contradiction import ContradictionModel
    from train.contradiction import train

    pairs = _pairs_file(tmp_path / "pairs.jsonl")
    big = tmp_path / "big.jsonl"  # a second selection file the encoder also trains on: scored out of fold
    big.write_text("".join(line.replace('"prompt": "', '"prompt": "big ') for line in pairs.read_text().splitlines(True)))
    ckpt = ["parser=P", "detector=D", "entailment=E"]
    over = [*ckpt, f"data.train_file={pairs}", f"selection.files=[{big}]", "cv.folds=2", "cv.C=[1.0]",
            "cv.feature_sets=[numbers,encoder,encoder_numbers]", TINY, "encoder.tokenizer=minilm",
            f"encoder.train_files=[{big}]", "encoder.report_files=[]", "encoder.trainer.args.max_steps=2", "encoder.trainer.args.per_device_train_batch_size=4",
            "encoder.trainer.args.bf16=false", f"analysis_cache={tmp_path / 'cache'}"]
    metrics = train(compose_cfg("train_contradiction", over), tmp_path / "R")
    enc = metrics["encoder"]
    assert enc["folds"] == 2 and set(enc["stages"]) == {"fold0", "fold1", "final"}
    assert {g["feature_set"] for g in metrics["grid"]} == {"numbers", "encoder", "encoder_numbers"}
    assert set(metrics["chosen"]["cv_by_file"]) == {"pairs", "big"}
    rows = [json.loads(x) for x in (tmp_path / "R" / "validation_analysis.jsonl").read_text().splitlines()]
    assert len(rows) == 42 and all(r["encoder_p"] is not None for r in rows)
    assert len(list((tmp_path / "cache").glob("*.jsonl"))) == 2
    # a rerun reuses the finished encoder stages and the cached parse: same figures
    again = train(compose_cfg("train_contradiction", over), tmp_path / "R")
    assert again["chosen"] == metrics["chosen"]

    # the shipped folder, scored with an encoder feature set forced: the encoder scores the no-predicate pair
    model = ContradictionModel.load(tmp_path / "R" / "contradiction")
    forced = train(compose_cfg("train_contradiction", [*over, "cv.feature_sets=[encoder_numbers]"]), tmp_path / "R2")
    assert forced["chosen"]["feature_set"] == "encoder_numbers"
    out = tmp_path / "D"
    summary = run(compose_cfg("eval_contradiction", [*ckpt, f"contradiction={tmp_path / 'R2' / 'contradiction'}",
                                                     f"pairs={pairs}", "html=false", "threshold=0.0"]), out)
    preds = {p["id"]: p for p in map(json.loads, (out / "predictions.jsonl").read_text().splitlines())}
    nopred = preds["nopred"]
    assert nopred["status"] == "no_predicate" and nopred["basis"] == "encoder" and nopred["p_contradiction"] is not None
    assert "no predicate" in nopred["explanation"]
    assert preds["0-c1"]["basis"] == "encoder+alignment" and preds["0-c1"]["explanation"].startswith("aligned facts differ")
    assert summary["basis"] == {"encoder+alignment": 20, "encoder": 1} and summary["auc"] is not None
    assert model.threshold == metrics["chosen"]["threshold"]


def test_encoder_alone_needs_no_parser(tmp_path, monkeypatch):
    import train.contradiction.run as tc
    from evaluation.contradiction import run

    def no_models(*a, **k):
        raise AssertionError("an encoder-only run must not load the detector, parser or entailment classifier")

    monkeypatch.setattr(tc, "load_components", no_models)
    pairs = _pairs_file(tmp_path / "pairs.jsonl")
    over = [f"data.train_file={pairs}", "selection.files=[]", "alignment=false", "cv.folds=2", "cv.C=[1.0]",
            TINY, "encoder.tokenizer=minilm", f"encoder.train_files=[{pairs}]", "encoder.report_files=[]",
            "encoder.trainer.args.max_steps=1", "encoder.trainer.args.bf16=false", f"analysis_cache={tmp_path / 'cache'}"]  # parser & co. unset
    metrics = tc.train(compose_cfg("train_contradiction", over), tmp_path / "R")
    assert metrics["chosen"]["feature_set"] == "encoder" and metrics["scored"] == 21
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("Merkel joined the CDU in 1990. She was elected in 2005.")
    b.write_text("Merkel joined the CDU in 1985.")
    summary = run(compose_cfg("eval_contradiction", [f"contradiction={tmp_path / 'R' / 'contradiction'}",
                                                     f"a={a}", f"b={b}", "html=false"]), tmp_path / "D")
    assert summary["pairs"] == 2 and summary["basis"] == {"encoder": 2}

    # given the components, the flagged pairs are aligned to say which fact conflicts (the score stays the encoder's)
    import models.contradiction as mc
    import models.contradiction.model as mcm
    from test_contradiction import MODELS

    for module in (mc, mcm):
        monkeypatch.setattr(module, "load_components", lambda *a, **k: MODELS)
    out = tmp_path / "D3"
    summary = run(compose_cfg("eval_contradiction", [f"contradiction={tmp_path / 'R' / 'contradiction'}", f"pairs={pairs}",
                                                     "parser=P", "detector=D", "entailment=E", "html=false",
                                                     "threshold=0.0"]), out)
    preds = {p["id"]: p for p in map(json.loads, (out / "predictions.jsonl").read_text().splitlines())}
    assert summary["basis"] == {"encoder": 21}
    assert preds["0-c1"]["conflicts"][0]["b"]["answer"] == "in 1985"
    assert preds["0-c1"]["explanation"].startswith("aligned facts differ")
    assert preds["nopred"]["explanation"].startswith("sentence-level conflict")


def test_encoder_folds_need_two_when_a_selection_file_trains_it(tmp_path, scripted):
    from train.contradiction import train

    pairs = _pairs_file(tmp_path / "pairs.jsonl")
    over = [f"data.train_file={pairs}", "selection.files=[]", "parser=P", "detector=D", "entailment=E", TINY,
            "encoder.tokenizer=minilm", f"encoder.train_files=[{pairs}]", "encoder.folds=1", "encoder.report_files=[]"]
    with pytest.raises(ValueError, match="at least 2 folds"):
        train(compose_cfg("train_contradiction", over), tmp_path / "R")


def test_symmetric_scoring_is_the_mean_of_both_orders(tmp_path):
    from models.contradiction.pair_encoder import PairEncoder

    enc = _tiny_encoder(context="prompt")
    pairs = [{"group": "x", "a": "He won in 1990 .", "b": "He lost in 1991 ."}]
    ab, ba = enc.score(pairs)[0], enc.score([dict(pairs[0], a=pairs[0]["b"], b=pairs[0]["a"])])[0]
    enc.symmetric = True
    assert enc.score(pairs)[0] == pytest.approx((ab + ba) / 2, abs=1e-6)
    enc.save_pretrained(tmp_path / "enc")
    assert PairEncoder.from_pretrained(tmp_path / "enc").symmetric


def test_the_scorer_is_pushed_and_loads_by_hub_id(tmp_path, hub, monkeypatch):
    """hub=push publishes R/contradiction (model + encoder/) with a card; loading the Hub id gives
    the same scores as the local folder."""
    import train.contradiction.run as tc
    from models.contradiction import ContradictionModel, add_encoder_scores, analyse_pairs, encoder_probs

    monkeypatch.setattr(tc, "load_components", lambda *a, **k: pytest.fail("encoder-only: no components"))
    pairs = _pairs_file(tmp_path / "pairs.jsonl")
    over = [f"data.train_file={pairs}", "selection.files=[]", "alignment=false", "cv.folds=2", "cv.C=[1.0]",
            TINY, "encoder.tokenizer=minilm", f"encoder.train_files=[{pairs}]", "encoder.report_files=[]",
            "encoder.trainer.args.max_steps=1", "encoder.trainer.args.bf16=false", "parser=null", "detector=null", "entailment=null",
            "hub=push", "hub.repo_id=test-org/contradiction"]
    metrics = tc.train(compose_cfg("train_contradiction", over), tmp_path / "R")
    assert metrics["hub_url"] and (tmp_path / "R" / "contradiction" / "README.md").exists()
    from data_prep.chatprotect import read_pairs

    rows_pairs = read_pairs(pairs)
    scores = []
    for where in (tmp_path / "R" / "contradiction", "test-org/contradiction"):
        model = ContradictionModel.load(where)
        rows = analyse_pairs(rows_pairs)
        add_encoder_scores(rows, encoder_probs(rows, rows_pairs, model.encoder))
        scores.append(model.probabilities(rows))
    assert scores[0] == pytest.approx(scores[1])


def test_the_gate_parses_only_the_pairs_the_encoder_scores_high(tmp_path, scripted):
    """A stacked model's gate: pairs under it are never parsed and scored with their alignment features
    at the training means; gate=0 parses every pair (the ungated figures); the chosen gate is the
    largest candidate that keeps the CV F1."""
    import models.contradiction as mc
    import models.contradiction.model as mcm
    from evaluation.contradiction import run
    from train.contradiction import train

    pairs = _pairs_file(tmp_path / "pairs.jsonl")
    ckpt = ["parser=P", "detector=D", "entailment=E"]
    over = [*ckpt, f"data.train_file={pairs}", "selection.files=[]", "cv.folds=2", "cv.C=[1.0]",
            "cv.feature_sets=[encoder_numbers]", TINY, "encoder.tokenizer=minilm", f"encoder.train_files=[{pairs}]",
            "encoder.report_files=[]", "encoder.trainer.args.max_steps=1", "encoder.trainer.args.bf16=false", "gate.parsed=[1.0,0.0]",
            "gate.max_f1_loss=1.0"]
    metrics = train(compose_cfg("train_contradiction", over), tmp_path / "R")
    gate = metrics["encoder"]["gate"]
    rows = [json.loads(x) for x in (tmp_path / "R" / "validation_analysis.jsonl").read_text().splitlines()]
    enc = [r["encoder_p"] for r in rows if r["encoder_p"] is not None]
    # all parsed: the lowest encoder P; none: the highest (a pair at it still parsed, 1 of 21)
    assert [c["gate"] for c in gate["candidates"]] == pytest.approx([min(enc), max(enc)])
    assert [c["parsed"] for c in gate["candidates"]] == pytest.approx([1.0, 1 / len(enc)])
    assert gate["candidates"][0]["f1"] == pytest.approx(metrics["chosen"]["cv"]["f1"])  # nothing gated
    model = mc.ContradictionModel.load(tmp_path / "R" / "contradiction")
    assert model.gate == gate["chosen"] == pytest.approx(max(enc))
    model.gate = 1.0  # every pair gated, below
    model.save(tmp_path / "R" / "contradiction")

    parsed = []
    real = mc.analyse_pairs
    monkey = pytest.MonkeyPatch()
    for module in (mc, mcm):
        monkey.setattr(module, "analyse_pairs", lambda ps, *m: parsed.append(len(ps) if m else 0) or real(ps, *m))
    ctr = [f"contradiction={tmp_path / 'R' / 'contradiction'}", f"pairs={pairs}", "html=false", *ckpt]
    try:
        gated = run(compose_cfg("eval_contradiction", ctr), tmp_path / "D1")  # the model's gate 1.0: every pair gated
    finally:
        monkey.undo()
    assert parsed == [0, 0] and gated["parsed"] == 0 and gated["basis"] == {"encoder": 21}
    preds = [json.loads(x) for x in (tmp_path / "D1" / "predictions.jsonl").read_text().splitlines()]
    p = preds[1]
    assert p["conflicts"] == [] and "under the gate" in p["messages"][-1]
    x = [(m if f != "encoder" else mcm.math.log(p["encoder_p"] / (1 - p["encoder_p"]))) for f, m in
         zip(model.features, model.mean)]
    z = ((mcm.np.array(x) - model.mean) / model.std) @ model.coef + model.intercept
    assert p["p_contradiction"] == pytest.approx(1 / (1 + mcm.math.exp(-z)), abs=1e-6)

    exact = run(compose_cfg("eval_contradiction", [*ctr, "gate=0"]), tmp_path / "D0")
    assert exact["gate"] is None and exact["basis"] == {"encoder+alignment": 20, "encoder": 1}


def _staged_run(tmp_path) -> list[str]:
    """Overrides of a train.contradiction run whose tiny encoder trains on a selection file: a copy of the
    validation pairs under other prompts, so that its stages are folds."""
    pairs = _pairs_file(tmp_path / "pairs.jsonl")
    big = tmp_path / "big.jsonl"
    big.write_text("".join(line.replace('"prompt": "', '"prompt": "big ') for line in pairs.read_text().splitlines(True)))
    return ["parser=P", "detector=D", "entailment=E", f"data.train_file={pairs}", f"selection.files=[{big}]",
            "cv.folds=2", "cv.C=[1.0]", "cv.feature_sets=[encoder]", TINY, "encoder.tokenizer=minilm",
            f"encoder.train_files=[{big}]", "encoder.report_files=[]", "encoder.trainer.args.max_steps=2", "encoder.trainer.args.per_device_train_batch_size=4",
            "encoder.trainer.args.bf16=false", f"analysis_cache={tmp_path / 'cache'}"]


def test_stages_train_alone_and_the_run_reloads_them(tmp_path, scripted):
    """encoder.stage=X trains stage X alone (stages at once in separate processes); the plain run then
    reloads every stage and gives what a run that trained them itself gives."""
    from train.contradiction import train

    over = _staged_run(tmp_path)
    with pytest.raises(ValueError, match="encoder.stage=fold7"):
        train(compose_cfg("train_contradiction", [*over, "encoder.stage=fold7"]), tmp_path / "S")
    for stage in ("final", "fold1", "fold0"):
        assert train(compose_cfg("train_contradiction", [*over, f"encoder.stage={stage}"]), tmp_path / "S") == \
            {"encoder_stage": stage}
        assert (tmp_path / "S" / "encoder" / stage / "model").is_dir()
    assert not (tmp_path / "S" / "cv_metrics.json").exists()
    staged = train(compose_cfg("train_contradiction", over), tmp_path / "S")
    whole = train(compose_cfg("train_contradiction", over), tmp_path / "W")
    assert staged["chosen"] == whole["chosen"]
    assert all(s["steps"] == 2 for s in staged["encoder"]["stages"].values())


def test_a_stage_of_other_settings_is_refused_and_stages_from_reuses_another_runs(tmp_path, scripted):
    from train.contradiction import train

    over = [*_staged_run(tmp_path), "encoder.final=fold_ensemble"]
    first = train(compose_cfg("train_contradiction", over), tmp_path / "A")
    with pytest.raises(ValueError, match="max_steps: 2 -> 3"):  # a silent reload would report a 2-step model as 3
        train(compose_cfg("train_contradiction", [*over, "encoder.trainer.args.max_steps=3"]), tmp_path / "A")
    stages = tmp_path / "A" / "encoder"
    stamps = {p: p.stat().st_mtime_ns for p in stages.rglob("model.safetensors")}
    again = train(compose_cfg("train_contradiction", [*over, f"encoder.stages_from={stages}"]), tmp_path / "B")
    assert again["chosen"] == first["chosen"] and not (tmp_path / "B" / "encoder").exists()
    assert {p: p.stat().st_mtime_ns for p in stages.rglob("model.safetensors")} == stamps  # loaded, not trained
    with pytest.raises(ValueError, match="epochs"):
        train(compose_cfg("train_contradiction", [*over, "encoder.trainer.args.num_train_epochs=2", f"encoder.stages_from={stages}"]),
              tmp_path / "C")
    with pytest.raises(FileNotFoundError, match="no finished stage fold0"):
        train(compose_cfg("train_contradiction", [*over, f"encoder.stages_from={tmp_path / 'none'}"]), tmp_path / "D")


def test_fold_ensemble_scores_with_the_fold_encoders_and_trains_no_final_stage(tmp_path, scripted):
    """encoder.final=fold_ensemble: only the fold stages train; validation (never trained on) and the shipped
    folder score with the mean of the fold encoders' P; the folder reloads as the same ensemble."""
    from data_prep.chatprotect import read_pairs
    from models.contradiction import ContradictionModel
    from models.contradiction.pair_encoder import PairEncoder, PairEncoderEnsemble
    from train.contradiction import train

    pairs = _pairs_file(tmp_path / "pairs.jsonl")
    big = tmp_path / "big.jsonl"
    big.write_text("".join(line.replace('"prompt": "', '"prompt": "big ') for line in pairs.read_text().splitlines(True)))
    over = [f"data.train_file={pairs}", f"selection.files=[{big}]", "alignment=false", "cv.folds=2", "cv.C=[1.0]",
            "cv.feature_sets=[encoder]", TINY, "encoder.tokenizer=minilm", f"encoder.train_files=[{big}]",
            "encoder.report_files=[]", "encoder.trainer.args.max_steps=2", "encoder.trainer.args.per_device_train_batch_size=4", "encoder.trainer.args.bf16=false",
            "encoder.final=fold_ensemble", "parser=null", "detector=null", "entailment=null"]
    metrics = train(compose_cfg("train_contradiction", over), tmp_path / "R")
    assert set(metrics["encoder"]["stages"]) == {"fold0", "fold1", "final"}
    assert not (tmp_path / "R" / "encoder" / "final").exists()
    folder = tmp_path / "R" / "contradiction" / "encoder"
    assert sorted(p.name for p in folder.iterdir() if p.is_dir()) == ["member0", "member1"]
    model = ContradictionModel.load(tmp_path / "R" / "contradiction")
    assert isinstance(model.encoder, PairEncoderEnsemble) and len(model.encoder.members) == 2
    val = read_pairs(pairs)
    members = [PairEncoder.from_pretrained(tmp_path / "R" / "encoder" / f"fold{k}" / "model").score(val) for k in (0, 1)]
    expected = [(x + y) / 2 for x, y in zip(*members)]
    assert model.encoder.score(val) == pytest.approx(expected, abs=1e-5)
    rows = [json.loads(x) for x in (tmp_path / "R" / "validation_analysis.jsonl").read_text().splitlines()]
    val_rows = [r for r in rows if r["file"] == "pairs"]
    assert [r["encoder_p"] for r in val_rows] == pytest.approx(expected, abs=1e-5)
    with pytest.raises(ValueError, match="encoder.stage=final"):
        train(compose_cfg("train_contradiction", [*over, "encoder.stage=final"]), tmp_path / "R")
    with pytest.raises(ValueError, match="retrain \\| fold_ensemble"):
        train(compose_cfg("train_contradiction", [*over, "encoder.final=average"]), tmp_path / "R3")


def test_an_ensemble_folder_with_a_member_missing_is_refused(tmp_path):
    import shutil

    from models.contradiction.pair_encoder import PairEncoder, PairEncoderEnsemble

    ens = PairEncoderEnsemble([_tiny_encoder(context="prompt"), _tiny_encoder(context="prompt")])
    ens.save_pretrained(tmp_path / "ens")
    assert isinstance(PairEncoder.from_pretrained(tmp_path / "ens"), PairEncoderEnsemble)
    shutil.rmtree(tmp_path / "ens" / "member1")
    with pytest.raises(FileNotFoundError, match="member1"):
        PairEncoder.from_pretrained(tmp_path / "ens")


def test_the_analysis_cache_knows_a_checkpoint_retrained_into_the_same_folder(tmp_path):
    """A release stage run again writes its model to the same folder: the parse cached with the old one
    must not be read for the new one; a copy of the same files keeps the key."""
    import os

    from train.contradiction.inputs import fingerprint

    ckpt = tmp_path / "runs" / "parser" / "best"
    ckpt.mkdir(parents=True)
    (ckpt / "model.safetensors").write_bytes(b"a" * 200_000)
    (ckpt / "config.json").write_text("{}")
    before = fingerprint(str(ckpt))
    os.utime(ckpt / "model.safetensors", ns=(1, 1))  # a restored snapshot: new mtimes, the same bytes
    assert fingerprint(str(ckpt)) == before
    (ckpt / "model.safetensors").write_bytes(b"a" * 199_999 + b"b")  # retrained: the tail moved
    assert fingerprint(str(ckpt)) != before
    assert fingerprint("org/hub-model") == "org/hub-model" and fingerprint("None") == "None"


GEMMA_TINY = ("encoder.random_config={model_type: gemma3_text, hidden_size: 32, num_hidden_layers: 1, "
              "num_attention_heads: 2, num_key_value_heads: 1, head_dim: 16, intermediate_size: 37, "
              "vocab_size: 262144, max_position_embeddings: 256}")


def test_a_decoder_pair_encoder_with_its_embeddings_frozen(tmp_path, monkeypatch):
    """A causal LM as the pair encoder (Gemma's tokenizer has no separator token: a line break parts the
    context from sentence a) with `encoder.freeze_word_embeddings`: the fold stages train, their settings record
    the flag, the token embeddings stay as built while the rest learns, and the run scores out of fold."""
    import torch

    import train.contradiction.run as tc
    from models.contradiction.pair_encoder import PairEncoder
    from train.contradiction.pair_encoder import SETTINGS_FILE, build_encoder

    monkeypatch.setattr(tc, "load_components", lambda *a, **k: pytest.fail("encoder-only: no components"))
    pairs = _pairs_file(tmp_path / "pairs.jsonl")
    over = [f"data.train_file={pairs}", "selection.files=[]", "alignment=false", "cv.folds=2", "cv.C=[1.0]",
            GEMMA_TINY, "encoder.tokenizer=gemma3_270m", "encoder.freeze_word_embeddings=true", "encoder.context=prompt",
            f"encoder.train_files=[{pairs}]", "encoder.report_files=[]", "encoder.trainer.args.max_steps=2", "encoder.trainer.args.per_device_train_batch_size=4",
            "encoder.trainer.args.bf16=false", f"analysis_cache={tmp_path / 'cache'}"]
    cfg = compose_cfg("train_contradiction", over)
    first, second = build_encoder(cfg.encoder, 0).segments({"prompt": "Merkel", "a": "She won .", "b": "She lost ."})
    assert first == "Merkel\nShe won ." and second == "She lost ."

    metrics = tc.train(cfg, tmp_path / "R")
    assert metrics["chosen"]["feature_set"] == "encoder" and metrics["scored"] == 21
    stage = tmp_path / "R" / "encoder" / "fold0"
    assert json.loads((stage / SETTINGS_FILE).read_text())["freeze_word_embeddings"] is True
    trained = PairEncoder.from_pretrained(stage / "model").model
    fresh = build_encoder(cfg.encoder, int(cfg.seed)).model  # fold 0 trains with the seed + 0
    assert torch.equal(trained.get_input_embeddings().weight, fresh.get_input_embeddings().weight)
    assert not torch.equal(trained.score.weight, fresh.score.weight)
    # the flag is part of what a stage was trained with: the same folder without it is refused
    with pytest.raises(ValueError, match="freeze_word_embeddings"):
        tc.train(compose_cfg("train_contradiction", [o for o in over if "freeze" not in o]), tmp_path / "R")


def test_stage_settings_keep_the_names_stages_were_saved_with():
    """encoder.trainer.args (the HF names) are recorded under the names the finished stages hold, and the weight
    decay, schedule and warmup (once fixed in code) only when they differ from those fixed values: a stage
    trained before the rename still matches, one trained with another weight decay does not."""
    from train.contradiction.pair_encoder import stage_settings

    cfg = compose_cfg("train_contradiction", ["+experiment=contradiction_mpnet"])
    settings = stage_settings(cfg.encoder, [], 13)
    assert set(settings) == {"model", "random_config", "tokenizer", "context", "context_words", "max_length", "epochs",
                             "batch_size", "learning_rate", "max_steps", "bf16", "seed", "pairs", "pairs_sha256"}
    assert (settings["epochs"], settings["batch_size"], settings["learning_rate"]) == (5, 16, 3e-5)
    other = compose_cfg("train_contradiction", ["+experiment=contradiction_mpnet", "encoder.trainer.args.weight_decay=0.0"])
    assert stage_settings(other.encoder, [], 13)["weight_decay"] == 0.0
