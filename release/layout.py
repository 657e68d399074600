"""Where things live in a release folder, what it reads, and which stage needs which: one place for the
Snakefile, the manifest, the README's time line and the command."""

# model -> (the stage that trains it, its folder in the release); the models models.release.MODELS loads
MODEL_FOLDERS = {"parser": ("parser", "runs/parser/best"), "detector": ("detector", "runs/detector/checkpoint"),
                 "entailment": ("entailment", "runs/entailment/stacked"),
                 "contradiction": ("contradiction", "runs/contradiction/contradiction")}
# with extra seeds of the contradiction recipe: their models as one scorer (python -m train.contradiction
# ensemble.members=[...], stage contradiction_ensemble), the shipped scorer
SEED_ENSEMBLE_RUN = "runs/contradiction_seeds"
SEED_ENSEMBLE = f"{SEED_ENSEMBLE_RUN}/contradiction"
ENSEMBLE_STAGE = "contradiction_ensemble"
# the folders of the data directory the stages read (their files' sha256 go in the manifest)
DATA_PARTS = ("qasrl-bank-v2", "qasrl-gs", "qanom", "qanom-resources", "qasem-consistency", "chatprotect", "summedits")
# what the pipeline writes in a release folder (what resume=never removes; release/fresh.py): the stages' folders,
# their stamps and logs, the input digests and record, Snakemake's own records, the manifest and model card. The
# profile marker (a release folder's sign) and the folder's lock stay.
PROFILE_MARKER = ".profile"
RELEASE_PARTS = ("data", "runs", "eval", "outputs", "stages", "logs", ".inputs", ".snakemake", "manifest.json",
                 "README.md")
# external: SummEdits' evaluation split, a development split this repo never trains on (evaluation/external.py)
EVALUATIONS = ("parser", "entailment", "contradiction", "consistency_benchmark", "decomp_score", "copula", "external")
# the test evaluation -> the trained stage it scores (its other models come through that one's needs)
EVALUATED = {"parser": "parser", "entailment": "entailment", "contradiction": "contradiction",
             "consistency_benchmark": "entailment", "decomp_score": "entailment", "copula": "data",
             "external": "entailment"}


def stage_needs(encoder_stages, extra_seeds) -> dict[str, list[str]]:
    """stage -> the stages whose outputs it reads: the release's graph (release/Snakefile builds its rules'
    upstream stamps from it; release/readme_table.py schedules the manifest's stage times over it)."""
    needs = {"data": [], "parser": ["data"], "detector": ["data"], "entailment": ["parser", "detector"]}
    for suffix in ["", *[f"_seed{s}" for s in extra_seeds]]:
        needs.update({f"encoder_{f}{suffix}": [] for f in encoder_stages})  # the pair encoders need no parser
        needs[f"contradiction{suffix}"] = ["parser", "detector", "entailment", *[f"encoder_{f}{suffix}" for f in encoder_stages]]
    needs.update({f"eval_{e}": [EVALUATED[e]] for e in EVALUATIONS})
    if extra_seeds:
        needs.update({f"eval_contradiction_seed{s}": [f"contradiction_seed{s}"] for s in extra_seeds})
        needs[ENSEMBLE_STAGE] = ["contradiction", *[f"contradiction_seed{s}" for s in extra_seeds]]
        needs["eval_contradiction_ensemble"] = [ENSEMBLE_STAGE]
        # the summary over seeds reads every seed's test evaluation and the ensemble's dev-chosen threshold
        needs["contradiction_seeds"] = ["eval_contradiction", *[f"eval_contradiction_seed{s}" for s in extra_seeds],
                                        ENSEMBLE_STAGE]
    return needs
