"""python -m train.predicates [overrides]: conf/train_predicates.yaml composed by Hydra, then train.predicates.train."""
from train.predicates.run import main

main()
