"""Plain-text tables of QA-SRL metrics for the terminal and the README."""
from __future__ import annotations


def metrics_table(results: dict[str, dict], title: str = "") -> str:
    """results: {row name: evaluate_records() output}; one row per name and per source in it."""
    rows = [("set", "UA P", "UA R", "UA F1", "LA P", "LA R", "LA F1")]

    def row(name, m):
        return (name, *(f"{100 * m[k][x]:.1f}" for k in ("ua", "la") for x in ("precision", "recall", "f1")))

    for name, m in results.items():
        if "ua" not in m:
            continue
        rows.append(row(name, m))
        for source, sm in sorted(m.get("by_source", {}).items()):
            if len(m.get("by_source", {})) > 1:
                rows.append(row(f"  {source}", sm))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [title] if title else []
    lines += ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))) for r in rows]
    return "\n".join(lines)
