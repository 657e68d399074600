"""Pure metric functions of records (QA-SRL UA/LA/role, entailment BAcc/AUC) and their tables.
The bottom layer beside data_prep: imports nothing of models/, train/ or evaluation/."""
