"""Train, evaluate and gather every shipped model into one folder: python -m release PROFILE DIR [options]
(what `bash scripts/release.sh PROFILE DIR` runs).

  PROFILE             quick | full | tiny (release/profiles/)
  --dry-run           list the stages that would run, run nothing
  --cores N           stages at once, one thread each (default: every core)
  --extra-seeds S ..  train and test the contradiction recipe with these seeds too, beside the profile's
                      extra_contradiction_seeds (full: 14 15); the seeds as one scorer is the shipped one, and
                      release/seeds.py gives their spread (mean ± sd)
  --stages NAME ..    build only these stages and what they need (e.g. parser detector), no manifest; a later
                      run without it goes on from there
  resume=auto|never   auto (default): finished stages are kept, an unfinished one resumes by its entry point's
                      rule; never: what the pipeline wrote in DIR is removed first, each part named, and every
                      stage is built again (release/fresh.py); a PATH is refused
  hub=push hub.repo_id=ORG/NAME [hub.private=false]   then publish the set (release/publish.py)

The pipeline is release/Snakefile. Before it runs: DIR is locked (a second release in DIR is refused,
naming the holder), the profile is checked against DIR's, and the stamps of stages whose files were
edited or deleted are dropped so that those stages, and what depends on them, run again; so are those of stages
built from other inputs or another command than this pipeline gives them (a folder of an older pipeline), each
named with why (release/inputs.py). A profile whose training stage stops on the clock (max_train_minutes) is refused
first, naming the stage (release/budgets.py)."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from common.data_folder import data_dir
from release.budgets import time_budgets
from release.fresh import check_release_folder, parse_release_resume, start_afresh
from release.layout import DATA_PARTS, PROFILE_MARKER
from release.stamps import stale_stamps, stamp_path
from train.run_guard import RunDirectoryLockedError, run_dir_lock

REPO = Path(__file__).resolve().parents[1]
PROFILES = REPO / "release" / "profiles"


def check_data(folder: Path) -> None:
    missing = [p for p in DATA_PARTS if not (folder / p).is_dir()]
    if missing:
        raise SystemExit(f"release stage data: the data directory {folder} lacks {', '.join(missing)}; set "
                         "QASEM_DATA_DIR to the folder of the releases, or fetch them with python -m data_prep.download")


def forget_manifest_without_its_stages(release: Path) -> None:
    """Snakemake rebuilds a missing intermediate file only when a target needs it: with manifest.json in
    place, a dropped stamp would stay dropped. So a manifest that lists a stage whose stamp is gone goes too."""
    manifest = release / "manifest.json"
    if manifest.exists():
        stages = json.loads(manifest.read_text()).get("stages", {})
        if any(not stamp_path(release, name).exists() for name in stages):
            manifest.unlink()


def snakemake_command(profile: str, release: Path, data: Path, cores: int, dry_run: bool,
                      extra_seeds: list[int] = (), stages: list[str] = (), fresh: bool = False) -> list[str]:
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "release" / "Snakefile"),
           "--directory", str(release), "--cores", str(cores), "--config", f"profile={profile}", f"repo={REPO}",
           f"data_dir={data}", f"extra_seeds=[{','.join(map(str, extra_seeds))}]", f"drop_outdated={int(not dry_run)}",
           "--rerun-incomplete", "--nolock"]  # DIR's own lock (below) names its holder
    cmd += [f"stages/{s}.json" for s in stages]  # a stage's target is its stamp; none: rule `all`, the manifest
    if fresh and dry_run:  # resume=never: what is built is still there during a dry run, which lists every job
        cmd.append("--forceall")
    return cmd + (["--dry-run", "--quiet", "rules"] if dry_run else ["--quiet", "rules", "host"])


def key_args(extra: list[str]) -> dict:
    """The KEY=VALUE arguments: resume=auto|never and hub=push hub.repo_id=ORG/NAME [hub.private=false]."""
    kv = dict(a.split("=", 1) for a in extra if "=" in a)
    unknown = [a for a in extra if "=" not in a or a.split("=", 1)[0] not in ("resume", "hub", "hub.repo_id",
                                                                             "hub.private")]
    if unknown:
        raise SystemExit(f"unknown arguments {unknown}: give resume=auto|never, hub=push hub.repo_id=ORG/NAME "
                         "[hub.private=false]")
    if kv.get("hub") == "push" and not kv.get("hub.repo_id"):
        raise SystemExit("hub=push needs hub.repo_id=ORG/NAME")
    return kv


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m release", description="train, evaluate and gather the shipped models")
    ap.add_argument("profile")
    ap.add_argument("release", type=Path)
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--cores", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--extra-seeds", type=int, nargs="+", default=[])
    ap.add_argument("--stages", nargs="+", default=[])
    args, extra = ap.parse_known_args(argv)
    opts = key_args(extra)
    try:
        resume = parse_release_resume(opts.get("resume", "auto"))
    except ValueError as e:
        raise SystemExit(f"release refused: {e}") from None
    if not (PROFILES / f"{args.profile}.yaml").exists():
        raise SystemExit(f"unknown profile {args.profile!r}: one of {sorted(p.stem for p in PROFILES.glob('*.yaml'))}")
    clock = time_budgets(PROFILES / f"{args.profile}.yaml", REPO / "conf")
    if clock:  # before anything is read or written: a release's models must not depend on the machine's speed
        raise SystemExit(f"release refused: profile {args.profile} stops training on the clock, so each build ships "
                         "another model:\n  " + "\n  ".join(clock) + "\n  give these stages steps or epochs "
                         "(trainer.args.max_steps, num_train_epochs); max_train_minutes is for one's own runs (release/budgets.py)")
    data = data_dir()
    check_data(data)
    release = args.release.resolve()
    if resume.fresh:
        check_release_folder(release)  # before anything is written in it (its lock file)
    release.mkdir(parents=True, exist_ok=True)
    try:
        with run_dir_lock(release):
            marker = release / PROFILE_MARKER
            if marker.exists() and marker.read_text().strip() != args.profile:
                raise SystemExit(f"{release} holds a {marker.read_text().strip()} release: give {args.profile} "
                                 "another folder")
            if resume.fresh:
                gone = start_afresh(release, dry_run=args.dry_run)
                print(f"release: resume=never {'would remove' if args.dry_run else 'removed'} "
                      f"{', '.join(p.name for p in gone) or 'nothing (no stage built yet)'} in {release}; every "
                      "stage is built again", file=sys.stderr)
            marker.write_text(args.profile + "\n")
            for stage, files in stale_stamps(release).items():
                print(f"release: stage {stage} runs again: {', '.join(files[:3])}{' …' if len(files) > 3 else ''} "
                      "changed since it finished", file=sys.stderr)
            forget_manifest_without_its_stages(release)
            code = subprocess.call(snakemake_command(args.profile, release, data, args.cores, args.dry_run,
                                                     args.extra_seeds, args.stages, resume.fresh))
            if code != 0 or args.dry_run or args.stages:
                return code
            if opts.get("hub") == "push":
                from release.publish import publish

                url = publish(release, opts["hub.repo_id"], private=opts.get("hub.private", "true") != "false")
                if url is None:
                    print(f"release: the push to {opts['hub.repo_id']} failed (see above); {release} is complete "
                          "and kept", file=sys.stderr)
                    return 1
                print(f"release: published {release} to {url}")
            metrics = json.loads((release / "manifest.json").read_text())["metrics"]
            print(json.dumps(metrics, indent=1))
            return 0
    except RunDirectoryLockedError as e:
        raise SystemExit(f"release refused: {e}") from None


if __name__ == "__main__":
    sys.exit(main())
