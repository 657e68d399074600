"""The classifier families of train.entailment, one class each: conf/classifier/NAME.yaml names its
class by `_target_`, and the entry point instantiates it once (`build_classifier`). A neural family
builds its model and tokenizer, wraps them as its scorer (models.entailment.neural), encodes a training
pair and pads a batch's labels; `Stacked` trains no model of its own (train.entailment.stacker).

Each config keeps its `family` key: it is the name a checkpoint's entailment_format.json records (the
scorer class writes it; models.entailment.neural.SCORER_CLASSES maps it back when loading), and run
directories store it in their configuration. `build_classifier` checks that it names the class's family.
"""
from __future__ import annotations

from omegaconf import DictConfig

from models import entailment as E
from models.model_paths import resolve_model_path


def load_tokenizer(path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path)


class Classifier:
    """What every family's config holds: its name (the run's label) and its family."""
    family: str
    neural: bool

    def __init__(self, name: str, family: str):
        self.name = name  # `family` is the class's own (build_classifier checks the config names it)

    def check(self) -> None:
        """Raise before any training when the model cannot be loaded."""


class Stacked(Classifier):
    """Logistic regression over the QA's signals (train.entailment.stacker): no model of its own."""
    family, neural = "stacked", False
    card_base_model = None


class NeuralClassifier(Classifier):
    """A transformers model fine-tuned as `scorer_class` scores. Subclasses say how a training pair is
    encoded (`encode`), how a batch's labels are padded (`pad_labels`) and what the family needs of the
    model and tokenizer once loaded (`prepare`)."""
    neural = True
    scorer_class: type  # a models.entailment.neural.NeuralScorer subclass
    pretrained_kwargs: dict = {}  # given to from_pretrained, and set on a random model's config

    def __init__(self, name: str, family: str, model_name_or_path: str | None, tokenizer: str | None,
                 random_config: dict | None, max_length: int, chunk_words: int, chunk_overlap: int,
                 top_k_chunks: int | None, lora: dict):
        super().__init__(name, family)
        self.model_name_or_path, self.tokenizer, self.random_config = model_name_or_path, tokenizer, random_config
        self.max_length, self.chunk_words, self.chunk_overlap = max_length, chunk_words, chunk_overlap
        self.top_k_chunks, self.lora = top_k_chunks, dict(lora)

    @property
    def model_class(self):
        """The transformers Auto class that loads this family's model."""
        import transformers

        return getattr(transformers, self.scorer_class.auto_model)

    @property
    def card_base_model(self) -> str | None:
        """The Hub model it starts from, for the model card (none for offline weights)."""
        return None if self.model_name_or_path in (None, "minilm") else self.model_name_or_path

    def check(self) -> None:
        from transformers import AutoConfig

        if self.random_config:
            load_tokenizer(resolve_model_path(self.tokenizer or "minilm"))
            return
        try:
            AutoConfig.from_pretrained(resolve_model_path(self.model_name_or_path))
        except Exception as e:  # no local folder and no Hub: say so before anything runs
            raise ValueError(f"cannot load model {self.model_name_or_path!r} ({type(e).__name__}: {e}); "
                             "give a local folder, 'minilm', or a Hub id on a machine that reaches the Hub") from None

    # ------------------------------------------------------------------------ model
    def build(self, seed: int, init_from: str | None = None):
        """(model, tokenizer): from `init_from` (a checkpoint to continue from), a random model of
        `random_config` (seeded by `seed`), or the pretrained `model_name_or_path`; LoRA when configured."""
        import torch
        from transformers import AutoConfig

        cls = self.model_class
        if init_from:
            tokenizer = load_tokenizer(init_from)
            model = cls.from_pretrained(init_from)
        elif self.random_config:
            tokenizer = load_tokenizer(resolve_model_path(self.tokenizer or "minilm"))
            mconf = AutoConfig.for_model(**self.random_config)
            for k, v in self.pretrained_kwargs.items():
                setattr(mconf, k, v)
            torch.manual_seed(seed)
            model = cls.from_config(mconf)
        else:
            path = resolve_model_path(self.model_name_or_path)
            tokenizer = load_tokenizer(resolve_model_path(self.tokenizer) or path)
            model = cls.from_pretrained(path, **self.pretrained_kwargs)
        self.prepare(model, tokenizer)
        if model.config.pad_token_id is None and tokenizer.pad_token_id is not None:
            model.config.pad_token_id = tokenizer.pad_token_id
        if self.lora["enabled"]:
            from peft import LoraConfig, TaskType, get_peft_model

            lc = self.lora
            model = get_peft_model(model, LoraConfig(task_type=TaskType[self.scorer_class.peft_task], r=lc["r"],
                                                     lora_alpha=lc["alpha"], lora_dropout=lc["dropout"],
                                                     target_modules=list(lc["target_modules"])
                                                     if lc.get("target_modules") else None))
        return model, tokenizer

    def prepare(self, model, tokenizer) -> None:
        """What the family sets on a freshly loaded model and tokenizer."""

    def scorer(self, model, tokenizer, batch_size: int):
        """The family's scorer around `model` (its format is what the checkpoint saves)."""
        return self.scorer_class(model, tokenizer, max_length=self.max_length, chunk_words=self.chunk_words,
                                 chunk_overlap=self.chunk_overlap, batch_size=batch_size,
                                 top_k_chunks=self.top_k_chunks, **self.scorer_kwargs())

    def scorer_kwargs(self) -> dict:
        return {}

    # ------------------------------------------------------------------------ training data
    def encode(self, scorer, premise: str, hypothesis: str, label: int) -> dict:
        """One tokenized training item (input_ids, attention_mask, ..., labels) for a pair that fits."""
        raise NotImplementedError

    def pad_labels(self, labels: list, input_length: int) -> list:
        """A batch's labels as equal-length rows (or one label per item), ready for torch.tensor."""
        raise NotImplementedError


class CrossEncoder(NeuralClassifier):
    """(premise window, hypothesis) as a sentence pair, a two-way classification head."""
    family, scorer_class = "cross_encoder", E.CrossEncoderScorer
    pretrained_kwargs = {"num_labels": 2}

    def prepare(self, model, tokenizer) -> None:
        model.config.id2label, model.config.label2id = {0: "not_supported", 1: "supported"}, \
            {"not_supported": 0, "supported": 1}

    def encode(self, scorer, premise, hypothesis, label):
        enc = scorer.tokenizer(premise, hypothesis, truncation="only_first", max_length=scorer.max_length)
        enc["labels"] = int(label)
        return dict(enc)

    def pad_labels(self, labels, input_length):
        return labels


class Seq2Seq(NeuralClassifier):
    """T5 style: the decoder writes "1" (supported) or "0" (TRUE / MiniCheck)."""
    family, scorer_class = "seq2seq", E.Seq2SeqScorer

    def prepare(self, model, tokenizer) -> None:
        # transformers 5: T5 averages its own loss; do not let the Trainer rescale it
        model.accepts_loss_kwargs = False
        if model.config.decoder_start_token_id is None:
            model.config.decoder_start_token_id = tokenizer.pad_token_id

    def encode(self, scorer, premise, hypothesis, label):
        tok = scorer.tokenizer
        enc = tok(scorer.input_text(premise, hypothesis), truncation=True, max_length=scorer.max_length)
        enc["labels"] = [scorer.yes_id if label else scorer.no_id]
        if tok.eos_token_id is not None:
            enc["labels"].append(tok.eos_token_id)
        return dict(enc)

    def pad_labels(self, labels, input_length):
        m = max(len(row) for row in labels)
        return [row + [-100] * (m - len(row)) for row in labels]


class CausalLM(NeuralClassifier):
    """A decoder LM answering the prompt with " Yes" or " No"; only that token is trained."""
    family, scorer_class = "causal_lm", E.CausalLMScorer

    def __init__(self, *args, prompt: str | None = None, **kw):
        super().__init__(*args, **kw)
        self.prompt = prompt  # None: models.entailment.neural.DEFAULT_PROMPT

    def prepare(self, model, tokenizer) -> None:
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token

    def scorer_kwargs(self) -> dict:
        return {"prompt": self.prompt} if self.prompt else {}

    def encode(self, scorer, premise, hypothesis, label):
        ids = scorer.tokenizer(scorer.input_text(premise, hypothesis), truncation=True,
                               max_length=scorer.max_length - 1)["input_ids"]
        target = scorer.yes_id if label else scorer.no_id
        return {"input_ids": ids + [target], "attention_mask": [1] * (len(ids) + 1), "labels": [-100] * len(ids) + [target]}

    def pad_labels(self, labels, input_length):
        return [row + [-100] * (input_length - len(row)) for row in labels]


FAMILY_CLASSES = {cls.family: cls for cls in (CrossEncoder, Seq2Seq, CausalLM, Stacked)}


def build_classifier(c: DictConfig) -> Classifier:
    """The classifier that cfg.classifier describes: its `_target_` instantiated with the other keys.
    Its `family` must be that class's (the name checkpoints and run directories record)."""
    from hydra.utils import get_class, instantiate

    if "_target_" not in c:
        raise ValueError(f"classifier {c.name!r} has no _target_: each conf/classifier/*.yaml names its family's "
                         "class (train.entailment.families)")
    cls = get_class(c._target_)
    if not (isinstance(cls, type) and issubclass(cls, Classifier)):
        raise ValueError(f"classifier {c.name!r}: _target_ {c._target_} is not a train.entailment.families.Classifier")
    if c.family not in FAMILY_CLASSES:
        raise ValueError(f"unknown classifier family {c.family!r}; expected one of {tuple(FAMILY_CLASSES)}")
    if c.family != cls.family:
        raise ValueError(f"classifier {c.name!r}: family {c.family!r} is not its _target_'s ({c._target_}: "
                         f"{cls.family!r}); set classifier._target_ with it, or choose another classifier=NAME")
    return instantiate(c, _convert_="all")
