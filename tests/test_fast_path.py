"""The fast scoring path (models/fast_path.py): which parts it finds in a scorer or pipeline, bf16
autocast keeping the sentence embeddings and the detector's probabilities close to fp32, int8
quantizing the Linear layers, and what it refuses."""
import logging
from types import SimpleNamespace

import numpy as np
import pytest

from models.fast_path import neural_parts, use_precision


@pytest.fixture(scope="module")
def embedder():
    from models.entailment import EmbeddingScorer

    return EmbeddingScorer(batch_size=4)


TEXTS = ["Who joined the CDU? Merkel", "When did someone join something? in 1990", "a", "What was founded? the party"]


def test_parts_are_found_through_the_scorer_and_its_structure(embedder, caplog):
    seq2seq = SimpleNamespace(model=object())  # no bf16 switch: stays fp32, named in the log
    structure = SimpleNamespace(detector=None, parser=seq2seq, embedder=embedder)
    pipe = SimpleNamespace(parser=None, detector=None, scorer=SimpleNamespace(structure=structure, embedding=None))
    assert set(neural_parts(pipe)) == {"scorer.structure.parser", "scorer.structure.embedder"}
    with caplog.at_level(logging.WARNING, logger="models.fast_path"):
        assert use_precision(pipe, "bf16") == ["scorer.structure.embedder"]
    assert "scorer.structure.parser" in caplog.text and embedder.bf16
    use_precision(pipe, "fp32")
    assert not embedder.bf16
    with pytest.raises(ValueError, match="precision"):
        use_precision(pipe, "fp16")


def test_bf16_embeddings_stay_close_to_fp32(embedder):
    exact = np.asarray(embedder.embed(TEXTS))
    embedder.bf16 = True
    try:
        fast = np.asarray(embedder.embed(TEXTS))
    finally:
        embedder.bf16 = False
    assert fast.dtype == exact.dtype == np.float32
    assert (exact * fast).sum(1).min() > 0.99  # unit vectors: the cosine of each text's two embeddings
    assert not np.allclose(exact, fast, atol=1e-7)  # autocast really ran


def test_int8_quantizes_every_linear_layer():
    import torch

    from models.entailment import EmbeddingScorer

    emb = EmbeddingScorer(batch_size=4)
    exact = np.asarray(emb.embed(TEXTS))
    use_precision(SimpleNamespace(embedding=emb), "int8")
    dynamic = torch.ao.nn.quantized.dynamic.Linear
    assert any(isinstance(m, dynamic) for m in emb.model.modules())
    assert not any(type(m) is torch.nn.Linear for m in emb.model.modules())
    assert (exact * np.asarray(emb.embed(TEXTS))).sum(1).min() > 0.85  # lossy: cosines 0.92-0.95 to fp32


def test_auto_is_bf16_only_where_it_is_native(monkeypatch):
    import torch

    from models.fast_path import resolve_precision

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for flag in ("_is_avx512_bf16_supported", "_is_amx_tile_supported"):
        monkeypatch.setattr(torch.cpu, flag, lambda: False)
    assert resolve_precision("auto") == "fp32"  # emulated bf16 would be slower than fp32
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: True)
    assert resolve_precision("auto") == "bf16"
    assert resolve_precision("int8") == "int8"


def test_bf16_asked_for_runs_only_where_it_is_native(monkeypatch, caplog):
    """models/precision.py: a training or checkpoint that asks for bf16 gets fp32 on a CPU without
    AVX512-BF16 / AMX (emulated bf16 ran the detector at 131 s per step), with a warning; bf16 where native."""
    import torch

    from models import precision
    from models.contradiction.pair_encoder import PairEncoder

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for flag in ("_is_avx512_bf16_supported", "_is_amx_tile_supported"):
        monkeypatch.setattr(torch.cpu, flag, lambda: False)
    precision._warn.cache_clear()
    try:
        with caplog.at_level(logging.WARNING):
            assert precision.usable_bf16(True, "trainer.args.bf16") is False
        assert "no AVX512-BF16 or AMX" in caplog.text and "trainer.args.bf16" in caplog.text
        assert precision.usable_bf16(False) is False
        assert PairEncoder(None, None, bf16=True).bf16 is False
        monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: True)
        assert precision.usable_bf16(True) is True and PairEncoder(None, None, bf16=True).bf16 is True
    finally:
        precision._warn.cache_clear()
