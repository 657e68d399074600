"""The release's `resume` setting, parsed by train/resume.py like every trainer's, and what `resume=never` removes.

- `resume=auto` (the default): finished stages are kept; an unfinished one runs again through its entry point's own
  resume rule (from its newest complete checkpoint, or refused saying why).
- `resume=never`: every stage of DIR is built again from scratch: what the pipeline wrote there (RELEASE_PARTS) is
  removed first, each part named. A folder that is not a release folder (files, but no `.profile`) is refused.
- `resume=PATH` is refused: a release trains many models, each resuming from checkpoints in its own run folder.

Either way each stage's entry point runs with resume=auto (its config's default, so a stage's command, which its
stamp records, is the same under both). Under never that is the same as never for it, since its folders are gone;
passing it never instead would throw away what an earlier stage of the same run wrote into a run folder they share
(the contradiction stage would move aside the pair-encoder folds the encoder stages had just trained)."""
from __future__ import annotations

import shutil
from pathlib import Path

from release.layout import PROFILE_MARKER, RELEASE_PARTS
from train.resume import Resume, parse_resume, refuse_path_for_stages


def parse_release_resume(value: str) -> Resume:
    resume = parse_resume(value)
    refuse_path_for_stages(resume, "the release", "each stage's own run folder in DIR")
    return resume


def check_release_folder(release: Path) -> None:
    """resume=never removes things: only in a release folder (or an empty or new one)."""
    if release.is_dir() and any(release.iterdir()) and not (release / PROFILE_MARKER).is_file():
        shown = sorted(p.name for p in release.iterdir())
        raise SystemExit(f"resume=never: {release} is not a release folder (no {PROFILE_MARKER}; it holds "
                         f"{', '.join(shown[:5])}{' …' if len(shown) > 5 else ''}), so nothing in it is removed; "
                         "give the folder of a release, or a new one")


def parts_built(release: Path) -> list[Path]:
    """What the pipeline wrote in `release`: what resume=never removes."""
    return [release / p for p in RELEASE_PARTS if (release / p).exists() or (release / p).is_symlink()]


def start_afresh(release: Path, dry_run: bool = False) -> list[Path]:
    """Remove every part the pipeline built in `release` (none under dry_run); the parts, to be named."""
    found = parts_built(release)
    if not dry_run:
        for path in found:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
    return found
