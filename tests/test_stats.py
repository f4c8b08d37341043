"""pyrepro.stats: the metrics, the seeded percentile bootstrap, the rank link, stated digits."""

from __future__ import annotations

import math
import random
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyrepro import stats

finite = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False, allow_infinity=False)


def test_metrics__known_values() -> None:
    preds, targets = [1.0, 2.0, 4.0], [1.0, 4.0, 1.0]
    assert stats.MAE(preds, targets) == pytest.approx(5 / 3)
    assert stats.RMSE(preds, targets) == pytest.approx(math.sqrt(13 / 3))
    assert stats.METRICS["mae"] is stats.MAE
    with pytest.raises(ValueError, match="2 predictions for 3 targets"):
        stats.MAE([1.0, 2.0], targets)
    with pytest.raises(ValueError, match="MAE of no values"):
        stats.MAE([], [])


def test_quantile__linear_between_order_statistics() -> None:
    xs = [1.0, 2.0, 3.0, 4.0]
    assert [stats.quantile(xs, q) for q in (0.0, 0.25, 0.5, 1.0)] == [1.0, 1.75, 2.5, 4.0]
    assert stats.quantile([7.0], 0.3) == 7.0
    with pytest.raises(ValueError):
        stats.quantile([], 0.5)
    with pytest.raises(ValueError):
        stats.quantile(xs, 1.5)


def test_bootstrap_losses__two_values__interval_is_their_range() -> None:
    """Means of two draws from {0, 1} are 0, 1/2, 1 with chances 1/4, 1/2, 1/4: the 2.5 % and
    97.5 % quantiles of 5000 of them are 0 and 1."""
    iv = stats.bootstrap_losses([0.0, 1.0])
    assert (iv.low, iv.high) == (0.0, 1.0)
    assert (iv.confidence, iv.n_resamples, iv.seed) == (0.95, 5000, 0)
    assert iv.method == "percentile bootstrap over the test ids"


def test_bootstrap_losses__normal_sample__matches_the_textbook_interval_of_a_mean() -> None:
    """For a mean of many values the percentile interval is close to mean +- 1.96 s / sqrt(n)
    (and to +- 1.645 s / sqrt(n) at 90 %): the quantiles and the confidence level are the right ones."""
    rng = random.Random(5)
    xs = [rng.gauss(10.0, 2.0) for _ in range(400)]
    m, se = statistics.fmean(xs), statistics.stdev(xs) / math.sqrt(len(xs))
    for conf, z in ((0.95, 1.96), (0.90, 1.645)):
        iv = stats.bootstrap_losses(xs, confidence=conf, n_resamples=4000, seed=1)
        assert iv.low == pytest.approx(m - z * se, abs=0.1 * z * se)
        assert iv.high == pytest.approx(m + z * se, abs=0.1 * z * se)


def test_bootstrap__rmse__interval_of_the_root_not_of_the_mean_square() -> None:
    preds, targets = [0.0, 0.0, 0.0, 0.0], [1.0, -2.0, 3.0, 0.5]
    iv = stats.bootstrap(stats.RMSE, preds, targets, n_resamples=2000, seed=3)
    sq = stats.bootstrap_losses([1.0, 4.0, 9.0, 0.25], n_resamples=2000, seed=3)
    assert (iv.low, iv.high) == pytest.approx((math.sqrt(sq.low), math.sqrt(sq.high)))
    assert iv.contains(stats.RMSE(preds, targets))


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"n_resamples": 0}, "n_resamples must be at least 1"),
    ({"confidence": 1.0}, "confidence must be between 0 and 1"),
    ({"confidence": 0.0}, "confidence must be between 0 and 1"),
], ids=["no_resamples__refused", "confidence_one__refused", "confidence_zero__refused"])
def test_bootstrap_losses__bad_arguments__refused(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        stats.bootstrap_losses([1.0, 2.0], **kwargs)  # type: ignore[arg-type]


def test_bootstrap_losses__empty_or_non_finite__refused() -> None:
    with pytest.raises(ValueError, match="at least one value"):
        stats.bootstrap_losses([])
    with pytest.raises(ValueError, match="non-finite"):
        stats.bootstrap_losses([1.0, math.nan])


def test_bootstrap_losses__seeds__same_seed_same_interval_other_seed_other_interval() -> None:
    xs = [float(i % 7) + 0.1 * i for i in range(60)]
    a, b, c = (stats.bootstrap_losses(xs, seed=s, n_resamples=500) for s in (4, 4, 5))
    assert a == b
    assert (a.low, a.high) != (c.low, c.high)


# ------------------------------------------------------------------ properties of the bootstrap

@settings(max_examples=60, deadline=None)
@given(pairs=st.lists(st.tuples(finite, finite), min_size=1, max_size=40),
       seed=st.integers(min_value=0, max_value=2**32), n=st.integers(min_value=200, max_value=800),
       metric=st.sampled_from(["mae", "rmse"]))
def test_bootstrap__property__interval_contains_the_point_estimate(pairs: list[tuple[float, float]], seed: int,
                                                                    n: int, metric: str) -> None:
    m = stats.METRICS[metric]
    preds, targets = [p for p, _ in pairs], [t for _, t in pairs]
    iv = stats.bootstrap(m, preds, targets, n_resamples=n, seed=seed)
    point = m(preds, targets)
    tol = 1e-9 * max(1.0, abs(point))  # the mean of identical values, summed in another order
    assert iv.low - tol <= point <= iv.high + tol
    assert iv.low <= iv.high


@settings(max_examples=40, deadline=None)
@given(losses=st.lists(st.floats(min_value=0, max_value=1e3, allow_nan=False), min_size=2, max_size=30)
       .filter(lambda xs: max(xs) - min(xs) > 1e-6 * max(1.0, max(xs))),
       seed=st.integers(min_value=0, max_value=2**32))
def test_bootstrap__property__interval_shrinks_as_the_test_set_grows(losses: list[float], seed: int) -> None:
    """The same values nine times over (nine times as many test ids, the same spread): the
    interval is about a third as wide; asserted with room for the resampling noise."""
    small = stats.bootstrap_losses(losses, n_resamples=2000, seed=seed)
    large = stats.bootstrap_losses(losses * 9, n_resamples=2000, seed=seed)
    assert small.width > 0
    assert large.width <= 0.75 * small.width


@settings(max_examples=40, deadline=None)
@given(pairs=st.lists(st.tuples(finite, finite), min_size=1, max_size=30),
       seed=st.integers(min_value=0, max_value=2**32))
def test_bootstrap__property__deterministic_for_a_seed(pairs: list[tuple[float, float]], seed: int) -> None:
    preds, targets = [p for p, _ in pairs], [t for _, t in pairs]
    first = stats.bootstrap(stats.MAE, preds, targets, n_resamples=300, seed=seed)
    random.seed(seed + 1)  # the global generator is not the bootstrap's
    random.random()
    assert stats.bootstrap(stats.MAE, preds, targets, n_resamples=300, seed=seed) == first


# ------------------------------------------------------------------------------ rank link

def test_ranks__ties_share_the_mean_rank() -> None:
    assert stats.ranks([3.0, 1.0, 3.0, 2.0]) == [3.5, 1.0, 3.5, 2.0]


def test_rank_link__same_order__linked_reversed_and_constant__not() -> None:
    a = [float((i * 17) % 40) for i in range(40)]
    same = stats.rank_link([x + 0.5 * math.sin(i) for i, x in enumerate(a)], a)
    assert same.rho is not None and same.rho > 0.99 and same.p is not None and same.p < 1e-6
    rev = stats.rank_link([-x for x in a], a)
    assert rev.rho == pytest.approx(-1.0) and rev.p is not None and rev.p > 0.999
    flat = stats.rank_link([1.0] * 40, a)
    assert (flat.rho, flat.z, flat.p) == (None, None, None)
    assert stats.rank_link([1.0, 2.0], [1.0, 2.0]).rho is None  # too few ids for a correlation


# --------------------------------------------------------------------------- stated digits

@pytest.mark.parametrize(("stated", "digits"), [(52.7033, 4), (63.769, 3), (0.2068, 4), (5.5901, 4), (40.0, 0),
                                                (1.5e-05, 6)])
def test_stated_digits(stated: float, digits: int) -> None:
    assert stats.stated_digits(stated) == digits


def test_matches_stated__half_a_unit_in_the_last_stated_place() -> None:
    assert stats.matches_stated(63.76897, 63.769)
    assert stats.matches_stated(52.70334, 52.7033)
    assert not stats.matches_stated(52.70336, 52.7033)
    assert not stats.matches_stated(63.7696, 63.769)
