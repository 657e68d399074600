"""A tiny release folder of real checkpoint kinds with random weights (a span parser, a predicate detector, a
stacked lexical entailment scorer, a contradiction model on the QA alignment), for tests of
evaluation.self_contradiction that need no trained model: every part loads and runs as a user's would, only
the weights are random, so the tests check the loop and its files, not the figures."""
from __future__ import annotations

import json
from pathlib import Path

TINY_BERT = dict(model_type="bert", hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=37,
                 max_position_embeddings=512)
TEMPLATES = ["who|_|_|PAST|something|_|_", "what|did|someone|STEM|_|_|_", "when|was|someone|PASTPART|_|_|_",
             "where|did|someone|STEM|_|_|_", "how|did|someone|STEM|_|_|_"]


def tiny_release(folder: Path, seed: int = 0) -> Path:
    import torch
    from transformers import AutoConfig, AutoModel, AutoTokenizer, BertConfig, BertForTokenClassification

    from models.contradiction import ContradictionModel
    from models.entailment import save_format
    from models.model_paths import minilm_path
    from models.parser.span import PARSER_FILE, SpanParserConfig, SpanParserModel
    from models.parser.span_features import marker_tokens, prepare_tokenizer
    from models.predicates.detector import PredicateDetector, VerbForms

    torch.manual_seed(seed)
    folder = Path(folder)
    tok = AutoTokenizer.from_pretrained(minilm_path())
    markers = marker_tokens(tok)
    prepare_tokenizer(tok, markers)
    enc = dict(TINY_BERT)
    encoder = AutoModel.from_config(AutoConfig.for_model(enc.pop("model_type"), vocab_size=len(tok), **enc),
                                    add_pooling_layer=False)
    config = SpanParserConfig(encoder=encoder.config.to_dict(), max_span_width=6, span_hidden=16, templates=TEMPLATES,
                              threshold=0.5, max_subwords=256, markers=markers, pad_token_id=tok.pad_token_id)
    parser = SpanParserModel(config, encoder=encoder)
    with torch.no_grad():
        parser.span_mlp[-1].bias.fill_(0.0)  # about half the spans pass 0.5: the loop gets QAs to work on
    parser.save_pretrained(folder / "parser")
    tok.save_pretrained(folder / "parser")
    (folder / "parser" / PARSER_FILE).write_text(json.dumps({"kind": "span"}))

    det_tok = AutoTokenizer.from_pretrained(minilm_path())
    det = BertForTokenClassification(BertConfig(vocab_size=det_tok.vocab_size, num_labels=2,
                                                **{k: v for k, v in TINY_BERT.items() if k != "model_type"}))
    PredicateDetector(det, det_tok, VerbForms({"spent": "spend", "born": "bear"}, {}),
                      {"verbal": 0.5, "nominal": 1.01}, device="cpu").save_pretrained(folder / "detector")

    save_format(folder / "entailment", {"family": "stacked", "features": ["lex_content"], "coef": [4.0],
                                        "intercept": -2.0, "mean": [0.0], "std": [1.0]})
    ContradictionModel(["aligned_disjoint", "aligned_numbers_differ"], coef=[2.0, 2.0], intercept=-1.0,
                       mean=[0.0, 0.0], std=[1.0, 1.0], threshold=0.5).save(folder / "contradiction")
    write_manifest(folder)
    return folder


def write_manifest(folder: Path) -> None:
    """manifest.json as bash scripts/release.sh writes it: each model's folder and its files' sha256."""
    from data_prep.checksums import sha256_of

    models = {}
    for name in ("parser", "detector", "entailment", "contradiction"):
        files = sorted(p for p in (folder / name).rglob("*") if p.is_file())
        models[name] = {"path": name, "files": {str(p.relative_to(folder)): {"sha256": sha256_of(p), "size": p.stat().st_size}
                                                for p in files}}
    (folder / "manifest.json").write_text(json.dumps({"profile": "test", "models": models}))
