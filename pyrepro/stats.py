"""Statistics for verdicts: a benchmark's metric and its bootstrap confidence interval.

Pure Python on purpose: pyrepro does not depend on NumPy, and a test set of a few thousand ids
resampled 5000 times takes a second or two with ``random``. Everything here is a function of
its arguments (the random generator is a private ``random.Random(seed)``), so a verdict's
interval can be recomputed from its record: the seed, the number of resamples and the
confidence level travel with it (``Interval``).

The interval is the percentile bootstrap over the test ids: draw as many ids as there are, with
replacement, compute the metric on the draw, repeat ``n_resamples`` times, and take the
``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of the results (linear
interpolation between order statistics). The reproducibility study pyrepro follows calls a
model statistically reproducible when the reported metric lies inside this interval of the
re-executed one (n = 5000, 95 %).

That criterion looks at the metric only. ``rank_link`` looks at the predictions: whether a run's
predictions order the test ids the way the authors' do (Spearman's rank correlation, tested
against the same predictions scrambled across the ids). A column of predictions shuffled
against its ids can keep an MAE inside a wide interval (81 test ids give intervals of about
+-35 %), and it orders the ids at random.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

DEFAULT_RESAMPLES = 5000
DEFAULT_CONFIDENCE = 0.95
DEFAULT_SEED = 0
METHOD = "percentile bootstrap over the test ids"


@dataclass(frozen=True)
class Metric:
    """A metric that is a function of one number per test id: ``finish(mean(loss(p, t)))``.

    MAE and RMSE are of this form, which lets the bootstrap resample the per-id losses once
    computed instead of recomputing them for every draw."""

    name: str  # the key in METRICS and in records: "mae"
    label: str  # for people: "MAE"
    loss: Callable[[float, float], float]
    finish: Callable[[float], float]
    lower_is_better: bool = True

    def losses(self, predictions: Sequence[float], targets: Sequence[float]) -> list[float]:
        if len(predictions) != len(targets):
            raise ValueError(f"{len(predictions)} predictions for {len(targets)} targets")
        return [self.loss(p, t) for p, t in zip(predictions, targets, strict=True)]

    def of_losses(self, losses: Sequence[float]) -> float:
        if not losses:
            raise ValueError(f"{self.label} of no values")
        return self.finish(math.fsum(losses) / len(losses))

    def __call__(self, predictions: Sequence[float], targets: Sequence[float]) -> float:
        return self.of_losses(self.losses(predictions, targets))


def _identity(x: float) -> float:
    return x


MAE = Metric("mae", "MAE", lambda p, t: abs(p - t), _identity)
RMSE = Metric("rmse", "RMSE", lambda p, t: (p - t) * (p - t), math.sqrt)
METRICS: dict[str, Metric] = {m.name: m for m in (MAE, RMSE)}


@dataclass(frozen=True)
class Interval:
    """A bootstrap confidence interval, with what it takes to compute it again."""

    low: float
    high: float
    confidence: float
    n_resamples: int
    seed: int
    method: str = METHOD

    @property
    def width(self) -> float:
        return self.high - self.low

    def contains(self, x: float) -> bool:
        return self.low <= x <= self.high


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """The ``q`` quantile of already sorted values, interpolating linearly between order
    statistics (NumPy's default, Hyndman and Fan's type 7)."""
    if not sorted_values:
        raise ValueError("quantile of no values")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile {q} is not in [0, 1]")
    h = (len(sorted_values) - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (h - lo) * (sorted_values[hi] - sorted_values[lo])


def bootstrap_losses(losses: Sequence[float], finish: Callable[[float], float] = _identity, *,
                     n_resamples: int = DEFAULT_RESAMPLES, confidence: float = DEFAULT_CONFIDENCE,
                     seed: int = DEFAULT_SEED) -> Interval:
    """The percentile bootstrap interval of ``finish(mean(losses))`` over the ids the losses
    belong to. Deterministic for a seed."""
    if not losses:
        raise ValueError("a bootstrap needs at least one value")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, not {n_resamples}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, not {confidence}")
    if not all(math.isfinite(x) for x in losses):
        raise ValueError("a bootstrap over non-finite values")
    rng = random.Random(seed)
    values = list(losses)
    k = len(values)
    stats = sorted(finish(math.fsum(rng.choices(values, k=k)) / k) for _ in range(n_resamples))
    alpha = (1.0 - confidence) / 2.0
    return Interval(quantile(stats, alpha), quantile(stats, 1.0 - alpha), confidence, n_resamples, seed)


def bootstrap(metric: Metric, predictions: Sequence[float], targets: Sequence[float], *,
              n_resamples: int = DEFAULT_RESAMPLES, confidence: float = DEFAULT_CONFIDENCE,
              seed: int = DEFAULT_SEED) -> Interval:
    """The percentile bootstrap interval of ``metric`` over paired predictions and targets
    (one pair per test id)."""
    return bootstrap_losses(metric.losses(predictions, targets), metric.finish, n_resamples=n_resamples,
                            confidence=confidence, seed=seed)


def relative_difference(value: float, reference: float) -> float | None:
    """Signed ``(value - reference) / |reference|``; None when the reference is 0."""
    return (value - reference) / abs(reference) if reference else None


def stated_digits(x: float) -> int:
    """How many decimals a stated number was written with (``52.7033`` -> 4, ``63.769`` -> 3):
    the precision a recomputation is held to."""
    text = repr(float(x))
    if "e" in text or "E" in text:
        mantissa, _, exp = text.lower().partition("e")
        decimals = len(mantissa.partition(".")[2].rstrip("0"))
        return max(0, decimals - int(exp))
    return len(text.partition(".")[2].rstrip("0"))


def matches_stated(value: float, stated: float) -> bool:
    """Whether ``value`` is ``stated`` to the digits ``stated`` was written with (half a unit in
    its last place)."""
    return abs(value - stated) <= 0.5 * 10.0 ** -stated_digits(stated) * (1 + 1e-9)


def ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks of ``values``, ties sharing the mean of their ranks."""
    order = sorted(range(len(values)), key=values.__getitem__)
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return out


def pearson(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Pearson's correlation of paired values; None when either side is constant or has fewer
    than two values."""
    if len(a) != len(b):
        raise ValueError(f"{len(a)} values paired with {len(b)}")
    n = len(a)
    if n < 2:
        return None
    ma, mb = math.fsum(a) / n, math.fsum(b) / n
    sab = math.fsum((x - ma) * (y - mb) for x, y in zip(a, b, strict=True))
    saa = math.fsum((x - ma) ** 2 for x in a)
    sbb = math.fsum((y - mb) ** 2 for y in b)
    if saa == 0.0 or sbb == 0.0:
        return None
    return max(-1.0, min(1.0, sab / math.sqrt(saa * sbb)))


@dataclass(frozen=True)
class RankLink:
    """Whether two sets of predictions for the same ids order those ids alike: Spearman's rank
    correlation and its one-sided p-value against predictions scrambled across the ids (under
    that null, the correlation has variance 1/(n - 1); normal approximation)."""

    n: int
    rho: float | None
    z: float | None
    p: float | None


def rank_link(a: Sequence[float], b: Sequence[float]) -> RankLink:
    rho = pearson(ranks(a), ranks(b)) if len(a) >= 3 else None
    if rho is None:
        return RankLink(len(a), None, None, None)
    z = rho * math.sqrt(len(a) - 1)
    return RankLink(len(a), rho, z, 0.5 * math.erfc(z / math.sqrt(2.0)))  # 1 - Phi(z), accurate far out
