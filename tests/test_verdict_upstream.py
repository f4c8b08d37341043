"""Verdicts on real numbers: the authors' submitted predictions and the benchmark targets of the
registry's models, from the ../shared/upstream mirror (skipped cleanly when it is absent).

Every reported MAE in the registry is recomputed from the submitted file to the digit it is
stated with, and perturbed copies of each submitted file are graded into the tier each must get:

| copy | tier | why |
| --- | --- | --- |
| the file itself | identical | the same bytes |
| rows reversed, values re-spelled | agree | the same numbers |
| relative noise of 1e-6 | agree | within 1e-4 relative |
| Gaussian noise, sd 0.1 x the reported MAE | consistent | a retrained model: the MAE moves by a few % |
| Gaussian noise, sd 3 x the reported MAE | differs | the MAE more than doubles |
| prediction column shuffled across the ids | differs | the predictions no longer belong to their ids |
| one id dropped / 10 % of the ids dropped | failed | a test id without a prediction |
| one id duplicated (same or another value) | failed | malformed: an id twice |
"""

from __future__ import annotations

import csv
import io
import random
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from pyrepro import stats, verdict
from pyrepro.registry import load_registry
from tests.conftest import REPO

BENCHMARKS = "jarvis_leaderboard/benchmarks/AI/SinglePropertyPrediction"

pytestmark = pytest.mark.upstream


@dataclass(frozen=True)
class Submission:
    model: str
    benchmark: str
    stated: float
    comparable: bool
    file: str  # relative to the mirror's jarvis_leaderboard checkout

    @property
    def id(self) -> str:
        return f"{self.model}-{self.benchmark}"


SUBMISSIONS = [Submission(spec.name, p.benchmark, p.reported_mae, p.comparable, f"{spec.source.subdir}/{p.file}")
               for spec in load_registry(REPO / "models") for p in spec.predictions if p.reported_mae is not None]


@dataclass(frozen=True)
class Real:
    submitted: Path
    targets: dict[str, float]
    predictions: dict[str, float]
    ids: list[str]


def real(upstream: Path, s: Submission) -> Real:
    lb = upstream / "jarvis_leaderboard"
    targets = verdict.read_targets(lb / BENCHMARKS / f"{s.benchmark}.json.zip", s.benchmark)
    _raw, preds = verdict.read_predictions_zip(lb / s.file)
    return Real(lb / s.file, targets, preds, sorted(targets))


def write_zip(path: Path, rows: list[tuple[str, str]]) -> Path:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["id", "prediction"])
    w.writerows(rows)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(path.stem + ".csv", buf.getvalue())
    return path


def test_registry__fifteen_models_seventeen_reported_maes() -> None:
    assert len({s.model for s in SUBMISSIONS}) == 15 and len(SUBMISSIONS) == 17


@pytest.mark.parametrize("s", SUBMISSIONS, ids=lambda s: s.id)
def test_reported_mae__recomputed_from_the_submitted_predictions__to_the_digit(upstream: Path, s: Submission) -> None:
    r = real(upstream, s)
    assert set(r.predictions) == set(r.targets)  # every submitted file covers exactly the test ids
    recomputed = stats.MAE([r.predictions[k] for k in r.ids], [r.targets[k] for k in r.ids])
    assert f"{recomputed:.4f}" == f"{s.stated:.4f}"  # models.md states every one with four decimals
    assert stats.matches_stated(recomputed, s.stated)
    # and the verdict on the submitted file itself says so
    v = verdict.judge(benchmark=s.benchmark, exit_code=0, output=r.submitted, data_kind="jarvis", targets=r.targets,
                      submitted=r.submitted, reported_mae=s.stated)
    assert v.tier == "identical" and v.reported is not None and v.reported.matches_stated is True
    assert v.reported.value == recomputed and v.estimate is not None and v.estimate.interval is not None
    assert v.estimate.interval.contains(recomputed)


def _perturb(case: str, r: Real, stated: float) -> list[tuple[str, str]]:
    p, ids = r.predictions, r.ids
    rng = random.Random(f"{case}-{len(ids)}")  # seeded: every run grades the same copies
    if case == "reordered":
        return [(k, f"{p[k]:.17g}") for k in reversed(ids)]
    if case == "noise_1e-6_relative":
        return [(k, repr(p[k] * (1 + rng.uniform(-1e-6, 1e-6)))) for k in ids]
    if case == "noise_sd_0.1_mae":
        return [(k, repr(p[k] + rng.gauss(0, 0.1 * stated))) for k in ids]
    if case == "noise_sd_3_mae":
        return [(k, repr(p[k] + rng.gauss(0, 3 * stated))) for k in ids]
    if case == "shuffled_column":
        values = [p[k] for k in ids]
        rng.shuffle(values)
        return [(k, repr(v)) for k, v in zip(ids, values, strict=True)]
    if case == "one_id_dropped":
        return [(k, repr(p[k])) for k in ids if k != ids[len(ids) // 2]]
    if case == "tenth_of_ids_dropped":
        return [(k, repr(p[k])) for i, k in enumerate(ids) if i % 10 != 3]
    if case == "id_duplicated":
        return [(k, repr(p[k])) for k in ids] + [(ids[0], repr(p[ids[0]]))]
    if case == "id_duplicated_other_value":
        return [(k, repr(p[k])) for k in ids] + [(ids[-1], repr(p[ids[-1]] + 1.0))]
    raise AssertionError(case)


CASES = {"reordered": "agree", "noise_1e-6_relative": "agree", "noise_sd_0.1_mae": "consistent",
         "noise_sd_3_mae": "differs", "shuffled_column": "differs", "one_id_dropped": "failed",
         "tenth_of_ids_dropped": "failed", "id_duplicated": "failed", "id_duplicated_other_value": "failed"}


@pytest.mark.parametrize("s", SUBMISSIONS, ids=lambda s: s.id)
def test_perturbed_copies__each_graded_into_its_tier(upstream: Path, tmp_path: Path, s: Submission) -> None:
    """All cases of one submission in one test: the grading reads the same targets and file."""
    r = real(upstream, s)
    got: dict[str, verdict.Verdict] = {}
    for case in CASES:
        out = write_zip(tmp_path / f"{case}.csv.zip", _perturb(case, r, s.stated))
        got[case] = verdict.judge(benchmark=s.benchmark, exit_code=0, output=out, data_kind="jarvis",
                                  targets=r.targets, submitted=r.submitted, reported_mae=s.stated)
    assert {c: v.tier for c, v in got.items()} == CASES
    # the sizes the records give are the sizes of the perturbations
    small, large = got["noise_sd_0.1_mae"], got["noise_sd_3_mae"]
    assert small.relative_difference is not None and abs(small.relative_difference) < 0.05
    assert large.relative_difference is not None and large.relative_difference > 1.0
    assert "which lies below its 95% bootstrap interval" in large.reason
    # a shuffled column never orders the ids like the authors' predictions; where its MAE stays
    # inside the interval (81 ids: intervals of about +-35 %), that is what makes it differ
    shuffled = got["shuffled_column"]
    assert shuffled.comparison is not None and not shuffled.comparison.linked and "Spearman" in shuffled.reason
    iv = shuffled.estimate.interval if shuffled.estimate else None
    assert iv is not None and shuffled.reported is not None
    if iv.contains(shuffled.reported.value):
        assert "predictions do not order the test ids like the submitted ones" in shuffled.reason
    n = len(r.ids)
    c = small.comparison
    assert c is not None and c.n_differing >= 0.95 * n  # a few draws of the noise are below 1e-4 relative
    assert f"{c.n_differing} of {n} predictions ({c.share_differing:.0%}) differ" in small.reason
    assert got["one_id_dropped"].reason.startswith("1 test ids have no prediction")
    assert got["tenth_of_ids_dropped"].reason.startswith(f"{len(range(3, n, 10))} test ids have no prediction")
    assert "appears more than once" in got["id_duplicated_other_value"].reason


def test_comparability__cgcnn_submitted_alignns_predictions__not_comparable_from_the_files(upstream: Path) -> None:
    by_model = {s.model: s for s in SUBMISSIONS if s.benchmark == "dft_3d_exfoliation_energy"}
    lb = upstream / "jarvis_leaderboard"
    digests = {m: verdict.predictions_digest(lb / s.file) for m, s in by_model.items()}
    ok, why = verdict.comparability(reviewed=True, note="", digest=digests["cgcnn"],
                                    others={m: d for m, d in digests.items() if m != "cgcnn"})
    assert not ok and "to alignn's" in why
    s = by_model["cgcnn"]
    r = real(upstream, s)
    v = verdict.judge(benchmark=s.benchmark, exit_code=0, output=r.submitted, data_kind="jarvis", targets=r.targets,
                      submitted=r.submitted, reported_mae=s.stated, comparable=ok, note=why)
    assert v.tier == "not-comparable" and v.estimate is not None and v.estimate.interval is not None


def test_bootstrap__real_test_set__interval_narrows_with_more_ids(upstream: Path) -> None:
    """ElemNet's 3283 superconductor ids: the interval over all of them is narrower than over the
    first 300 by about sqrt(3283 / 300) = 3.3."""
    s = next(s for s in SUBMISSIONS if s.benchmark == "supercon_chem_Tc")
    r = real(upstream, s)
    losses = [abs(r.predictions[k] - r.targets[k]) for k in r.ids]
    full = stats.bootstrap_losses(losses)
    part = stats.bootstrap_losses(losses[:300])
    assert full.contains(stats.MAE.of_losses(losses)) and part.contains(stats.MAE.of_losses(losses[:300]))
    assert full.width < 0.5 * part.width
