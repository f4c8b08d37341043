"""The lock planner (pure) and the conflict rule that relaxes the less central pin first:
decisions from recorded resolver output, a hypothesis property that the planner always ends,
and the lock driver with a fake pdm on the real two-origin conflict."""

from __future__ import annotations

import datetime as dt
import tomllib
from pathlib import Path
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyrepro import lock, lockplan, relax
from pyrepro.proc import Completed
from pyrepro.uvtool import Guide
from tests.fakes import FakeRunner, answer_uv_compile
from tests.test_lock import GOOD_LOCK

MSG = Path(__file__).parent / "data" / "resolver_messages"
ORIGIN = (MSG / "pdm" / "origin_conflict.txt").read_text()
DECLARED = ("pandas==2.0.0", "tensorflow==2.4.0")


def _fail(move: lockplan.Try, text: str) -> lockplan.Tried:
    return lockplan.Tried(move.strategy, move.requirements, move.bound, False, relax.diagnose(text), text,
                          resolver=move.resolver)


# --------------------------------------------------------------------------- the conflict rule

def test_origin_conflict__real_pdm_text__both_origins_read() -> None:
    (p,) = relax.diagnose(ORIGIN)
    assert p.kind == "conflict" and p.package == "numpy"
    assert {relax._origin(r) for r in p.requirements} == {"pandas", "tensorflow"}


def test_origin_conflict__undeclared_third_package__a_declared_origin_pin_is_relaxed() -> None:
    """Before: numpy is not a direct requirement, so no rule applied (category 4, 0 steps)."""
    s = relax.relax(ORIGIN, DECLARED, relax.Facts())
    assert s is not None and s.rule == "widen-conflict" and s.before in DECLARED
    assert "conflicts" in s.reason and "Unable to find a resolution for numpy" in s.trigger


def test_origin_conflict__the_never_imported_pin_goes_first() -> None:
    only_tf = relax.relax(ORIGIN, DECLARED, relax.Facts(imported=frozenset({"tensorflow"})))
    only_pd = relax.relax(ORIGIN, DECLARED, relax.Facts(imported=frozenset({"pandas"})))
    assert only_tf is not None and only_tf.before == "pandas==2.0.0" and only_tf.after == "pandas>=2.0,<3"
    assert "less central" in only_tf.reason and "never imported" in only_tf.reason
    assert only_pd is not None and only_pd.before == "tensorflow==2.4.0" and only_pd.after == "tensorflow>=2.4,<3"


def test_conflict__a_never_imported_range_goes_before_an_imported_exact_pin() -> None:
    reqs = ("pandas>=2.0", "tensorflow==2.4.0")
    s = relax.relax(ORIGIN, reqs, relax.Facts(imported=frozenset({"tensorflow"})))
    assert s is not None and s.before == "pandas>=2.0" and s.after == "pandas"


def test_conflict__equally_central__the_exact_pin_before_a_range() -> None:
    reqs = ("pandas>=2.0", "tensorflow==2.4.0")
    s = relax.relax(ORIGIN, reqs, relax.Facts(imported=frozenset({"tensorflow", "pandas"})))
    assert s is not None and s.before == "tensorflow==2.4.0"


def test_conflict__own_pin_before_an_origin_pin_when_equally_narrow_and_central() -> None:
    reqs = ("requests==2.31.0", "urllib3==1.20")
    s = relax.relax((MSG / "pdm" / "conflict.txt").read_text(), reqs, relax.Facts())
    assert s is not None and s.before == "urllib3==1.20"
    # ... unless the code imports urllib3 and never requests
    s2 = relax.relax((MSG / "pdm" / "conflict.txt").read_text(), reqs,
                     relax.Facts(imported=frozenset({"urllib3"})))
    assert s2 is not None and s2.before == "requests==2.31.0"


def test_conflict__pip_origin_format__read_too() -> None:
    text = (MSG / "pip" / "requests__2_31_0_urllib3__1_20.txt").read_text()
    (p,) = [q for q in relax.diagnose(text) if q.kind == "conflict"]
    assert "requests" in {relax._origin(r) for r in p.requirements}


# --------------------------------------------------------------------------- the planner

def test_plan__strategy_order_then_lookup_then_one_rule_per_attempt() -> None:
    sit = lockplan.start(DECLARED, era_bound="2021-01-15", imported=frozenset({"tensorflow"}))
    m1 = lockplan.next_move(sit)
    assert isinstance(m1, lockplan.Try) and (m1.strategy, m1.bound) == ("as-declared", None)
    sit = sit.after(m1, _fail(m1, ORIGIN))
    m2 = lockplan.next_move(sit)
    assert isinstance(m2, lockplan.Try) and (m2.strategy, m2.bound) == ("date-bounded", "2021-01-15")
    sit = sit.after(m2, _fail(m2, ORIGIN))
    m3 = lockplan.next_move(sit)
    assert isinstance(m3, lockplan.Try) and m3.strategy == "relaxed" and m3.step is not None
    assert m3.bound == "2021-01-15" and m3.requirements == ("pandas>=2.0,<3", "tensorflow==2.4.0")
    sit = sit.after(m3, _fail(m3, ORIGIN))
    m4 = lockplan.next_move(sit)
    assert isinstance(m4, lockplan.Try) and m4.requirements == ("pandas", "tensorflow==2.4.0")  # pandas again
    sit = sit.after(m4, lockplan.Tried("relaxed", m4.requirements, m4.bound, True))
    done = lockplan.next_move(sit)
    assert isinstance(done, lockplan.Locked) and len(sit.steps) == 2


def test_plan__no_date__no_date_bounded_attempt() -> None:
    sit = lockplan.start(("six",))
    assert sit.order == ("as-declared", "relaxed")


def test_plan__missing_release__asks_for_versions_before_deciding() -> None:
    text = (MSG / "pip" / "matbench__0_1_0.txt").read_text()
    sit = lockplan.start(("matbench==0.1.0",))
    m = lockplan.next_move(sit)
    sit = sit.after(m, _fail(m, text))  # type: ignore[arg-type]
    ask = lockplan.next_move(sit)
    assert isinstance(ask, lockplan.LookUp) and ask.versions == ("matbench",)
    sit = sit.learn(versions={"matbench": ("0.2", "0.3")})
    m2 = lockplan.next_move(sit)
    assert isinstance(m2, lockplan.Try) and m2.requirements == ("matbench==0.2",)


def test_plan__date_bound_hides_the_pin__bound_moves_once_then_rules() -> None:
    text = (MSG / "pdm" / "date_bound_hides_pin.txt").read_text()
    (p,) = [q for q in relax.diagnose(text) if q.kind == "not-found"]
    reqs = (f"{p.package}==3.0.1",)
    sit = lockplan.start(reqs, first="date-bounded", era_bound="2023-05-07")
    m = lockplan.next_move(sit)
    sit = sit.after(m, _fail(m, text))  # type: ignore[arg-type]
    ask = lockplan.next_move(sit)
    assert isinstance(ask, lockplan.LookUp) and ask.uploads == ((p.package, "3.0.1"),)
    sit = sit.learn(uploaded={(p.package, "3.0.1"): dt.date(2023, 6, 1)})
    move = lockplan.next_move(sit)
    assert isinstance(move, lockplan.Try) and move.bound == "2023-06-02" and move.requirements == reqs
    assert "released 2023-06-01" in move.bound_note
    sit = sit.after(move, _fail(move, text))
    nxt = lockplan.next_move(sit)  # the same bound is never tried twice: now the rules
    assert not (isinstance(nxt, lockplan.Try) and nxt.bound_note)
    assert sit.relax_bound == "2023-06-02"


def test_plan__timeout_alone__asks_uv_then_gives_up_with_both_reasons() -> None:
    sit = lockplan.start(("six",), first="relaxed")
    m = lockplan.next_move(sit)
    sit = sit.after(m, _fail(m, "timed out after 900 s"))  # type: ignore[arg-type]
    ask = lockplan.next_move(sit)
    assert isinstance(ask, lockplan.LookUp) and ask.guide == ("six",)
    sit = sit.learn(guides={("six",): Guide((), "x No solution found when resolving dependencies")})
    g = lockplan.next_move(sit)
    assert isinstance(g, lockplan.GiveUp) and "timed out" in g.reason and "No solution found" in g.reason


UV_CONFLICT = """error: No solution found when resolving dependencies:
  cause: Because all versions of rxnfp depend on matplotlib==3.2.2 and you require matplotlib==3.1.3, we can
  conclude that your requirements and all versions of rxnfp are incompatible. And because you require rxnfp, we
  can conclude that your requirements are unsatisfiable."""


def test_plan__timeout__uv_names_the_conflict__the_conflict_rules_act_on_its_words() -> None:
    """gauche (corpus7 held): pdm timed out without naming a conflict; uv's explanation names it
    (rxnfp needs matplotlib==3.2.2, the submission pins 3.1.3). widen-conflict acts on it, said so;
    the same set is never tried twice."""
    reqs = ("matplotlib==3.1.3", "numpy", "rxnfp")
    sit = lockplan.start(reqs, first="relaxed", imported=frozenset({"matplotlib", "numpy", "rxnfp"}))
    m = lockplan.next_move(sit)
    sit = sit.after(m, _fail(m, "timed out after 284 s"))  # type: ignore[arg-type]
    ask = lockplan.next_move(sit)
    assert isinstance(ask, lockplan.LookUp) and ask.guide == reqs
    sit = sit.learn(guides={reqs: Guide((), UV_CONFLICT)})
    move = lockplan.next_move(sit)
    assert isinstance(move, lockplan.Try) and move.step is not None
    assert (move.step.rule, move.step.before, move.step.after) == ("widen-conflict", "matplotlib==3.1.3",
                                                                    "matplotlib>=3.1,<4")
    assert "as uv's resolver explained it" in move.step.reason and "rxnfp depend on matplotlib" in move.step.trigger
    assert move.requirements == ("matplotlib>=3.1,<4", "numpy", "rxnfp")


def test_plan__timeout__uv_resolution_pins_the_unpinned_once_uncounted() -> None:
    reqs = ("chgnet", "numpy==1.23.5", "torch>=2", "pandas; python_version < '3.12'", "scikit-learn[alldeps]")
    sit = lockplan.start(reqs, era_bound="2024-01-30")
    for text in ("timed out after 95 s", "timed out after 285 s"):  # as-declared, date-bounded
        m = lockplan.next_move(sit)
        assert isinstance(m, lockplan.Try)
        sit = sit.after(m, _fail(m, text))
    ask = lockplan.next_move(sit)
    assert isinstance(ask, lockplan.LookUp) and ask.guide == reqs
    guide = Guide((("chgnet", "0.3.1"), ("numpy", "1.23.5"), ("pandas", "2.2.0"), ("scikit-learn", "1.4.0"),
                   ("torch", "2.1.2")))
    sit = sit.learn(guides={reqs: guide})
    t = lockplan.next_move(sit)
    assert isinstance(t, lockplan.Try) and t.bound == "2024-01-30"
    # the exact pin stays, the marked requirement stays, extras are kept
    assert t.requirements == ("chgnet==0.3.1", "numpy==1.23.5", "torch==2.1.2", "pandas; python_version < '3.12'",
                              "scikit-learn[alldeps]==1.4.0")
    assert {p.rule for p in (*t.pins, t.step)} == {lockplan.GUIDED_RULE} and len(t.pins) == 2
    assert "timed out after 285 s" in t.step.trigger and "uv's resolver" in t.step.reason  # type: ignore[union-attr]
    sit = sit.after(t, _fail(t, "timed out after 285 s"))
    assert len(sit.steps) == 3  # three steps, none counted toward MAX_STEPS
    u = lockplan.next_move(sit)  # pdm refused the set uv resolved: once, the lock from uv's resolution
    assert isinstance(u, lockplan.Try) and u.resolver == "uv" and u.requirements == t.requirements
    sit = sit.after(u, _fail(u, "error: uv found no lock either"))
    g = lockplan.next_move(sit)  # guided once, uv's lock once: then it ends
    assert isinstance(g, lockplan.GiveUp) and "after pinning a resolution uv found" in g.reason


def test_plan__no_rule_applies__asks_uv_and_gives_up_naming_the_problem() -> None:
    sit = lockplan.start(("six",), first="relaxed")
    m = lockplan.next_move(sit)
    sit = sit.after(m, _fail(m, "ERROR: the moon is in the wrong phase"))  # type: ignore[arg-type]
    ask = lockplan.next_move(sit)
    assert isinstance(ask, lockplan.LookUp) and ask.guide == ("six",)
    sit = sit.learn(guides={("six",): Guide((("six", "1.16.0"),))})
    t = lockplan.next_move(sit)
    assert isinstance(t, lockplan.Try) and t.requirements == ("six==1.16.0",)
    sit = sit.after(t, _fail(t, "ERROR: the moon is in the wrong phase"))  # type: ignore[arg-type]
    u = lockplan.next_move(sit)
    assert isinstance(u, lockplan.Try) and u.resolver == "uv"
    sit = sit.after(u, _fail(u, "ERROR: the moon is in the wrong phase"))
    g = lockplan.next_move(sit)
    assert isinstance(g, lockplan.GiveUp) and "no relaxation rule applies" in g.reason


def test_plan__uv_agrees_but_all_pinned__gives_up_saying_so() -> None:
    sit = lockplan.start(("six==1.16.0",), first="relaxed")
    m = lockplan.next_move(sit)
    sit = sit.after(m, _fail(m, "timed out after 900 s"))  # type: ignore[arg-type]
    sit = sit.learn(guides={("six==1.16.0",): Guide((("six", "1.16.0"),))})
    g = lockplan.next_move(sit)
    assert isinstance(g, lockplan.GiveUp) and "pinned already" in g.reason


_TEXTS = [p.read_text() for p in sorted((MSG / "pdm").glob("*.txt"))] + \
         [p.read_text() for p in sorted((MSG / "pip").glob("*.txt"))] + ["timed out after 60 s", "garbage"]
_REQ = st.sampled_from(["numpy==1.19.2", "pandas==2.0.0", "tensorflow==2.4.0", "urllib3==1.20", "requests==2.31.0",
                        "scikit-learn==1.0.2", "scikit-learn==1.1.0", "sko==0.6.6", "torch==1.12.1+cu113",
                        "matbench==0.1.0", "six", "kgcnn==3.0.1"])


@settings(max_examples=60, deadline=None)
@given(reqs=st.lists(_REQ, min_size=1, max_size=6, unique=True), texts=st.lists(st.sampled_from(_TEXTS), min_size=1),
       date=st.booleans(), imported=st.none() | st.frozensets(st.sampled_from(["numpy", "pandas", "tensorflow"])))
def test_plan__any_failures__ends_and_never_repeats_an_attempt(reqs: list[str], texts: list[str], date: bool,
                                                               imported: frozenset[str] | None) -> None:
    """Whatever the resolver keeps answering, the planner ends (GiveUp) within the step limit
    plus the strategies and bound moves, and never asks for the same attempt twice."""
    sit = lockplan.start(reqs, era_bound="2021-01-15" if date else None, imported=imported)
    seen: set[tuple[str, tuple[str, ...], str | None, str]] = set()
    for n in range(200):
        move = lockplan.next_move(sit)
        if isinstance(move, lockplan.GiveUp):
            break
        if isinstance(move, lockplan.LookUp):
            guide = None if move.guide is None else (
                Guide((), "no solution") if n % 2 else Guide(tuple((relax.req_name(r), "1.0.2") for r in move.guide)))
            sit = sit.learn(versions={v: ("0.2", "1.0.2", "1.12.1", "2.0.0") for v in move.versions},
                            uploaded={u: dt.date(2022, 1, 1) for u in move.uploads},
                            guides=None if guide is None else {move.guide: guide})
            continue
        assert isinstance(move, lockplan.Try)
        key = (move.strategy, move.requirements, move.bound, move.resolver)  # uv's lock of a set pdm refused
        assert key not in seen, f"repeated attempt {key}"
        seen.add(key)
        sit = sit.after(move, _fail(move, texts[n % len(texts)]))
    else:
        raise AssertionError("the planner did not end")
    assert len(lockplan.counted_steps(sit.steps)) <= lockplan.MAX_STEPS


# --------------------------------------------------------------------------- the driver

def _fake_pdm_until(ok_when: str) -> tuple[FakeRunner, list[tuple[str, ...]]]:
    """A pdm that answers the recorded origin conflict until the project's dependencies
    contain ``ok_when``."""
    tried: list[tuple[str, ...]] = []

    def pdm(argv, cwd, env):  # type: ignore[no-untyped-def]
        if "--append" in argv:
            return Completed(tuple(argv), 0, "", "")
        proj = Path(argv[argv.index("-p") + 1])
        deps = tuple(tomllib.loads((proj / "pyproject.toml").read_text())["project"]["dependencies"])
        tried.append(deps)
        if ok_when not in deps:
            return Completed(tuple(argv), 1, "", ORIGIN)
        h = lock.content_hash(lock.read_pyproject(proj / "pyproject.toml"))
        (proj / "pdm.lock").write_text(GOOD_LOCK.format(h=h.removeprefix("sha256:")))
        return Completed(tuple(argv), 0, "", "")

    r = FakeRunner()
    r.on(lock.pdm_command(), pdm)
    answer_uv_compile(r)
    return r, tried


def test_lock_request__two_declared_pins_conflict_on_a_third__less_central_relaxed_category_2(tmp_path: Path) -> None:
    d = tmp_path / "proj"
    d.mkdir()
    (d / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0"\nrequires-python = "==3.8.*"\n'
                                      'dependencies = ["pandas==2.0.0", "tensorflow==2.4.0"]\n\n'
                                      '[tool.pdm]\ndistribution = false\n')
    runner, tried = _fake_pdm_until("pandas")
    req = lock.LockRequest("p", d, "3.8", imported=frozenset({"tensorflow"}))
    out = lock.lock_request(req, runner=runner, python_exe=Path("/usr/bin/python3"))
    assert out.category == 2 and out.strategy == "relaxed"
    assert [s.after for s in out.steps] == ["pandas>=2.0,<3", "pandas"]
    assert all("tensorflow==2.4.0" in t for t in tried)  # the imported pin was never touched
    record = tomllib.loads((d / "lock.toml").read_text())
    assert "never imported" in record["steps"][0]["reason"]
    assert "Unable to find a resolution for numpy" in record["steps"][0]["trigger"]
    assert lock.check_lock_dir(d) == []


def test_lock_request__gives_up__the_record_says_why(tmp_path: Path) -> None:
    d = tmp_path / "proj"
    d.mkdir()
    (d / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0"\nrequires-python = "==3.8.*"\n'
                                      'dependencies = ["pandas==2.0.0", "tensorflow==2.4.0"]\n\n'
                                      '[tool.pdm]\ndistribution = false\n')
    runner, _ = _fake_pdm_until("never")
    out = lock.lock_request(lock.LockRequest("p", d, "3.8"), runner=runner, python_exe=Path("/usr/bin/python3"))
    assert out.category == 4 and "no relaxation rule applies to conflict (numpy)" in out.message
    assert len(out.steps) == 4  # each pin widened, then dropped; then nothing is left to relax


def test_lock_request_from_spec__imported_is_what_the_code_imports() -> None:
    from pyrepro.registry import parse_model

    spec = parse_model(Path(__file__).resolve().parent.parent / "models" / "cfid" / "model.toml")
    req = lock.LockRequest.from_spec(spec)
    assert req.imported is not None and "jarvis-tools" in req.imported and "scikit-learn" not in req.imported


@pytest.mark.integration
@pytest.mark.network
def test_lock_request__real_pdm__declared_pins_conflict_on_numpy__relaxed_to_a_lock(tmp_path: Path) -> None:
    """The recorded conflict, live: tensorflow 2.4.0 and pandas 2.0.0 cannot share a numpy on
    Python 3.8. The code imports tensorflow only, so pandas' pin gives way and tensorflow stays."""
    d = tmp_path / "proj"
    d.mkdir()
    src = (MSG / "pdm" / "origin_conflict.pyproject.toml").read_text()
    (d / "pyproject.toml").write_text("\n".join(ln for ln in src.splitlines() if not ln.startswith("#")) + "\n")
    out = lock.lock_request(lock.LockRequest("p", d, "3.8", imported=frozenset({"tensorflow"})), aarch64=False,
                            timeout=600)
    assert out.category == 2, out.message
    assert out.steps and all(s.package == "pandas" for s in out.steps)
    assert lock.read_lock_versions((d / "pdm.lock").read_text())["tensorflow"] == "2.4.0"
    assert lock.check_lock_dir(d) == []


@pytest.mark.parametrize(("req", "text", "bound", "asked", "day", "moved", "said"), [
    # mlearn_analysis_Cu_mace: its metadata says 2024-11-22, but it imports chipsff, first published
    # 2024-12-11; date-bounded, the resolver cannot find chipsff at all
    ("chipsff", "[CandidateNotFound]: Unable to find candidates for chipsff. There may exist some issues with the "
     "package name", "2024-11-23", "", dt.date(2024, 12, 11), "2024-12-12", "chipsff was first published 2024-12-11"),
    # aizynthfinder (corpus7 dev): dated 2022-11-28, its poetry pyproject asks paretoset ^1.2.3,
    # which no release by then satisfies (1.2.3 came later)
    ("paretoset>=1.2.3,<2.0.0", "ERROR: Unable to find a resolution for paretoset\nPlease make sure the package name "
     "is correct.", "2022-11-29", "<2.0.0,>=1.2.3", dt.date(2023, 3, 1), "2023-03-02",
     "the first release of paretoset that satisfies paretoset>=1.2.3,<2.0.0 was uploaded 2023-03-01"),
])
def test_plan__requirement_first_satisfied_after_the_bound__bound_moves_past_that_upload(
        req: str, text: str, bound: str, asked: str, day: dt.date, moved: str, said: str) -> None:
    """Date-bounded, the resolver finds nothing for a requirement whose project, or whose first
    release satisfying the declared range, came after the bound: the bound moves past that upload
    instead of giving up with no rule."""
    name = req.split(">")[0]
    sit = lockplan.start((req, "numpy"), first="date-bounded", era_bound=bound)
    m = lockplan.next_move(sit)
    sit = sit.after(m, _fail(m, text))  # type: ignore[arg-type]
    ask = lockplan.next_move(sit)
    assert isinstance(ask, lockplan.LookUp) and ask.uploads == ((name, asked),)
    sit = sit.learn(uploaded={(name, asked): day})
    move = lockplan.next_move(sit)
    assert isinstance(move, lockplan.Try) and move.bound == moved and move.requirements == (req, "numpy")
    assert said in move.bound_note


def test_plan__names_the_index_lacks__dropped_without_spending_the_step_limit() -> None:
    """A fully pinned conda export (perovskite-ordering, corpus4 dev) names a dozen system libraries;
    each is dropped in a step of its own (not-on-index), and those steps do not count toward
    MAX_STEPS, so the version relaxations that follow still have their eight."""
    libs = [f"syslib{i}==1.{i}" for i in range(lockplan.MAX_STEPS + 2)]
    sit = lockplan.start(("numpy==1.0", *libs))
    for k in range(len(libs)):
        m = lockplan.next_move(sit)
        assert isinstance(m, lockplan.Try), (k, m)
        name = libs[k].split("==")[0]
        sit = sit.after(m, _fail(m, f"[CandidateNotFound]: Unable to find candidates for {name}. There may exist "
                                     "some issues with the package name or network condition."))
        ask = lockplan.next_move(sit)
        assert isinstance(ask, lockplan.LookUp) and ask.versions == (name,)
        sit = sit.learn(versions={name: ()})
    m = lockplan.next_move(sit)
    assert isinstance(m, lockplan.Try) and m.requirements == ("numpy==1.0",)
    assert m.step is not None and m.step.rule == "not-on-index"
    assert [st.rule for st in sit.steps] == ["not-on-index"] * (len(libs) - 1)  # more than MAX_STEPS


SETUP_REFUSES = """Collecting {name}
  Downloading {name}-{v}.tar.gz (1.9 MB)
    ERROR: Command errored out with exit status 1:
     command: /x/bin/python -c 'import sys, setuptools, tokenize; ...' egg_info --egg-base /tmp/pip-pip-egg-info-Y
    Complete output (1 lines):
    Python 3.5 or later is required!
    ----------------------------------------
ERROR: Command errored out with exit status 1: python setup.py egg_info Check the logs for full command output.
"""


def _newest_under(releases: list[str], req: str) -> str:
    from packaging.requirements import Requirement
    from packaging.version import Version

    spec = Requirement(req).specifier
    return max((v for v in releases if spec.contains(v)), key=Version)


def test_plan__a_descent_through_older_series_doubles__counts_once__its_own_limit_names_the_distribution() -> None:
    """tensormol (corpus10 dev, Python 2.7): pyscf 2.12, 2.11, ... each refused Python 2 (their build
    requirements need setuptools>=61), one series per step, and the descent had spent the eight
    steps at 2.8 while the Python 2 series is 1.7. Each further refusal of one distribution now
    excludes twice as many series (1, 2, 4, ...; never past the major series' first), the descent
    counts as one step toward the limit, and it ends at MAX_SERIES_DESCENT steps, naming it."""
    releases = [f"1.{m}.0" for m in range(8)] + [f"2.{m}.0" for m in range(13)]
    sit = lockplan.start(("numpy", "pyscf"), first="relaxed")
    m = lockplan.next_move(sit)
    taken = []
    while isinstance(m, lockplan.Try):
        pyscf = next(r for r in m.requirements if r.startswith("pyscf"))
        v = _newest_under(releases, pyscf)
        taken.append(v)
        if v.startswith("1."):
            break
        sit = sit.after(m, _fail(m, SETUP_REFUSES.format(name="pyscf", v=v)))
        m = lockplan.next_move(sit)
    assert taken == ["2.12.0", "2.11.0", "2.9.0", "2.5.0", "1.7.0"]  # 13 series refused, in four steps
    assert isinstance(m, lockplan.Try) and m.step is not None
    steps = (*sit.steps, m.step)
    assert [st.after for st in steps] == ["pyscf<2.12", "pyscf<2.10", "pyscf<2.6", "pyscf<2.0"]
    assert len(lockplan.counted_steps(steps)) == 1
    # a distribution with one release per major series: one step per major, and the limit ends it
    sit = lockplan.start(("numpy", "pyscf"), first="relaxed")
    m = lockplan.next_move(sit)
    for k in range(lockplan.MAX_SERIES_DESCENT + 1):  # the first attempt, then one per series
        assert isinstance(m, lockplan.Try), (k, m)
        sit = sit.after(m, _fail(m, SETUP_REFUSES.format(name="pyscf", v=f"{40 - k}.0")))
        m = lockplan.next_move(sit)
    assert len(sit.steps) == lockplan.MAX_SERIES_DESCENT > lockplan.MAX_STEPS
    assert isinstance(m, lockplan.GiveUp) and "pyscf refused this Python in 16 release series" in m.reason
    # other rules' steps still count one each
    other = lockplan.start(("numpy", "pyscf"), first="relaxed")
    m = lockplan.next_move(other)
    other = other.after(m, _fail(m, SETUP_REFUSES.format(name="pyscf", v="2.12.0")))
    m = lockplan.next_move(other)
    assert isinstance(m, lockplan.Try) and m.requirements == ("numpy", "pyscf<2.12")
    other = other.after(m, _fail(m, SETUP_REFUSES.format(name="ase", v="3.19.2")))
    m = lockplan.next_move(other)
    assert isinstance(m, lockplan.Try) and m.requirements == ("numpy", "pyscf<2.12", "ase<3.19")
    other = other.after(m, _fail(m, "ERROR: the moon is in the wrong phase"))
    assert [st.package for st in lockplan.counted_steps(other.steps)] == ["pyscf", "ase"] and len(other.steps) == 2


def test_plan__a_renamed_distribution_stays_as_central_as_the_imported_name() -> None:
    """deep-drug-coder (corpus5 dev): rdkit became rdkit-pypi by rule former-name; the code imports
    rdkit, so rdkit-pypi must count as imported when widen-conflict chooses the less central pin."""
    sit = lockplan.start(("rdkit==2018.09.1.0", "seaborn==0.9.0"), first="relaxed", imported=frozenset({"rdkit"}))
    m = lockplan.next_move(sit)
    assert isinstance(m, lockplan.Try)
    step = relax.Step("former-name", "rdkit", "rdkit==2018.09.1.0", "rdkit-pypi==2018.09.1.0", "renamed",
                      ("rdkit-pypi==2018.09.1.0", "seaborn==0.9.0"))
    t = lockplan.Try("relaxed", step.requirements, None, step=step)
    sit = sit.after(m, _fail(m, "timed out after 1 s")).after(t, _fail(t, "timed out after 1 s"))
    assert sit.facts.central("rdkit-pypi") and not sit.facts.central("seaborn")


def test_plan__bound_moved_for_a_later_project_that_still_is_not_found__the_move_is_taken_back() -> None:
    """chemts-logp (corpus10 held), Python 2.7 bounded by 2020-01-02: pip found no rdkit, whose first
    PyPI release came on 2022-06-17 (for Python 3 only). The bound moved to 2022-06-18, pip still found
    no rdkit, and the relaxation went on under 2022: keras 2.9 came in, which needs TensorFlow 2. The
    move that brought nothing is taken back: the next relaxation goes on under the bound before it."""
    pip_says = ("ERROR: Could not find a version that satisfies the requirement rdkit (from -r r.in (line 6)) "
                "(from versions: none)\nERROR: No matching distribution found for rdkit\n")
    sit = lockplan.start(("keras", "rdkit"), first="date-bounded", era_bound="2020-01-02")
    m = lockplan.next_move(sit)
    sit = sit.after(m, _fail(m, pip_says))  # type: ignore[arg-type]
    sit = sit.learn(uploaded={("rdkit", ""): dt.date(2022, 6, 17)})
    moved = lockplan.next_move(sit)
    assert isinstance(moved, lockplan.Try) and moved.bound == "2022-06-18"
    sit = sit.after(moved, _fail(moved, pip_says))
    ask = lockplan.next_move(sit)
    assert isinstance(ask, lockplan.LookUp) and ask.versions == ("rdkit",)
    sit = sit.learn(versions={"rdkit": ("2022.3.3", "2023.9.1")})
    back = lockplan.next_move(sit)
    assert isinstance(back, lockplan.Try) and back.bound == "2020-01-02" and back.step is not None
    assert "still found no release of rdkit" in back.bound_note and back.step.package == "rdkit"
    sit = sit.after(back, _fail(back, pip_says.replace("rdkit", "rdkit-pypi")))
    assert sit.relax_bound == "2020-01-02"
    # the bound is not moved forward again for the same project, nor taken back twice
    nxt = lockplan.next_move(sit.learn(versions={"rdkit-pypi": ()}, uploaded={("rdkit-pypi", ""): None}))
    assert isinstance(nxt, lockplan.Try) and nxt.bound == "2020-01-02" and not nxt.bound_note


def _bounded_attempt_fails(declared: tuple[str, ...], bound: str, says: str, asked: tuple[str, str],
                           day: dt.date) -> tuple[lockplan.Situation, object]:
    """A per-project resolver's first, date-bounded attempt fails with ``says``; the plan asks for
    the upload day of ``asked`` (project, version or floor), learns ``day``, and moves: (situation,
    that move)."""
    sit = lockplan.start(declared, first="date-bounded", era_bound=bound, per_package=True)
    m = lockplan.next_move(sit)
    sit = sit.after(m, _fail(m, says))  # type: ignore[arg-type]
    ask = lockplan.next_move(sit)
    assert isinstance(ask, lockplan.LookUp) and ask.uploads == (asked,)
    sit = sit.learn(uploaded={asked: day})
    return sit, lockplan.next_move(sit)


def test_plan__per_package_resolver__a_project_first_published_after_the_bound_gets_a_bound_of_its_own() -> None:
    """diagnose-heart (corpus12 dev, Python 2.7, bounded by Lasagne 0.1's day, 2015-08-14): pip found
    no dicom (first published 2017-01-27). Moving the bound of all to 2017 and then 2018 (for
    opencv-python) brought Theano 1.0 in beside Lasagne 0.1. A resolver that takes a bound per
    project (uv, pip's date-bounded index) gives dicom a bound of its own; the others keep 2015."""
    pip_says = ("ERROR: Could not find a version that satisfies the requirement dicom (from -r r.in (line 1)) "
                "(from versions: none)\nERROR: No matching distribution found for dicom\n")
    sit, own = _bounded_attempt_fails(("dicom", "theano"), "2015-08-14", pip_says, ("dicom", ""),
                                      dt.date(2017, 1, 27))
    assert isinstance(own, lockplan.Try) and own.bound == "2015-08-14"
    assert own.package_bounds == (("dicom", "2017-01-28"),) and "dicom up to 2017-01-28" in own.bound_note
    sit = sit.after(own, _fail(own, pip_says.replace("dicom", "cv2")))
    assert sit.relax_bound == "2015-08-14" and sit.package_bounds == (("dicom", "2017-01-28"),)
    # the next project gets its own too, beside dicom's
    sit = sit.learn(uploaded={("cv2", ""): dt.date(2018, 5, 15)})
    nxt = lockplan.next_move(replace(sit, declared=("dicom", "theano", "cv2"), steps=()))
    assert isinstance(nxt, lockplan.Try) and nxt.package_bounds == (("dicom", "2017-01-28"), ("cv2", "2018-05-16"))
    # a resolver with one bound for all (pdm): the bound moves, as before
    one = lockplan.start(("dicom", "theano"), first="date-bounded", era_bound="2015-08-14")
    m = lockplan.next_move(one)
    one = one.after(m, _fail(m, pip_says)).learn(uploaded={("dicom", ""): dt.date(2017, 1, 27)})  # type: ignore[arg-type]
    moved = lockplan.next_move(one)
    assert isinstance(moved, lockplan.Try) and moved.bound == "2017-01-28" and not moved.package_bounds


def test_plan__per_package_resolver__a_floor_first_satisfied_after_the_bound_gets_a_bound_of_its_own() -> None:
    """hifi-gan (corpus15 held, studied after its measurement): the repair rule bundled-library held
    soundfile to >=0.12.0 (2023-02-15) under a 2020 bound. A per-project resolver gives soundfile a
    bound of its own, the day after that release; the others keep 2020."""
    pip_says = ("ERROR: Could not find a version that satisfies the requirement soundfile>=0.12.0 (from -r r.in "
                "(line 1)) (from versions: 0.10.3.post1)\nERROR: No matching distribution found for soundfile>=0.12.0\n")
    _sit, own = _bounded_attempt_fails(("librosa", "soundfile>=0.12.0"), "2020-10-01", pip_says,
                                       ("soundfile", ">=0.12.0"), dt.date(2023, 2, 15))
    assert isinstance(own, lockplan.Try) and own.bound == "2020-10-01"
    assert own.package_bounds == (("soundfile", "2023-02-16"),)
    assert "the first release of soundfile that satisfies soundfile>=0.12.0 was uploaded 2023-02-15" in own.bound_note


def test_date_bound_index__a_project_with_a_bound_of_its_own__its_page_lists_files_by_that_bound() -> None:
    from pyrepro.dateindex import DateBoundIndex

    files = [{"filename": "dicom-0.9.9.post1-py3-none-any.whl", "url": "https://x/d.whl",
              "hashes": {"sha256": "a" * 64}, "upload-time": "2017-01-27T10:00:00Z"}]

    class FakeIndex:
        def _project(self, name: str) -> dict:
            return {"name": name, "files": files}

    view = DateBoundIndex("2015-08-14", FakeIndex(), (("dicom", "2017-01-28"),))  # type: ignore[arg-type]
    assert "dicom-0.9.9.post1" in view._answer("/simple/dicom/")[1]
    assert "dicom-0.9.9.post1" not in view._answer("/simple/Theano/")[1].replace("theano", "")
    assert "dicom-0.9.9.post1" not in DateBoundIndex("2015-08-14", FakeIndex())._answer("/simple/dicom/")[1]  # type: ignore[arg-type]


def test_uv_compile__bounds_of_their_own__exclude_newer_package_per_project(tmp_path: Path) -> None:
    from pyrepro import uvtool
    from tests.fakes import FakeRunner, answer_uv_compile

    r = answer_uv_compile(FakeRunner(), stdout="dicom==0.9.9.post1\n", returncode=0, stderr="")
    uvtool.guide(["dicom"], "3.8", "2020-01-02", runner=r, cache=tmp_path, package_bounds=(("dicom", "2021-01-02"),))
    argv = list(r.calls[0][0])
    pairs = [argv[i + 1] for i, a in enumerate(argv) if a == "--exclude-newer-package"]
    assert "dicom=2021-01-02T00:00:00Z" in pairs


def _uv_conflict(who: str, needs: str, ours: str) -> str:
    name = who.split("==")[0]
    return ("  × No solution found when resolving dependencies:\n"
            f"  ╰─▶ Because {who} depends on {needs} and you require {who}, we can conclude that you require "
            f"{needs}.\n      And because you require {ours}, we can conclude that your requirements are "
            f"unsatisfiable.\n") if name else ""


def test_plan__a_relaxation_back_to_a_set_tried__the_next_rule_acts_instead() -> None:
    """latent-diffusion (corpus18 dev): the README's kornia==0.6.4 needs torch>=1.8.1, beside the
    environment file's torch==1.7.0 and torchvision==0.8.1. nearest-compatible moved torch to 1.8.1;
    torchvision==0.8.1 then asked for torch==1.7.0, and nearest-compatible moved it back: the
    planner gave up on a step back to a set already tried. Now the next rule acts: torchvision's
    the conflict is widened (torch's pin, then what still conflicts)."""
    declared = ("kornia==0.6.4", "torch==1.7.0", "torchvision==0.8.1")
    sit = lockplan.start(declared, imported=frozenset({"kornia", "torch", "torchvision"}))
    sit = sit.learn(versions={"torch": ("1.6.0", "1.7.0", "1.7.1", "1.8.0", "1.8.1", "1.9.0"),
                              "torchvision": ("0.8.1", "0.9.1"), "kornia": ("0.5.0", "0.6.4")})
    m1 = lockplan.next_move(sit)
    assert isinstance(m1, lockplan.Try) and m1.strategy == "as-declared"
    sit = sit.after(m1, _fail(m1, _uv_conflict("kornia==0.6.4", "torch>=1.8.1", "torch==1.7.0")))
    m2 = lockplan.next_move(sit)
    assert isinstance(m2, lockplan.Try) and m2.step is not None and m2.step.rule == "nearest-compatible"
    assert "torch==1.8.1" in m2.requirements
    sit = sit.after(m2, _fail(m2, _uv_conflict("torchvision==0.8.1", "torch==1.7.0", "torch==1.8.1")))
    m3 = lockplan.next_move(sit)
    assert isinstance(m3, lockplan.Try), m3
    assert m3.step is not None and m3.step.rule == "widen-conflict"
    assert all(t.requirements != m3.requirements for t in sit.tried) and "kornia==0.6.4" in m3.requirements


def _at_steps(reqs: tuple[str, ...], n: int, imported: frozenset[str]) -> lockplan.Situation:
    """A situation after ``n`` counted relaxation steps that left ``reqs``, the last attempt failing."""
    fail = lockplan.Tried("relaxed", reqs, "2021-05-05", False, (), "error: no solution")
    steps = tuple(relax.Step("widen-conflict", f"p{i}", f"p{i}==1", f"p{i}>=1", "widened", reqs) for i in range(n))
    return replace(lockplan.start(reqs, era_bound="2021-05-05", imported=imported),
                   tried=(replace(fail, strategy="as-declared"), replace(fail, strategy="date-bounded"), fail),
                   steps=steps)


def test_plan__relaxation_at_its_limit__the_requirements_the_code_never_imports_dropped_together_once() -> None:
    """subtab-tabular (corpus19 dev): a 176-line pip freeze of a CUDA machine; eight steps widened
    and dropped unimported pins one by one (449 s) and found no lock. At the limit, the unimported
    requirements go together (rule freeze-to-imported, one step each, uncounted), the imported ones
    keep their pins under the date bound, and the steps start again; only once."""
    reqs = ("torch==1.5.0", "numpy==1.19.5", "aiohttp==3.7.3", "chardet==4.0.0", "tensorflow==2.4.1")
    imported = frozenset({"torch", "numpy"})
    sit = _at_steps(reqs, lockplan.MAX_STEPS - 1, imported)
    assert not (isinstance(m := lockplan.next_move(sit), lockplan.Try) and m.step is not None
                and m.step.rule == lockplan.TO_IMPORTED_RULE)  # below the limit: the usual rules
    sit = _at_steps(reqs, lockplan.MAX_STEPS, imported)
    move = lockplan.next_move(sit)
    assert isinstance(move, lockplan.Try) and move.requirements == ("torch==1.5.0", "numpy==1.19.5")
    assert move.bound == "2021-05-05" and move.step is not None
    assert {st.rule for st in (*move.pins, move.step)} == {lockplan.TO_IMPORTED_RULE}
    assert [st.before for st in (*move.pins, move.step)] == ["aiohttp==3.7.3", "chardet==4.0.0", "tensorflow==2.4.1"]
    assert "never imports (aiohttp, chardet, tensorflow)" in move.step.reason
    after = sit.after(move, replace(sit.tried[-1], requirements=move.requirements))
    assert lockplan.counted_steps(after.steps) == []  # the steps start again
    spent = replace(after, steps=(*after.steps, *sit.steps))
    assert isinstance(lockplan.next_move(spent), lockplan.GiveUp)  # once
    # every requirement imported, or the imports unknown: the limit ends it as before
    assert isinstance(lockplan.next_move(_at_steps(reqs[:2], lockplan.MAX_STEPS, imported)), lockplan.GiveUp)
    assert isinstance(lockplan.next_move(_at_steps(reqs, lockplan.MAX_STEPS, None)), lockplan.GiveUp)  # type: ignore[arg-type]


def test_plan__a_freeze__mostly_never_imported__dropped_after_half_the_steps() -> None:
    freeze = ("torch==1.5.0", "numpy==1.19.5", *(f"dep{i}==1.0" for i in range(lockplan.FREEZE_SIZE)))
    move = lockplan.next_move(_at_steps(freeze, lockplan.MAX_STEPS // 2, frozenset({"torch", "numpy"})))
    assert isinstance(move, lockplan.Try) and move.requirements == ("torch==1.5.0", "numpy==1.19.5")
    assert move.step is not None and move.step.rule == lockplan.TO_IMPORTED_RULE


# --------------------------------------------------------------------------- the pin search (issue 42)

_CONFLICT = ("ERROR: Unable to find a resolution for numpy\nbecause of the following conflicts:\n"
             "  numpy<2.0 (from mace-torch@0.3.9)\n  numpy==2.2.0 (from project)\n")


def _failed(reqs: tuple[str, ...], text: str = _CONFLICT) -> lockplan.Tried:
    return lockplan.Tried("as-declared", reqs, None, False, relax.diagnose(text), text)


def test_next_move__a_conflict_rule_would_act__the_pin_search_comes_first() -> None:
    reqs = ("mace-torch==0.3.9", "numpy==2.2.0")
    s = lockplan.start(reqs, search=True)
    s = s.after(lockplan.Try("as-declared", reqs, None), _failed(reqs))
    s = s.learn(versions={"numpy": ("2.2.0", "1.26.4")})
    move = lockplan.next_move(s)
    assert isinstance(move, lockplan.Search) and move.requirements == reqs and "numpy<2.0" in move.error
    # without the search (Python 2's pip locks, no uv), the rule acts as before
    plain = lockplan.next_move(replace(s, search=False))
    assert isinstance(plain, lockplan.Try) and plain.step is not None and plain.step.rule == "nearest-compatible"


def test_next_move__the_search_found_a_set__it_is_the_next_attempt_with_one_step_per_moved_pin() -> None:
    from pyrepro import pinsearch

    reqs = ("mace-torch==0.3.9", "numpy==2.2.0")
    s = lockplan.start(reqs, search=True)
    s = s.after(lockplan.Try("as-declared", reqs, None), _failed(reqs))
    found = pinsearch.Outcome(True, ("mace-torch==0.3.9", "numpy==1.26.4"), "3.10", (pinsearch.Relaxation(
        "numpy", "numpy==2.2.0", "numpy==1.26.4", "nearest release", "1.26.4", "other major", "numpy<2.0", 5,
        "imports unknown; an exact pin; a model package"),), ())
    move = lockplan.next_move(s.found(found))
    assert isinstance(move, lockplan.Try) and move.requirements == found.requirements
    assert move.step is not None and move.step.rule == "pin-search" and move.pins == ()
    assert "found by the pin search" in move.step.reason


def test_next_move__no_rule_applies__the_search_before_the_give_up_and_its_proof_in_the_reason() -> None:
    from pyrepro import pinsearch
    from pyrepro.uvtool import Guide

    reqs = ("oldtorch==0.4.0",)
    text = "something no rule reads\n"
    s = lockplan.start(reqs, search=True)
    s = s.after(lockplan.Try("as-declared", reqs, None), _failed(reqs, text))
    s = s.learn(guides={reqs: Guide((), "no")})
    assert isinstance(lockplan.next_move(s), lockplan.Search)
    proof = pinsearch.Outcome(False, reqs, "3.10", proof="even the fully relaxed set ... (oldtorch) makes it fail",
                              culprits=("oldtorch",))
    give_up = lockplan.next_move(s.found(proof))
    assert isinstance(give_up, lockplan.GiveUp) and "the pin search: even the fully relaxed set" in give_up.reason
