"""Verdicts: what a run's predictions say about reproduction, plainly.

Tiers, from strongest to weakest claim:

* ``identical``: the predictions csv equals the authors' submitted csv byte for byte;
* ``agree``: same ids, every value within 1e-4 relative;
* ``differs``: anything else (the record says by how much);
* ``executable``: a fixture-data run (or a ``--test`` run on real data) that exited 0 and wrote
  a well-formed prediction for exactly the test ids; it proves executability, never a numerical
  result;
* ``not-comparable``: a real-data run whose submitted file cannot be compared (cgcnn's is a
  copy of ALIGNN's); the record says why;
* ``failed``: no output, a malformed output, or a non-zero exit. A missing output is never a
  pass, and a clean exit alone is never a pass.

With real data the MAE against the benchmark's test targets and the signed relative
difference to the reported MAE are recorded too.
"""

from __future__ import annotations

import csv
import io
import json
import math
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REL_TOL = 1e-4


@dataclass(frozen=True)
class Verdict:
    tier: str
    reason: str
    benchmark: str
    n_predictions: int = 0
    mae: float | None = None
    reported_mae: float | None = None
    relative_mae_difference: float | None = None
    max_relative_difference: float | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.tier in ("identical", "agree", "executable")

    def to_json(self) -> dict[str, Any]:
        return {"tier": self.tier, "reason": self.reason, "benchmark": self.benchmark,
                "n_predictions": self.n_predictions, "mae": self.mae, "reported_mae": self.reported_mae,
                "relative_mae_difference": self.relative_mae_difference,
                "max_relative_difference": self.max_relative_difference, "details": self.details}


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


def judge(*, benchmark: str, exit_code: int | None, output: Path | None, data_kind: str,
          targets: dict[str, float], submitted: Path | None = None, reported_mae: float | None = None,
          comparable: bool = True, note: str = "", test: bool = False) -> Verdict:
    if exit_code is None:
        return Verdict("failed", "the run did not finish", benchmark)
    if output is None or not output.is_file():
        why = f"exit code {exit_code}, and " if exit_code else "the run exited 0 but "
        return Verdict("failed", why + "wrote no predictions file", benchmark)
    try:
        raw, preds = read_predictions_zip(output)
    except PredictionsError as exc:
        return Verdict("failed", f"malformed predictions: {exc}", benchmark)
    if exit_code != 0:
        return Verdict("failed", f"exit code {exit_code} (a predictions file exists but the run failed)", benchmark,
                       len(preds))
    missing = sorted(set(targets) - set(preds))
    extra = sorted(set(preds) - set(targets))
    if missing:
        return Verdict("failed", f"{len(missing)} test ids have no prediction, e.g. {missing[:3]}", benchmark, len(preds),
                       details={"missing": missing[:20], "extra": extra[:20]})
    if extra:
        return Verdict("failed", f"{len(extra)} predictions for ids that are not test ids, e.g. {extra[:3]}", benchmark,
                       len(preds), details={"extra": extra[:20]})
    if not all(math.isfinite(v) for v in preds.values()):
        return Verdict("failed", "non-finite predictions", benchmark, len(preds))
    run_mae = mae(preds, targets)
    if data_kind == "fixture":
        return Verdict("executable", "ran on fixture data: proves executability, no numerical claim", benchmark,
                       len(preds), mae=run_mae)
    if test:
        # a shortened run (few epochs or estimators) is never held against full-length predictions
        return Verdict("executable", "test mode on the real data: a shortened run, never compared with the "
                       "authors' full-length predictions", benchmark, len(preds), mae=run_mae, reported_mae=reported_mae)
    rel = (run_mae - reported_mae) / reported_mae if reported_mae else None
    if not comparable or submitted is None:
        return Verdict("not-comparable", note or "no comparable submitted predictions", benchmark, len(preds),
                       mae=run_mae, reported_mae=reported_mae, relative_mae_difference=rel)
    try:
        sraw, spreds = read_predictions_zip(submitted)
    except PredictionsError as exc:
        return Verdict("not-comparable", f"the submitted predictions cannot be read: {exc}", benchmark, len(preds),
                       mae=run_mae, reported_mae=reported_mae, relative_mae_difference=rel)
    if set(spreds) != set(targets):
        # evidence, not a flag: a submission for other ids (another split, another dataset version)
        # cannot be the reference for this benchmark's test set
        return Verdict("not-comparable", f"the submitted predictions are for other ids ({len(set(spreds) - set(targets))} "
                       f"not in the test set, {len(set(targets) - set(spreds))} test ids missing)", benchmark,
                       len(preds), mae=run_mae, reported_mae=reported_mae, relative_mae_difference=rel)
    if sraw == raw:
        return Verdict("identical", "byte-identical to the submitted predictions", benchmark, len(preds), run_mae,
                       reported_mae, rel, 0.0)
    common = [k for k in spreds if k in preds]
    diffs = [abs(preds[k] - spreds[k]) / max(abs(spreds[k]), 1e-12) for k in common]
    max_rel = max(diffs) if diffs else None
    if set(spreds) == set(preds) and max_rel is not None and max_rel <= REL_TOL:
        return Verdict("agree", f"every value within {REL_TOL:g} relative of the submitted predictions", benchmark,
                       len(preds), run_mae, reported_mae, rel, max_rel)
    return Verdict("differs", f"predictions differ from the submitted ones (max relative difference {max_rel:.3g})"
                   if max_rel is not None else "no ids in common with the submitted predictions", benchmark,
                   len(preds), run_mae, reported_mae, rel, max_rel)
