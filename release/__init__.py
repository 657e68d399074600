"""The release: every shipped model trained, evaluated and gathered into one folder with a manifest
(`bash scripts/release.sh PROFILE DIR`). The pipeline is `release/Snakefile` (Snakemake); this package
holds what its rules call: one stage run and stamped (stage.py), stamps checked against their files
(stamps.py), the manifest and model card (manifest.py), the Hub push (publish.py) and the command (__main__.py)."""
