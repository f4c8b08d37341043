"""Runtime tools and entry points: console scripts run through os.system count as tools, and
the 15 target contributions give the entry points and tools their shell/Python code shows."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyrepro.scan import scan_path


def test_scan_path__console_script_via_os_system__runtime_tool(tmp_path: Path) -> None:
    (tmp_path / "run.py").write_text(
        "import os\ncmd = 'train_folder.py --root_dir Out'\nos.system(cmd)\nos.system('python helper.py')\n"
        "os.system('helper.py --x')\n")
    (tmp_path / "helper.py").write_text("")
    res = scan_path(tmp_path, python="3.10")
    tools = {t.name: t for t in res.runtime_tools}
    assert "train_folder.py" in tools and tools["train_folder.py"].location.line == 3
    assert "helper.py" not in tools  # the contribution's own script, not something to install
    assert "python" in tools


def test_scan_path__console_script_in_shell__runtime_tool(tmp_path: Path) -> None:
    (tmp_path / "run.sh").write_text("#!/bin/bash\njarvis_populate_data.py --benchmark_file x\npython run.py\n")
    (tmp_path / "run.py").write_text("")
    res = scan_path(tmp_path, python="3.10")
    assert res.to_json()["runtime_tools"] == ["jarvis_populate_data.py", "python"]
    assert [(e.interpreter, e.script) for e in res.entry_points] == [("python", "run.py")]


# (entry-point scripts in order, runtime tools) per target folder, read from each folder's
# run.sh/run.bash and the literal os.system commands of its scripts.
UPSTREAM_TOOLS = {
    "ElemNet1": (["run.py"], ["ipython", "python", "rm", "zip"]),
    "alignn_model": (["run.py", "run_ocp10k.py", "run_100k_pre.py", "run_halide_perovskites.py"],
                     ["conda", "cp", "jarvis_populate_data.py", "pip", "python", "rm", "train_folder.py", "wget", "zip"]),
    "cfid": (["run.py"], ["conda", "python", "zip"]),
    "cfid_chem": (["run.py"], ["conda", "ipython", "python", "rm", "zip"]),
    "cgcnn_model": (["convert_to_leaderboard.py", "run.py"], ["git", "python", "rm", "wget", "zip"]),
    **{k: (["run.py"], ["conda", "jarvis_populate_data.py", "module", "nvidia-smi", "python3", "rm", "zip"])
       for k in ("kgcnn_cgcnn", "kgcnn_coGN", "kgcnn_coNGN", "kgcnn_dimenetPP", "kgcnn_megnet", "kgcnn_schnet")},
    "matformer": (["run.py"], ["conda", "python"]),
    "matminer_lgbm": (["run.py"], ["conda", "ipython", "python", "rm", "zip"]),
    "matminer_rf": (["run.py"], ["python", "zip"]),
    "matminer_xgboost": (["run.py"], ["python", "zip"]),
}


@pytest.mark.upstream
@pytest.mark.parametrize("folder", sorted(UPSTREAM_TOOLS))
def test_scan_path__target_contribution__entry_points_and_tools(upstream: Path, folder: str) -> None:
    res = scan_path(upstream / "jarvis_leaderboard" / "jarvis_leaderboard" / "contributions" / folder, python="3.10")
    scripts, tools = UPSTREAM_TOOLS[folder]
    assert [e.script for e in res.entry_points] == scripts
    assert res.to_json()["runtime_tools"] == tools


def test_parse_code__sys_executable_and_split_commands__recorded() -> None:
    from pyrepro.scan import python as pysrc

    parsed = pysrc.parse_code("import subprocess, sys\n"
                              "subprocess.check_call([sys.executable, '-m', 'pip', 'install', 'alignn'])\n"
                              "subprocess.run('git clone https://x/y.git'.split())\n")
    assert parsed.commands == (("python -m pip install alignn", 2), ("git clone https://x/y.git", 3))


def test_scan_shell__launchers_and_interpreter_options__entry_points() -> None:
    from pyrepro.scan import shell

    sh = shell.scan_shell("srun -n 1 python train.py --x\n/usr/bin/env python3 a.py\nconda run -n e python b.py\n"
                          "conda activate env\npython -c 'import x' c.py\npython -m pkg.main d.py\n"
                          "CUDA_VISIBLE_DEVICES=0 timeout 100 python3.10 -u -W ignore e.py\nmpirun -np 4 python f.py > log\n"
                          "for f in 1 2; do python g.py; done\npython -m pip install x\n")
    assert [(s, ln) for _, s, ln in sh.entry_points] == [("train.py", 1), ("a.py", 2), ("b.py", 3), ("e.py", 7),
                                                         ("f.py", 8), ("g.py", 9)]
    tools = [(c.tool, c.line) for c in sh.commands]
    assert ("srun", 1) in tools and ("python", 1) in tools and ("pip", 10) in tools and ("mpirun", 8) in tools
    assert ("python3.10", 7) in tools and ("timeout", 7) in tools


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab1 .-=/;&|\t_")), max_size=40))
def test_shell_split__plain_lines__same_tokens_as_shlex(line: str) -> None:
    import shlex

    from pyrepro.scan import shell

    lex = shlex.shlex(line, posix=True, punctuation_chars=";&|")
    lex.whitespace_split = True
    toks = list(lex)
    groups: list[list[str]] = [[]]
    for t in toks:
        if t and set(t) <= set(";&|"):
            groups.append([])
        else:
            groups[-1].append(t)
    assert shell._split(line) == [g for g in groups if g]
