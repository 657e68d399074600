"""python -m train.entailment [overrides]: conf/train_entailment.yaml composed by Hydra, then train.entailment.train."""
from train.entailment.run import main

main()
