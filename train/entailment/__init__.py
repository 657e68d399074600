"""The QA-entailment classifier's training, `python -m train.entailment classifier=NAME`: neural families
with grouped CV and resumable stages, the stacked regression, the Hub push."""
from train.entailment.run import check_config, train
