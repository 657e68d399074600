"""Pure metric functions of records (QA-SRL UA/LA/role, entailment BAcc/AUC) and their tables.
The bottom layer beside data_prep: imports nothing of models/, train/ or evaluation/."""
import os


def qasrl_evaluate_path() -> str:
    """The folder of the QA-SRL `evaluate` module (metrics/qasrl_evaluate/): load it, offline, with
    `evaluate.load(qasrl_evaluate_path())`."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "qasrl_evaluate")
