"""Verdicts: what a run's predictions say about reproduction, plainly.

Tiers, from strongest to weakest claim:

* ``identical``: the predictions csv equals the authors' submitted csv byte for byte;
* ``agree``: same ids, every value within 1e-4 relative of the submitted one;
* ``consistent``: statistically reproducible. The reported value of the benchmark's metric
  lies inside the 95 % bootstrap confidence interval of the re-executed metric over the test
  ids (seeded, 5000 resamples by default), and, where the authors' predictions are there, the
  run's predictions order the test ids the way theirs do (``stats.rank_link``: Spearman, one-
  sided p < 0.001 against the same predictions scrambled across the ids). The second condition
  keeps a shuffled prediction column, whose MAE can stay inside a wide interval, out;
* ``differs``: anything else; the reason says by how much (signed relative difference of the
  metric, where the reported value lies against the interval) and on what share of the
  predictions (how many differ from the submitted ones by more than 1e-4 relative);
* ``executable``: a fixture-data run (or a ``--test`` run on real data) that exited 0 and wrote
  a well-formed prediction for exactly the test ids; it proves executability, never a numerical
  result;
* ``not-comparable``: a real-data run whose submitted file cannot be compared (cgcnn's is a
  copy of ALIGNN's); the record says why;
* ``failed``: no output, a malformed output (an id twice included), a prediction missing for a
  test id or given for another id, or a non-zero exit. A missing output is never a pass, and a
  clean exit alone is never a pass.

The metric a benchmark is judged by is said in one place, ``BENCHMARK_METRICS``. The reported
value is recomputed from the authors' submitted predictions when they are there (the stated
number in model.toml is kept beside it, with whether the two agree to the stated digits);
otherwise it is the stated number. Every number carries its provenance as typed fields:
``Estimate`` (metric, value, ``stats.Interval`` with seed, resamples and confidence, the rule
that picked the metric), ``Reported`` (value, source, stated, recomputed, file) and
``Comparison`` (the id-by-id comparison with the submitted predictions).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyrepro import stats

REL_TOL = 1e-4
LINK_P = 0.001  # the rank link's one-sided p-value must be below this for ``consistent``

PASSING = ("identical", "agree", "consistent", "executable")
TIERS = ("identical", "agree", "consistent", "differs", "executable", "not-comparable", "failed")


@dataclass(frozen=True)
class JudgedBy:
    """The metric a benchmark is judged by, and the rule that says so."""

    metric: str  # a key of stats.METRICS
    rule: str


JARVIS_SPP = ("JARVIS-Leaderboard AI/SinglePropertyPrediction tasks are ranked by the MAE on the benchmark's test "
              "ids (the leaderboard's rebuild.py; the '-test-mae' of the submitted file names)")

# Which metric each benchmark is judged by: the one place that says it. Every benchmark pyrepro
# reads (``read_targets``: a JARVIS benchmark json with a "test" table) is a JARVIS single-property
# task, judged by its MAE; a benchmark not listed gets that rule too, and its record says so.
BENCHMARK_METRICS: dict[str, JudgedBy] = {
    "dft_3d_exfoliation_energy": JudgedBy("mae", JARVIS_SPP),
    "ssub_formula_energy": JudgedBy("mae", JARVIS_SPP),
    "supercon_chem_Tc": JudgedBy("mae", JARVIS_SPP),
    "mag2d_chem_magnetic_moment": JudgedBy("mae", JARVIS_SPP),
}


def judged_by(benchmark: str) -> JudgedBy:
    return BENCHMARK_METRICS.get(benchmark) or JudgedBy(
        "mae", JARVIS_SPP + f"; {benchmark} is not listed in verdict.BENCHMARK_METRICS, so the rule for "
                            "every JARVIS single-property benchmark applies")


@dataclass(frozen=True)
class Estimate:
    """The run's value of the benchmark's metric, with its bootstrap interval over the test ids
    (None where no numerical claim is made: fixture data, test mode)."""

    metric: str
    value: float
    interval: stats.Interval | None
    judged_by: str


@dataclass(frozen=True)
class Reported:
    """The value a run is held to, and where it comes from."""

    metric: str
    value: float
    source: str  # "recomputed from the submitted predictions" or "stated in model.toml"
    stated: float | None = None  # model.toml's reported_mae
    recomputed: float | None = None  # from the submitted predictions and the benchmark's test targets
    matches_stated: bool | None = None  # recomputed == stated to the digits stated
    file: str | None = None  # the submitted predictions file


@dataclass(frozen=True)
class Comparison:
    """The run's predictions against the submitted ones, id by id."""

    n_compared: int
    n_differing: int  # more than ``tolerance`` relative apart
    max_relative: float
    tolerance: float
    link: stats.RankLink

    @property
    def share_differing(self) -> float:
        return self.n_differing / self.n_compared if self.n_compared else 0.0

    @property
    def linked(self) -> bool:
        """The run's predictions order the test ids like the submitted ones (p < LINK_P)."""
        return self.link.p is not None and self.link.p < LINK_P


@dataclass(frozen=True)
class Verdict:
    tier: str
    reason: str
    benchmark: str
    n_predictions: int = 0
    mae: float | None = None  # the run's MAE on the test ids, whatever the benchmark's metric
    estimate: Estimate | None = None
    reported: Reported | None = None
    comparison: Comparison | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.tier in PASSING

    @property
    def relative_difference(self) -> float | None:
        """Signed ``(re-executed - reported) / |reported|`` of the benchmark's metric."""
        if self.estimate is None or self.reported is None:
            return None
        return stats.relative_difference(self.estimate.value, self.reported.value)

    @property
    def reported_mae(self) -> float | None:
        return self.reported.value if self.reported is not None and self.reported.metric == "mae" else None

    @property
    def relative_mae_difference(self) -> float | None:
        if self.mae is None or self.reported_mae is None:
            return None
        return stats.relative_difference(self.mae, self.reported_mae)

    @property
    def max_relative_difference(self) -> float | None:
        return self.comparison.max_relative if self.comparison is not None else None

    def to_json(self) -> dict[str, Any]:
        """The record's ``verdict``: the flat keys of earlier records, then the typed parts."""
        comparison = None
        if self.comparison is not None:
            comparison = dataclasses.asdict(self.comparison) | {"share_differing": self.comparison.share_differing,
                                                                "linked": self.comparison.linked}
        return {"tier": self.tier, "reason": self.reason, "benchmark": self.benchmark,
                "n_predictions": self.n_predictions, "mae": self.mae, "reported_mae": self.reported_mae,
                "relative_mae_difference": self.relative_mae_difference,
                "max_relative_difference": self.max_relative_difference, "details": self.details,
                "metric": dataclasses.asdict(self.estimate) if self.estimate is not None else None,
                "reported": dataclasses.asdict(self.reported) if self.reported is not None else None,
                "relative_difference": self.relative_difference,
                "comparison": comparison}


class PredictionsError(ValueError):
    pass


def read_predictions_zip(path: Path) -> tuple[bytes, dict[str, float]]:
    """(csv bytes, {id: prediction}) of a leaderboard predictions zip."""
    try:
        with zipfile.ZipFile(path) as z:
            members = [n for n in z.namelist() if n.endswith(".csv")]
            if len(members) != 1:
                raise PredictionsError(f"{path.name}: expected one .csv member, found {z.namelist()}")
            raw = z.read(members[0])
    except zipfile.BadZipFile as exc:
        raise PredictionsError(f"{path.name}: not a zip file") from exc
    reader = csv.DictReader(io.StringIO(raw.decode("utf-8", errors="replace")))
    fields = reader.fieldnames or []
    if "id" not in fields or "prediction" not in fields:
        raise PredictionsError(f"{path.name}: columns {fields} lack id and prediction")
    preds: dict[str, float] = {}
    for row in reader:
        key = str(row["id"]).strip()
        if key in preds:
            raise PredictionsError(f"{path.name}: id {key} appears more than once")
        try:
            preds[key] = float(row["prediction"])
        except (TypeError, ValueError) as exc:
            raise PredictionsError(f"{path.name}: bad prediction {row.get('prediction')!r} for id {row.get('id')}") from exc
    return raw, preds


def read_targets(benchmark_zip: Path, benchmark: str) -> dict[str, float]:
    with zipfile.ZipFile(benchmark_zip) as z:
        data = json.loads(z.read(benchmark + ".json"))
    return {str(k): float(v) for k, v in data["test"].items()}


def mae(preds: dict[str, float], targets: dict[str, float]) -> float:
    common = [k for k in targets if k in preds]
    return sum(abs(preds[k] - targets[k]) for k in common) / len(common)


def predictions_digest(path: Path) -> str | None:
    """sha256 of a predictions table's content (ids and values, sorted), so two zips holding the
    same predictions compare equal whatever their zip metadata; None when unreadable."""
    import hashlib

    try:
        _raw, preds = read_predictions_zip(path)
    except (PredictionsError, OSError):
        return None
    return hashlib.sha256("".join(f"{k},{preds[k]!r}\n" for k in sorted(preds)).encode()).hexdigest()


def twins(digest: str | None, others: dict[str, str | None]) -> list[str]:
    """The other models whose submitted predictions have exactly this content."""
    return sorted(n for n, d in others.items() if digest is not None and d == digest)


def comparability(*, reviewed: bool, note: str, digest: str | None, others: dict[str, str | None]) -> tuple[bool, str]:
    """Whether a model's submitted predictions can be the reference for its run, from evidence:
    the predictions of another model, to the last digit, are no model's own result (at most one of
    the two came from its own code, and the files do not say which); then the reviewer's
    ``comparable`` flag with its note. Returns (comparable, why)."""
    same = twins(digest, others)
    if same:
        return False, (f"the submitted predictions are identical, value for value, to {', '.join(same)}'s: at "
                       "most one of them is its own model's result" + (f" ({note})" if note else ""))
    if not reviewed:
        return False, note or "marked not comparable in model.toml"
    return True, note




def compare(preds: dict[str, float], submitted: dict[str, float], ids: list[str]) -> Comparison:
    """The run's predictions against the submitted ones over ``ids`` (both have every id)."""
    rel = [abs(preds[k] - submitted[k]) / max(abs(submitted[k]), 1e-12) for k in ids]
    return Comparison(n_compared=len(ids), n_differing=sum(1 for d in rel if d > REL_TOL),
                      max_relative=max(rel) if rel else 0.0, tolerance=REL_TOL,
                      link=stats.rank_link([preds[k] for k in ids], [submitted[k] for k in ids]))


def _g(x: float) -> str:
    return f"{x:.4g}"


def _share(c: Comparison) -> str:
    return (f"{c.n_differing} of {c.n_compared} predictions ({c.share_differing:.0%}) differ from the submitted ones "
            f"by more than {c.tolerance:g} relative (max {c.max_relative:.3g})")


def _link(c: Comparison) -> str:
    if c.link.rho is None:
        return "the run's or the submitted predictions are constant, so no ordering of the test ids can be compared"
    p = c.link.p
    assert p is not None
    return f"Spearman {c.link.rho:.2f} with the submitted predictions, p {'< 1e-12' if p < 1e-12 else f'{p:.2g}'}"


def _statistical(*, benchmark: str, n: int, run_mae: float, estimate: Estimate, reported: Reported,
                 comparison: Comparison | None) -> Verdict:
    """``consistent`` or ``differs`` for a run that is neither identical nor in agreement."""
    iv = estimate.interval
    assert iv is not None
    label = stats.METRICS[estimate.metric].label
    rel = stats.relative_difference(estimate.value, reported.value)
    rel_s = f"{rel:+.1%}" if rel is not None else "no relative difference: the reported value is 0"
    interval_s = f"{iv.confidence:.0%} bootstrap interval [{_g(iv.low)}, {_g(iv.high)}]"
    inside = iv.contains(reported.value)
    parts: list[str]
    if inside:
        parts = [f"the reported {label} {_g(reported.value)} ({reported.source}) lies inside the {interval_s} of the "
                 f"re-executed {label} {_g(estimate.value)} ({rel_s})"]
    else:
        side = "above" if reported.value > iv.high else "below"
        parts = [f"the re-executed {label} {_g(estimate.value)} is {rel_s} from the reported {_g(reported.value)} "
                 f"({reported.source}), which lies {side} its {interval_s}"]
    if comparison is None:
        parts.append("no submitted predictions to compare id by id")
        tier = "consistent" if inside else "differs"
    else:
        tier = "consistent" if inside and comparison.linked else "differs"
        if inside and not comparison.linked:
            parts.append(f"but the predictions do not order the test ids like the submitted ones ({_link(comparison)}; "
                         f"needs p < {LINK_P:g}): predictions and ids do not belong together as the authors' do")
        else:
            parts.append(_link(comparison))
        parts.append(_share(comparison))
    if reported.matches_stated is False:
        parts.append(f"the submitted predictions give {label} {reported.recomputed!r}, not the stated {reported.stated!r}")
    return Verdict(tier, "; ".join(parts), benchmark, n, mae=run_mae, estimate=estimate, reported=reported,
                   comparison=comparison)


def judge(*, benchmark: str, exit_code: int | None, output: Path | None, data_kind: str,
          targets: dict[str, float], submitted: Path | None = None, reported_mae: float | None = None,
          comparable: bool = True, note: str = "", test: bool = False,
          n_resamples: int = stats.DEFAULT_RESAMPLES, seed: int = stats.DEFAULT_SEED,
          confidence: float = stats.DEFAULT_CONFIDENCE) -> Verdict:
    """The verdict on a run's predictions ``output`` for ``benchmark``'s test ids ``targets``.

    ``reported_mae`` is the reported value of the benchmark's metric as model.toml states it (MAE
    for the JARVIS benchmarks); with ``submitted`` (the authors' predictions) the reported value
    is recomputed from them. ``n_resamples``, ``seed`` and ``confidence`` set the bootstrap, and
    are recorded with its interval."""
    if exit_code is None:
        return Verdict("failed", "the run did not finish", benchmark)
    if output is None or not output.is_file():
        why = f"exit code {exit_code}, and " if exit_code else "the run exited 0 but "
        return Verdict("failed", why + "wrote no predictions file", benchmark)
    try:
        raw, preds = read_predictions_zip(output)
    except PredictionsError as exc:
        return Verdict("failed", f"malformed predictions: {exc}", benchmark)
    n = len(preds)
    if exit_code != 0:
        return Verdict("failed", f"exit code {exit_code} (a predictions file exists but the run failed)", benchmark, n)
    missing = sorted(set(targets) - set(preds))
    extra = sorted(set(preds) - set(targets))
    if missing:
        return Verdict("failed", f"{len(missing)} test ids have no prediction, e.g. {missing[:3]}", benchmark, n,
                       details={"missing": missing[:20], "extra": extra[:20]})
    if extra:
        return Verdict("failed", f"{len(extra)} predictions for ids that are not test ids, e.g. {extra[:3]}", benchmark,
                       n, details={"extra": extra[:20]})
    if not all(math.isfinite(v) for v in preds.values()):
        return Verdict("failed", "non-finite predictions", benchmark, n)
    ids = sorted(targets)  # one fixed order: the bootstrap's draws depend on it
    truth = [targets[k] for k in ids]
    rule = judged_by(benchmark)
    metric = stats.METRICS[rule.metric]
    run_values = [preds[k] for k in ids]
    run_mae = stats.MAE(run_values, truth)
    value = metric(run_values, truth)
    stated = (Reported(metric.name, reported_mae, "stated in model.toml", stated=reported_mae)
              if reported_mae is not None else None)
    if data_kind == "fixture":
        return Verdict("executable", "ran on fixture data: proves executability, no numerical claim", benchmark, n,
                       mae=run_mae, estimate=Estimate(metric.name, value, None, rule.rule))
    if test:
        # a shortened run (few epochs or estimators) is never held against full-length predictions
        return Verdict("executable", "test mode on the real data: a shortened run, never compared with the "
                       "authors' full-length predictions", benchmark, n, mae=run_mae,
                       estimate=Estimate(metric.name, value, None, rule.rule), reported=stated)
    interval = stats.bootstrap(metric, run_values, truth, n_resamples=n_resamples, confidence=confidence, seed=seed)
    estimate = Estimate(metric.name, value, interval, rule.rule)

    def not_comparable(why: str) -> Verdict:
        return Verdict("not-comparable", why, benchmark, n, mae=run_mae, estimate=estimate, reported=stated)

    if not comparable:
        return not_comparable(note or "no comparable submitted predictions")
    if submitted is None:
        if stated is None:
            return not_comparable("neither submitted predictions nor a reported value to compare with")
        return _statistical(benchmark=benchmark, n=n, run_mae=run_mae, estimate=estimate, reported=stated,
                            comparison=None)
    try:
        sraw, spreds = read_predictions_zip(submitted)
    except PredictionsError as exc:
        return not_comparable(f"the submitted predictions cannot be read: {exc}")
    if set(spreds) != set(targets):
        # evidence, not a flag: a submission for other ids (another split, another dataset version)
        # cannot be the reference for this benchmark's test set
        return not_comparable(f"the submitted predictions are for other ids ({len(set(spreds) - set(targets))} "
                              f"not in the test set, {len(set(targets) - set(spreds))} test ids missing)")
    if not all(math.isfinite(v) for v in spreds.values()):
        return not_comparable("the submitted predictions hold non-finite values")
    recomputed = metric([spreds[k] for k in ids], truth)
    reported = Reported(metric.name, recomputed, "recomputed from the submitted predictions", stated=reported_mae,
                        recomputed=recomputed,
                        matches_stated=stats.matches_stated(recomputed, reported_mae) if reported_mae is not None
                        else None,
                        file=submitted.name)
    comparison = compare(preds, spreds, ids)
    if sraw == raw:
        return Verdict("identical", "byte-identical to the submitted predictions", benchmark, n, mae=run_mae,
                       estimate=estimate, reported=reported, comparison=comparison)
    if comparison.max_relative <= REL_TOL:
        return Verdict("agree", f"every value within {REL_TOL:g} relative of the submitted predictions", benchmark, n,
                       mae=run_mae, estimate=estimate, reported=reported, comparison=comparison)
    return _statistical(benchmark=benchmark, n=n, run_mae=run_mae, estimate=estimate, reported=reported,
                        comparison=comparison)
