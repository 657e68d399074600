"""The HF Seq2SeqTrainer with the parser's needs: answer-copy constrained generation during
evaluation, a stop with the step number on divergence (train/divergence.py), and the text format saved into
every checkpoint (so any checkpoint-N folder can be evaluated or published)."""
from __future__ import annotations

import warnings

import torch
from transformers import DataCollatorForSeq2Seq, Seq2SeqTrainer

from models.parser import QASemParser
from train.divergence import StopOnNonFiniteLoss


# EncoderDecoderModel.forward warns on every call that passes labels, unconditionally (a note on a
# change made in transformers 4.12; nothing a caller can do makes it stop). It says nothing about
# this run, so it is silenced here, by its exact text.
warnings.filterwarnings("ignore", message="Version v4.12.0 introduces a better way to train encoder-decoder",
                        category=FutureWarning)


class IndexedCollator:
    """DataCollatorForSeq2Seq that carries an `idx` column (which eval record each row is)."""

    def __init__(self, tokenizer, model):
        self.inner = DataCollatorForSeq2Seq(tokenizer, model=model, label_pad_token_id=-100)

    def __call__(self, features):
        idx = [f.pop("idx") for f in features] if "idx" in features[0] else None
        batch = self.inner(features)
        if idx is not None:
            batch["idx"] = torch.tensor(idx)
        return batch


class ParserTrainer(StopOnNonFiniteLoss, Seq2SeqTrainer):
    def __init__(self, *args, parser: QASemParser | None = None, eval_records=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.parser, self.eval_records = parser, eval_records

    def prediction_step(self, model, inputs, prediction_loss_only, ignore_keys=None, **gen_kwargs):
        """Generate (answer-copy constrained when enabled) and return the batch's record indices in
        place of the labels: evaluation batches are length-grouped, so predictions come back in
        another order than the eval records, and `compute_metrics` maps them back by index."""
        idx = inputs.pop("idx", None)
        if self.args.predict_with_generate and not prediction_loss_only and idx is not None \
                and self.parser is not None and self.parser.constrained:
            gen_kwargs = {**getattr(self, "_gen_kwargs", {}), **gen_kwargs}
            beams = gen_kwargs.get("num_beams") or self.model.generation_config.num_beams or 1
            records = [self.eval_records[i] for i in idx.tolist()]
            gen_kwargs["logits_processor"] = self.parser.logits_processor(records, beams)
        # Seq2SeqTrainer.prediction_step fills the generation config's defaults (max_length=20) in
        # after each generate call; beside max_new_tokens that default makes generate warn on every
        # batch. max_new_tokens is the length that counts: clear the default again before each call.
        gen = self.model.generation_config
        if gen.max_new_tokens is not None:
            gen.max_length = None
        loss, generated, labels = super().prediction_step(model, inputs, prediction_loss_only,
                                                          ignore_keys=ignore_keys, **gen_kwargs)
        if idx is not None and generated is not None:
            labels = idx.to(generated.device).unsqueeze(1)
        return loss, generated, labels
