"""Where things live in a release folder and what it reads: one place for the Snakefile, the manifest
and the command."""

# model -> (the stage that trains it, its folder in the release); the models models.release.MODELS loads
MODEL_FOLDERS = {"parser": ("parser", "runs/parser/best"), "detector": ("detector", "runs/detector/checkpoint"),
                 "entailment": ("entailment", "runs/entailment/stacked"),
                 "contradiction": ("contradiction", "runs/contradiction/contradiction")}
# with extra seeds of the contradiction recipe: their models as one scorer (release.seeds --ensemble), shipped
SEED_ENSEMBLE = "runs/contradiction_seeds/contradiction"
# the folders of the data directory the stages read (their files' sha256 go in the manifest)
DATA_PARTS = ("qasrl-bank-v2", "qasrl-gs", "qanom", "qanom-resources", "qasem-consistency", "chatprotect")
