"""How long a release takes from an empty folder, from a manifest's stage times: the stages scheduled on N
cores over the release's graph (release/layout.py stage_needs; the longest remaining path first, one stage per
core), and where the core time goes. A projection from measured parts: a manifest of a release built in
pieces has no single wall time of its own."""
from __future__ import annotations

import re

from release.layout import stage_needs

# the families the time is told by: (label, how a stage's name starts)
FAMILIES = (("parser", ("parser",)), ("pair encoder folds", ("encoder_",)), ("contradiction scorers", ("contradiction",)),
            ("evaluations", ("eval_",)), ("detector", ("detector",)), ("entailment classifier", ("entailment",)),
            ("data", ("data",)))


def shipped_stages(m: dict) -> dict[str, list[str]]:
    """The graph of the set the manifest ships: its seeds (the first is the recipe's own) and encoder stages."""
    seeds = list(((m["metrics"].get("contradiction") or {}).get("seeds") or {}).get("seeds") or [])[1:]
    folds = sorted({x.group(1) for s in m["stages"] if (x := re.fullmatch(r"encoder_(fold\d+)(_seed\d+)?", s))})
    return stage_needs(folds or ["fold0", "fold1"], [int(s) for s in seeds])


def stage_times(m: dict, needs: dict) -> tuple[dict[str, float], list[str], list[str]]:
    """(stage -> seconds, stages counted at their kind's mean, stages the manifest lacks). A stage whose time is
    under 5 % of the longest of its kind (the same stage of another seed) was adopted from an earlier run of its
    command, not trained: it counts at the mean of the others of its kind."""
    wall = {s: float(m["stages"][s]["wall_s"] or 0) for s in needs if s in m["stages"]}
    kind = {s: re.sub(r"_seed\d+$", "", s) for s in needs}
    stood_in = []
    for s in list(wall):
        others = [wall[o] for o in wall if o != s and kind[o] == kind[s]]
        if others and wall[s] < 0.05 * max(others):
            wall[s] = sum(others) / len(others)
            stood_in.append(s)
    missing = [s for s in needs if s not in wall]
    return {s: wall.get(s, 0.0) for s in needs}, stood_in, missing


def schedule(needs: dict[str, list[str]], wall: dict[str, float], cores: int) -> float:
    """The end of the last stage when each free core takes the ready stage with the longest path to the end."""
    below = {}

    def path(s):  # the longest chain of stages from s to the end, s included
        if s not in below:
            below[s] = wall[s] + max((path(d) for d in needs if s in needs[d]), default=0.0)
        return below[s]

    done, running, t = {}, [], 0.0  # running: (end, stage)
    while len(done) < len(needs):
        ready = sorted((s for s in needs if s not in done and s not in {r for _, r in running}
                        and all(d in done and done[d] <= t for d in needs[s])), key=lambda s: -path(s))
        while ready and len(running) < cores:
            s = ready.pop(0)
            running.append((t + wall[s], s))
        running.sort()
        end, s = running.pop(0)
        t, done[s] = end, end
    return max(done.values())


def _hm(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"


def time_line(m: dict, cores: int = 2) -> str:
    needs = shipped_stages(m)
    wall, stood_in, missing = stage_times(m, needs)
    total = sum(wall.values())
    family = {s: next(label for label, starts in FAMILIES if s.startswith(starts)) for s in needs}
    by_family = {label: [s for s in needs if family[s] == label] for label, _ in FAMILIES}
    parts = [f"{label} {_hm(sum(wall[s] for s in st))}" + (f" ({len(st)} stages)" if len(st) > 1 else "")
             for label, st in sorted(by_family.items(), key=lambda x: -sum(wall[s] for s in x[1]))
             if sum(wall[s] for s in st) >= 30]
    notes = []
    if stood_in:
        notes.append(f"{', '.join(stood_in)} adopted from earlier runs of their commands, counted at their other seeds' mean")
    if missing:
        notes.append(f"{', '.join(missing)} not in this manifest, counted as 0")
    return (f"From an empty folder on {cores} cores, about **{_hm(schedule(needs, wall, cores))}** (projected from the "
            f"stage times of `{m['profile']}`'s manifest, {m['date']}, by `python -m release.readme_table`): "
            f"{_hm(total)} of stages at one thread each, {'; '.join(parts)}"
            + (f" ({'; '.join(notes)})" if notes else "") + ".")
