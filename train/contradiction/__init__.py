"""The self-contradiction model's training, `python -m train.contradiction`: the pair encoder, the stacked
model over it and the QA alignment chosen by grouped CV, the alignment gate, the Hub push."""
from train.contradiction.run import train
