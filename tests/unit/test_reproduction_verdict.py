"""The reproductions' verdict: the paper's direction, and its figure (or the nearer end of
its range) within 30%."""

import pytest


@pytest.fixture
def judge(repo_root, monkeypatch):
    monkeypatch.syspath_prepend(str(repo_root / "benchmarks"))
    from reproductions.verdict import judge

    return judge


def _paper(value, neutral: float = 0.0) -> dict:
    return {"name": "P", "claim": "c", "value": value, "neutral": neutral}


@pytest.mark.parametrize(
    ("value", "per_seed", "reproduced"),
    [
        (0.53, [0.38, 0.38], True),  # 0.371 is the bound
        (0.53, [0.36, 0.36], False),
        (0.53, [0.68, 0.68], True),
        (0.53, [0.70, 0.70], False),
        (-0.5, [-0.36, -0.36], True),  # a negative figure widens the other way
        (-0.5, [-0.34, -0.34], False),
        (-0.5, [0.5, 0.5], False),  # the other direction
        ([-0.6, -0.4], [-0.75, -0.75], True),  # a negative range, widened away from zero
        ([-0.4, -0.6], [-0.29, -0.29], True),  # its ends in either order
        ([-0.6, -0.4], [-0.27, -0.27], False),
    ],
)
def test_a_figure_is_reproduced_within_30_percent_of_the_papers(judge, value, per_seed, reproduced):
    verdict = judge(_paper(value), per_seed)
    assert verdict.reproduced is reproduced
    assert verdict.thaw_value == pytest.approx(per_seed[0])


@pytest.mark.parametrize(
    ("per_seed", "reproduced"),
    [
        ([1.1, 1.1], True),  # within 30% of the lower end, and better than the baseline
        ([0.95, 0.95], False),  # within 30% of 1.27, but worse than the baseline
        ([2.5, 2.5], True),  # within 30% of the upper end
        ([2.6, 2.6], False),
    ],
)
def test_a_ratio_must_also_lie_on_the_papers_side_of_one(judge, per_seed, reproduced):
    verdict = judge(_paper([1.27, 1.95], neutral=1.0), per_seed)
    assert verdict.reproduced is reproduced and verdict.paper_value == [1.27, 1.95]


def test_a_range_across_its_neutral_point_is_refused(judge):
    with pytest.raises(ValueError, match="both sides"):
        judge(_paper([0.8, 1.2], neutral=1.0), [1.0, 1.0])


def test_a_bound_without_a_figure_is_reproduced_beyond_it(judge):
    below = {"name": "P", "claim": "c", "below": 1.0}
    assert judge(below, [0.5, 0.7]).reproduced is True
    assert judge(below, [1.0, 1.0]).reproduced is False
    assert judge(below, [0.5, 0.7]).paper_value is None
    above = {"name": "P", "claim": "c", "above": 3.0}
    assert judge(above, [3.1, 3.3]).reproduced is True
    assert judge(above, [2.9, 3.0]).reproduced is False
