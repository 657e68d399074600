"""train/contradiction/selection.py: the one-SE rule picks the simplest cell within one bootstrap SE of
the best; nested CV scores each rule on outer folds the grid never saw."""
import numpy as np
import pytest

from train.contradiction.selection import group_bootstrap_se, nested_cv, pick


def _cells(labels, f1s):
    """Cells whose decisions hit the first `hits` contradictions and flag 40 consistent pairs (complex cells
    first, as in the grid)."""
    out = []
    for n_features, C, hits in f1s:
        d = np.zeros(len(labels), bool)
        d[np.flatnonzero(labels)[:hits]] = True
        d[np.flatnonzero(labels == 0)[:40]] = True
        from metrics.contradiction import binary_prf
        out.append({"feature_set": f"f{n_features}", "n_features": n_features, "C": C, "decisions": d,
                    "f1": binary_prf(labels, d)["f1"]})
    return out


def test_one_se_prefers_the_simpler_cell_only_within_the_noise():
    rng = np.random.default_rng(0)
    labels = (rng.random(600) < 0.2).astype(int)
    groups = [f"g{i // 6}" for i in range(600)]  # 100 prompts
    positives = int(labels.sum())
    close = _cells(labels, [(20, 1.0, positives), (1, 1.0, positives - 2)])  # 1 feature, two hits fewer
    chosen, how = pick(close, "one_se", labels, groups)
    assert chosen["n_features"] == 1 and how["se"] > 0 and how["eligible"] == 2
    assert pick(close, "best", labels, groups)[0]["n_features"] == 20
    far = _cells(labels, [(20, 1.0, positives), (1, 1.0, positives // 3)])
    assert pick(far, "one_se", labels, groups)[0]["n_features"] == 20
    with pytest.raises(ValueError, match="cv.rule"):
        pick(close, "median", labels, groups)


def test_group_bootstrap_se_grows_when_prompts_are_few():
    labels = np.tile([1, 0, 0, 1, 0], 40)
    decisions = np.tile([1, 1, 0, 0, 0], 40).astype(bool)
    many = group_bootstrap_se(labels, decisions, [f"g{i}" for i in range(200)])
    few = group_bootstrap_se(labels, decisions, [f"g{i % 5}" for i in range(200)])  # 5 prompts, each of one kind
    assert 0 < many < few


def test_nested_cv_pools_outer_decisions_per_rule():
    """A toy grid over one score column: the outer folds' decisions come from cells chosen without them."""
    rng = np.random.default_rng(1)
    n = 400
    labels = (rng.random(n) < 0.25).astype(int)
    score = labels + rng.normal(0, 0.7, n)
    groups = [f"g{i // 8}" for i in range(n)]
    seen = []

    def grid(pool):
        seen.append(set(pool))
        out = []
        for shift, n_features in ((0.0, 1), (0.3, 5)):
            d = score[pool] + shift >= 0.5
            from metrics.contradiction import binary_prf
            out.append({"feature_set": f"s{shift}", "n_features": n_features, "C": 1.0, "threshold": 0.5 - shift,
                        "decisions": d, "f1": binary_prf(labels[pool], d)["f1"]})
        return out

    def decide(cell, train_pool, test_pool):
        assert not set(train_pool) & set(test_pool)
        return score[test_pool] >= cell["threshold"]

    result = nested_cv(n, labels, groups, grid, decide, ("best", "one_se"), folds=5, seed=0)
    assert len(seen) == 5 and set().union(*[set(range(n)) - s for s in seen]) == set(range(n))
    for rule in ("best", "one_se"):
        assert result[rule]["n"] == n and 0 < result[rule]["f1"] <= 1 and len(result[rule]["chosen"]) == 5
