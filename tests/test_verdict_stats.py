"""Statistical verdicts on small fixtures: the benchmark's metric, its bootstrap interval, the
reported value (recomputed from the submitted predictions), the tiers identical / agree /
consistent / differs, and the rules that stay (no output, a clean exit, fixture data)."""

from __future__ import annotations

import json
import math
import re
import zipfile
from pathlib import Path

import pytest

from pyrepro import stats, verdict
from pyrepro.registry import load_registry

IDS = [f"m{i:02d}" for i in range(40)]
TARGETS = {k: 50.0 + 30.0 * math.sin(i) + 10.0 * (i % 5) for i, k in enumerate(IDS)}
SUBMITTED = {k: TARGETS[k] + 12.0 * math.cos(3 * i) for i, k in enumerate(IDS)}
SUBMITTED_MAE = stats.MAE([SUBMITTED[k] for k in IDS], [TARGETS[k] for k in IDS])
STATED = round(SUBMITTED_MAE, 4)  # what a model.toml says, to four decimals
# a retrained model: every prediction moved by 0.3 to 0.7, either way (the errors are up to 12)
NOISY = {k: SUBMITTED[k] + (-1) ** i * (0.3 + 0.2 * (i % 3)) for i, k in enumerate(IDS)}


def write_zip(path: Path, rows: list[tuple[str, float | str]], header: str = "id,prediction") -> Path:
    text = header + "\n" + "".join(f"{k},{v}\n" for k, v in rows)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("predictions.csv", text)
    return path


@pytest.fixture
def submitted(tmp_path: Path) -> Path:
    return write_zip(tmp_path / "submitted.zip", [(k, repr(SUBMITTED[k])) for k in IDS])


def judge(output: Path | None, submitted: Path | None, **kw: object) -> verdict.Verdict:
    args: dict[str, object] = {"benchmark": "dft_3d_exfoliation_energy", "exit_code": 0, "output": output,
                               "data_kind": "jarvis", "targets": TARGETS, "submitted": submitted,
                               "reported_mae": STATED}
    args.update(kw)
    return verdict.judge(**args)  # type: ignore[arg-type]


def run_file(tmp_path: Path, name: str, values: dict[str, float]) -> Path:
    return write_zip(tmp_path / f"{name}.zip", [(k, repr(values[k])) for k in IDS])


def test_judge__the_submitted_file_itself__identical_with_interval_and_recomputed_reported(
        submitted: Path) -> None:
    v = judge(submitted, submitted)
    assert v.tier == "identical" and v.passed
    assert v.estimate is not None and v.estimate.metric == "mae" and v.estimate.value == pytest.approx(SUBMITTED_MAE)
    iv = v.estimate.interval
    assert iv is not None and iv.contains(SUBMITTED_MAE) and iv.low < SUBMITTED_MAE < iv.high
    assert (iv.n_resamples, iv.seed, iv.confidence) == (5000, 0, 0.95)
    assert v.reported == verdict.Reported("mae", SUBMITTED_MAE, "recomputed from the submitted predictions",
                                          stated=STATED, recomputed=SUBMITTED_MAE, matches_stated=True,
                                          file="submitted.zip")
    assert v.relative_difference == 0.0 and v.comparison is not None and v.comparison.n_differing == 0


def test_judge__same_values_other_order_and_spelling__agree(tmp_path: Path, submitted: Path) -> None:
    out = write_zip(tmp_path / "run.zip", [(k, f"{SUBMITTED[k]:.12g}") for k in reversed(IDS)])
    v = judge(out, submitted)
    assert v.tier == "agree" and v.passed
    assert v.max_relative_difference is not None and v.max_relative_difference <= verdict.REL_TOL


def test_judge__retraining_noise__consistent_and_says_where_the_reported_value_lies(
        tmp_path: Path, submitted: Path) -> None:
    v = judge(run_file(tmp_path, "noisy", NOISY), submitted)
    assert v.tier == "consistent" and v.passed
    assert v.relative_difference is not None and abs(v.relative_difference) < 0.05
    assert v.comparison is not None and v.comparison.linked and v.comparison.n_differing == 40
    assert re.search(r"the reported MAE [\d.]+ \(recomputed from the submitted predictions\) lies inside the 95% "
                     r"bootstrap interval \[[\d.]+, [\d.]+\] of the re-executed MAE [\d.]+ \([+-]\d+\.\d%\)", v.reason)
    assert "40 of 40 predictions (100%) differ from the submitted ones by more than 0.0001 relative" in v.reason


def test_judge__systematic_offset__differs_by_how_much_and_on_every_prediction(tmp_path: Path,
                                                                              submitted: Path) -> None:
    off = {k: SUBMITTED[k] + 40.0 for k in IDS}
    v = judge(run_file(tmp_path, "off", off), submitted)
    assert v.tier == "differs" and not v.passed
    assert v.estimate is not None and v.estimate.interval is not None
    assert not v.estimate.interval.contains(SUBMITTED_MAE)
    rel = v.relative_difference
    assert rel is not None and rel > 1.0
    assert f"is {rel:+.1%} from the reported" in v.reason and "which lies below its 95% bootstrap interval" in v.reason
    assert "40 of 40 predictions (100%)" in v.reason


def test_judge__a_few_predictions_broken__differs_on_their_share(tmp_path: Path, submitted: Path) -> None:
    broken = dict(SUBMITTED)
    for k in IDS[:4]:
        broken[k] = SUBMITTED[k] * 10
    v = judge(run_file(tmp_path, "broken", broken), submitted)
    assert v.tier == "differs"
    assert v.comparison is not None and v.comparison.n_differing == 4 and v.comparison.share_differing == 0.1
    assert "4 of 40 predictions (10%) differ" in v.reason


def test_judge__predictions_reversed_across_ids__same_mae_but_differs(tmp_path: Path) -> None:
    """A column of predictions that no longer belongs to its ids can keep the MAE exactly (here
    every target is 0, so only the multiset of predictions counts): the metric is inside its
    interval, and the ids are ordered the other way round."""
    zero = dict.fromkeys(IDS, 0.0)
    sub = {k: 5.0 + i for i, k in enumerate(IDS)}
    submitted = run_file(tmp_path, "sub", sub)
    reversed_ = dict(zip(IDS, reversed([sub[k] for k in IDS]), strict=True))
    v = judge(run_file(tmp_path, "rev", reversed_), submitted, targets=zero, reported_mae=None)
    assert v.estimate is not None and v.estimate.interval is not None and v.reported is not None
    assert v.estimate.value == pytest.approx(v.reported.value)
    assert v.estimate.interval.contains(v.reported.value)
    assert v.tier == "differs"
    assert "do not order the test ids like the submitted ones (Spearman -1.00" in v.reason


def test_judge__no_submitted_file_but_a_reported_value__judged_on_the_metric_alone(tmp_path: Path) -> None:
    run = run_file(tmp_path, "run", SUBMITTED)
    v = judge(run, None)
    assert v.tier == "consistent" and v.comparison is None
    assert v.reported == verdict.Reported("mae", STATED, "stated in model.toml", stated=STATED)
    assert "(stated in model.toml)" in v.reason and "no submitted predictions to compare id by id" in v.reason
    assert judge(run, None, reported_mae=3 * STATED).tier == "differs"
    nothing = judge(run, None, reported_mae=None)
    assert nothing.tier == "not-comparable" and "neither submitted predictions nor a reported value" in nothing.reason


def test_judge__stated_value_not_what_the_submitted_predictions_give__said(tmp_path: Path, submitted: Path) -> None:
    v = judge(run_file(tmp_path, "noisy", NOISY), submitted, reported_mae=STATED + 0.01)
    assert v.reported is not None and v.reported.matches_stated is False
    assert v.reported.value == pytest.approx(SUBMITTED_MAE)  # the recomputed value is the reference
    assert f"the submitted predictions give MAE {SUBMITTED_MAE!r}, not the stated {STATED + 0.01!r}" in v.reason


def test_judge__bootstrap_settings__recorded_and_used(tmp_path: Path, submitted: Path) -> None:
    noisy = run_file(tmp_path, "noisy", NOISY)
    a = judge(noisy, submitted, n_resamples=800, seed=7, confidence=0.9)
    b = judge(noisy, submitted, n_resamples=800, seed=7, confidence=0.9)
    assert a.estimate is not None and a.estimate.interval is not None
    assert (a.estimate.interval.n_resamples, a.estimate.interval.seed, a.estimate.interval.confidence) == (800, 7, 0.9)
    assert a == b
    wide = judge(noisy, submitted, n_resamples=800, seed=7, confidence=0.99)
    assert wide.estimate is not None and wide.estimate.interval is not None
    assert wide.estimate.interval.width > a.estimate.interval.width
    assert "90% bootstrap interval" in a.reason


# ------------------------------------------------------------------------- the rules that stay

def test_judge__fixture_data__executable_even_when_identical(submitted: Path) -> None:
    v = judge(submitted, submitted, data_kind="fixture")
    assert v.tier == "executable" and v.estimate is not None and v.estimate.interval is None
    assert v.reported is None and v.comparison is None


def test_judge__test_mode_on_real_data__executable_no_interval(submitted: Path) -> None:
    v = judge(submitted, submitted, test=True)
    assert v.tier == "executable" and v.estimate is not None and v.estimate.interval is None
    assert v.reported_mae == STATED


@pytest.mark.parametrize("case", ["no_file", "did_not_finish", "nonzero_exit", "dropped_id", "duplicated_id",
                                  "extra_id", "non_finite"])
def test_judge__broken_outputs__failed_never_a_pass(tmp_path: Path, submitted: Path, case: str) -> None:
    rows = [(k, repr(SUBMITTED[k])) for k in IDS]
    kw: dict[str, object] = {}
    out: Path | None
    if case == "no_file":
        out, why = None, "the run exited 0 but wrote no predictions file"
    elif case == "did_not_finish":
        out, why = submitted, "the run did not finish"
        kw["exit_code"] = None
    elif case == "nonzero_exit":
        out, why = submitted, "exit code 1 (a predictions file exists but the run failed)"
        kw["exit_code"] = 1
    elif case == "dropped_id":
        out, why = write_zip(tmp_path / "o.zip", rows[1:]), "1 test ids have no prediction, e.g. ['m00']"
    elif case == "duplicated_id":
        out, why = write_zip(tmp_path / "o.zip", [*rows, rows[3]]), "id m03 appears more than once"
    elif case == "extra_id":
        out, why = write_zip(tmp_path / "o.zip", [*rows, ("zz", "1.0")]), "1 predictions for ids that are not test ids"
    else:
        out, why = write_zip(tmp_path / "o.zip", [*rows[1:], (IDS[0], "nan")]), "non-finite predictions"
    v = judge(out, submitted, **kw)
    assert v.tier == "failed" and not v.passed and why in v.reason
    assert v.estimate is None and v.reported is None


def test_judge__not_comparable_still_records_the_numbers(tmp_path: Path, submitted: Path) -> None:
    v = judge(submitted, submitted, comparable=False, note="a copy of another model's file")
    assert v.tier == "not-comparable" and not v.passed and v.reason == "a copy of another model's file"
    assert v.estimate is not None and v.estimate.interval is not None
    assert v.reported is not None and v.reported.source == "stated in model.toml"
    bad = write_zip(tmp_path / "bad.zip", [(k, "inf" if k == IDS[0] else repr(SUBMITTED[k])) for k in IDS])
    nf = judge(submitted, bad)
    assert nf.tier == "not-comparable" and "non-finite" in nf.reason


def test_verdict_to_json__flat_keys_of_earlier_records_and_the_typed_parts(tmp_path: Path, submitted: Path) -> None:
    v = judge(run_file(tmp_path, "noisy", NOISY), submitted)
    doc = json.loads(json.dumps(v.to_json()))
    assert doc["tier"] == "consistent" and doc["benchmark"] == "dft_3d_exfoliation_energy" and doc["n_predictions"] == 40
    assert doc["mae"] == v.mae and doc["reported_mae"] == pytest.approx(SUBMITTED_MAE)
    assert doc["relative_mae_difference"] == doc["relative_difference"] == v.relative_difference
    assert doc["max_relative_difference"] == v.max_relative_difference
    assert doc["metric"]["interval"]["n_resamples"] == 5000 and doc["metric"]["judged_by"] == verdict.JARVIS_SPP
    assert doc["metric"]["interval"]["low"] < doc["reported"]["value"] < doc["metric"]["interval"]["high"]
    assert doc["reported"]["source"] == "recomputed from the submitted predictions"
    assert doc["comparison"]["share_differing"] == 1.0 and doc["comparison"]["linked"] is True
    assert doc["comparison"]["link"]["rho"] > 0.99


# ------------------------------------------------------------------ which metric a benchmark is judged by

def test_benchmark_metrics__every_registry_benchmark_listed__metric_is_the_one_in_the_file_names(
        repo_root: Path) -> None:
    """The leaderboard names the metric in the submitted files (``...-test-mae.csv.zip``): the table
    says the same for every benchmark a registry model serves."""
    seen = set()
    for spec in load_registry(repo_root / "models"):
        for b in spec.benchmarks:
            assert b in verdict.BENCHMARK_METRICS, f"{spec.name}: {b} is not in verdict.BENCHMARK_METRICS"
            seen.add(b)
        for p in spec.predictions:
            m = re.search(r"-test-(\w+)\.csv\.zip$", p.file)
            assert m, p.file
            assert verdict.BENCHMARK_METRICS[p.benchmark].metric == m.group(1), (spec.name, p.file)
    assert seen == set(verdict.BENCHMARK_METRICS)
    assert all(j.metric in stats.METRICS for j in verdict.BENCHMARK_METRICS.values())


def test_judged_by__unlisted_benchmark__the_jarvis_rule_and_says_so() -> None:
    j = verdict.judged_by("some_new_task")
    assert j.metric == "mae" and "some_new_task is not listed in verdict.BENCHMARK_METRICS" in j.rule
