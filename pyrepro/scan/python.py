"""Imports from Python source, by AST reflection (never executing the code).

``parse_code`` handles one code text (a ``.py`` file or a notebook cell):

* IPython lines (``!pip install ...``, ``%matplotlib``, ``%%time``) are blanked first, so
  exported notebooks keep their imports and line numbers stay true;
* ``import``/``from ... import`` anywhere (functions included) are required, unless they sit
  in the body of a ``try`` whose handlers catch ImportError (or everything): then optional;
* ``importlib.import_module("x")`` and ``__import__("x")`` with a literal count;
* the code strings of ``get_ipython().run_cell_magic(name, line, code)`` are parsed too;
* cell magics by kind (``%%bash``/``%%sh``/``%%script bash`` bodies are shell commands,
  ``%%writefile x.py`` is Python, ``%%html`` and other languages are skipped, ``%%time`` and
  friends are Python);
* literal shell commands (``os.system``, ``subprocess.*``) are kept as runtime commands;
* when the code does not parse (Python 2, syntax errors), a tokenizer/line-level fallback
  still finds ``import`` lines, with a warning naming the line.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pyrepro.scan import markers

MAGIC_LINE = re.compile(r"^(\s*)([!%].*)$")
# IPython's automagic (Colab exports keep it): `pip install x` without ! or %, never valid Python
AUTOMAGIC = re.compile(r"^(\s*)((?:pip3?|conda|mamba)\s+(?:install|uninstall)\b.*)$")
# IPython's help syntax: `?obj`, `??obj`, `obj?`, `obj??` (notebooks keep it), never valid Python
HELP_LINE = re.compile(r"^(\s*)(\?{1,2}[A-Za-z_][\w.]*|[A-Za-z_][\w.]*\?{1,2})\s*$")
ASSIGN_MAGIC = re.compile(r"^(\s*)([A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*)\s*=\s*([!%].*)$")
_IMPORT_LINE = re.compile(r"^\s*import\s+([A-Za-z_][\w.]*(?:\s+as\s+\w+)?(?:\s*,\s*[A-Za-z_][\w.]*(?:\s+as\s+\w+)?)*)")
_FROM_LINE = re.compile(r"^\s*from\s+(\.*)([A-Za-z_][\w.]*)?\s+import\b")
_PY2_PRINT = re.compile(r"^\s*print\s+[^\s(=]")
_PY2_EXCEPT = re.compile(r"^\s*except\s+[\w.]+\s*,\s*\w+\s*:")
IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError"}
SHELL_CALLS = {"system", "popen", "run", "call", "check_call", "check_output", "Popen", "getoutput", "getstatusoutput"}


@dataclass(frozen=True)
class RawImport:
    module: str  # dotted name as written (absolute); "" for a relative import of the package itself
    line: int
    optional: bool
    relative: bool = False
    dynamic: bool = False
    names: tuple[str, ...] = ()  # ``from module import a, b``: ("a", "b") (namespace packages need them)
    marker: str | None = None  # PEP 508 marker of the platform/version guard around the import
    # the run-time condition of the innermost ``if`` around the import (``args.use_apex``), when it
    # is not a platform guard, ``TYPE_CHECKING`` or the main guard: the code runs without the import
    # when that branch is not taken (pocket2mol's ``from apex import amp`` under ``if use_apex``)
    branch: str | None = None


@dataclass(frozen=True)
class Parsed:
    imports: tuple[RawImport, ...]
    commands: tuple[tuple[str, int], ...]  # (shell command text, line)
    warnings: tuple[tuple[int | None, str], ...]  # (line, message)
    python2: tuple[tuple[int, str], ...]  # (line, evidence)
    fallback: bool = False
    syspath: tuple[tuple[int, str], ...] = ()  # (line, folder) of literal sys.path inserts, relative to the file
    main_guard: bool = False  # ``if __name__ == "__main__":``: the file is run as a script


# Line magics whose argument is Python code (``%time import x`` must keep its import).
CODE_LINE_MAGICS = {"time", "timeit", "prun"}
_MAGIC_OPTS_WITH_VALUE = {"-n", "-r", "-p", "-s", "-T", "-D", "-l"}


def _line_magic_code(body: str) -> str | None:
    """The Python code of ``%time code`` / ``%timeit -n1 code`` / ``%prun -s x code``, or None.
    ``%load_ext x.y`` / ``%reload_ext x.y`` import the extension's module: ``import x.y`` (IPython's
    own extensions, ``autoreload``: ``import IPython``; ``resolve.ipython_extension_module``)."""
    m = re.match(r"%(\w+)\s*(.*)$", body)
    if m and m.group(1) in ("load_ext", "reload_ext"):
        ext = m.group(2).strip()
        if re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", ext):
            from pyrepro.resolve import ipython_extension_module

            return f"import {ipython_extension_module(ext)}"
        return None
    if not m or m.group(1) not in CODE_LINE_MAGICS:
        return None
    rest = m.group(2)
    while rest.startswith("-"):
        opt, _, after = rest.partition(" ")
        rest = after.lstrip()
        if opt in _MAGIC_OPTS_WITH_VALUE and rest:  # '-n 1': the value is the next word
            rest = rest.partition(" ")[2].lstrip()
    return rest or None


def _line_magic_command(name: str, arg: str) -> str | None:
    """The shell command of ``%pip install x`` / ``%conda install x`` (``pip install x``) and of
    ``%sx cmd`` / ``%system cmd`` (``cmd``); None for other magics."""
    arg = arg.strip()
    if name in ("pip", "conda", "mamba") and arg:
        return f"{name} {arg}"
    if name in ("sx", "system") and arg:
        return arg
    return None


def _indent_of(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def blank_magics(text: str) -> tuple[str, list[tuple[str, int]]]:
    """Blank IPython ``!``/``%`` lines (and their backslash continuations); return the shell
    commands of ``!`` lines with their line numbers. Line numbers never move: a magic line
    inside an indented block becomes ``pass`` (a bare blank would leave ``if x:`` empty), and
    the code of ``%time``/``%timeit``/``%prun`` lines stays in place."""
    out: list[str] = []
    commands = []
    cont = False
    last_code = ""  # the last non-blank line kept as code
    for i, line in enumerate(text.split("\n"), 1):
        if not cont and (auto := AUTOMAGIC.match(line)):
            line = f"{auto.group(1)}!{auto.group(2)}"
        m = MAGIC_LINE.match(line) or (None if cont else HELP_LINE.match(line))
        if not cont and not m and (am := ASSIGN_MAGIC.match(line)):  # files = !ls  /  out = %sx ls
            body = am.group(3)
            if body.startswith("!"):
                commands.append((body[1:].strip(), i))
            elif (lm := re.match(r"%(\w+)\s*(.*)$", body)) and (line_cmd := _line_magic_command(lm.group(1), lm.group(2))):
                commands.append((line_cmd, i))
            out.append(f"{am.group(1)}{am.group(2)} = None")
            cont = line.rstrip().endswith("\\")
            last_code = out[-1]
            continue
        if cont or m:
            body = line if cont else m.group(2)  # type: ignore[union-attr]
            if not cont and body.startswith("!"):
                commands.append((body[1:].strip(), i))
            elif not cont and (lm := re.match(r"%(\w+)\s*(.*)$", body)) and \
                    (line_cmd := _line_magic_command(lm.group(1), lm.group(2))):
                commands.append((line_cmd, i))
            indent = m.group(1) if (m and not cont) else ""
            code = _line_magic_code(body) if (m and not cont) else None
            cont = line.rstrip().endswith("\\")
            opens_block = last_code.rstrip().endswith(":") or (indent and _indent_of(last_code) >= len(indent))
            if code is not None and not cont:
                out.append(indent + code)
            elif indent and opens_block and last_code:
                out.append(indent + "pass")
            else:
                out.append("")
            if out[-1]:
                last_code = out[-1]
        else:
            out.append(line)
            if line.strip() and not line.lstrip().startswith("#"):
                last_code = line
    return "\n".join(out), commands


def _handler_catches_import_error(handlers: list[ast.ExceptHandler]) -> bool:
    for h in handlers:
        if h.type is None:
            return True
        names = h.type.elts if isinstance(h.type, ast.Tuple) else [h.type]
        for n in names:
            ident = n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else ""
            if ident in IMPORT_ERRORS or ident in ("Exception", "BaseException"):
                return True
    return False


def _handlers_give_up(handlers: list[ast.ExceptHandler]) -> bool:
    """Every handler ends by raising or exiting (``except ImportError: raise SystemExit(...)``):
    the import in the ``try`` is required after all."""
    def gives_up(body: list[ast.stmt]) -> bool:
        last = body[-1] if body else None
        if isinstance(last, ast.Raise):
            return True
        if isinstance(last, ast.Expr) and isinstance(last.value, ast.Call):
            f = last.value.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            return name in ("exit", "quit", "_exit")
        return False
    return bool(handlers) and all(gives_up(h.body) for h in handlers)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _suppresses_import_error(expr: ast.expr) -> bool:
    """``contextlib.suppress(ImportError)`` / ``suppress(ModuleNotFoundError, ...)``."""
    if not isinstance(expr, ast.Call):
        return False
    f = expr.func
    if (f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else "") != "suppress":
        return False
    return any((a.id if isinstance(a, ast.Name) else a.attr if isinstance(a, ast.Attribute) else "")
               in IMPORT_ERRORS | {"Exception", "BaseException"} for a in expr.args)


def _dotted_name(node: ast.AST) -> str:
    """``sys.path`` for the expression ``sys.path``; string constants quoted; '' otherwise."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted_name(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return repr(node.value)
    return ""


def _literal_str(node: ast.AST | None) -> str | None:
    """A string whose whole value is written in the code: a constant, an f-string without
    placeholders, or a ``+`` of such strings. Anything computed at run time gives None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and all(isinstance(v, ast.Constant) for v in node.values):
        return "".join(str(v.value) for v in node.values)  # type: ignore[attr-defined]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _literal_str(node.left), _literal_str(node.right)
        return left + right if left is not None and right is not None else None
    return None


_FILE_DIR_CALLS = {"os.path.dirname", "path.dirname", "dirname"}
_ABS_CALLS = {"os.path.abspath", "os.path.realpath", "path.abspath", "path.realpath", "abspath", "realpath"}


def _path_expr(node: ast.AST, names: Callable[[str], str | None] | None = None) -> str | None:
    """A folder a ``sys.path`` insert names, relative to the inserting file's folder, when it can
    be read without running anything: literals, ``os.path.join(os.path.dirname(__file__), "lib")``,
    ``Path(__file__).parent / "src"``, and a name ``names`` knows the folder of (``BASE_DIR =
    os.path.dirname(os.path.abspath(__file__))``, then ``sys.path.append(os.path.join(BASE_DIR,
    "utils"))``: PointNet's pattern; pointnet-semantic-segmentation, corpus19 dev). None otherwise."""
    lit = _literal_str(node)
    if lit is not None:
        return lit or "."
    if isinstance(node, ast.Name) and node.id == "__file__":
        return "__file__"  # the file itself; its dirname is "."
    if isinstance(node, ast.Name):
        return names(node.id) if names is not None else None
    if isinstance(node, ast.Call):
        fn = _dotted_name(node.func)
        if fn in _ABS_CALLS and len(node.args) == 1:
            return _path_expr(node.args[0], names)
        if fn in _FILE_DIR_CALLS and len(node.args) == 1:
            inner = _path_expr(node.args[0], names)
            return None if inner is None else "." if inner == "__file__" else inner + "/.."
        if fn in ("os.path.join", "path.join", "join", "os.path.normpath", "str") and node.args:
            parts = [_path_expr(a, names) for a in node.args]
            return None if any(p is None for p in parts) else "/".join(parts)  # type: ignore[arg-type]
        if fn in ("Path", "pathlib.Path") and len(node.args) == 1:
            return _path_expr(node.args[0], names)
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("resolve", "absolute") and not node.args:
            return _path_expr(node.func.value, names)
    if isinstance(node, ast.Attribute) and node.attr == "parent":
        inner = _path_expr(node.value, names)
        return None if inner is None else ("." if inner == "__file__" else inner + "/..")
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        left, right = _path_expr(node.left, names), _path_expr(node.right, names)
        return None if left is None or right is None else f"{left}/{right}"
    return None


def _const_str(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):  # f-string: keep the literal prefix (enough for 'zip ...')
        parts = [v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
        return "".join(parts) if parts else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):  # 'zip ' + name
        left = _const_str(node.left)
        return left
    if isinstance(node, ast.Attribute) and node.attr == "executable" and isinstance(node.value, ast.Name) and \
            node.value.id == "sys":  # [sys.executable, "-m", "pip", ...]
        return "python"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "split":
        return _const_str(node.func.value)  # "git clone x".split()
    if isinstance(node, (ast.List, ast.Tuple)) and node.elts:
        first = _const_str(node.elts[0])
        return " ".join([first] + [s for e in node.elts[1:] if (s := _const_str(e))]) if first else None
    return None


def _last_before(entries: Iterable[tuple[int, str]], line: int) -> str | None:
    """The value of the last (line, value) entry at or before ``line`` (entries in line order)."""
    best = None
    for ln, value in entries:
        if ln <= line:
            best = value
    return best


class _Visitor(ast.NodeVisitor):
    def __init__(self, line_offset: int, depth: int) -> None:
        self.offset = line_offset
        self.depth = depth
        self.optional = 0
        self.imports: list[RawImport] = []
        self.commands: list[tuple[str, int]] = []
        self.warnings: list[tuple[int | None, str]] = []
        self.python2: list[tuple[int, str]] = []
        self.markers: list[markers.Marker] = []  # platform/version guards around the current statement
        self.branches: list[str] = []  # run-time conditions of the ``if`` statements around it
        self.syspath: list[tuple[int, str]] = []
        self.main_guard = False
        # name -> [(line, string value)] of simple assignments (cmd = 'zip ...'), in line order
        self.strings: dict[str, list[tuple[int, str]]] = {}
        # name -> [(line, folder relative to the file)] of assignments ``_path_expr`` reads
        # (BASE_DIR = os.path.dirname(os.path.abspath(__file__))), in line order
        self.paths: dict[str, list[tuple[int, str]]] = {}
        self.track_paths = False  # set when the text mentions sys.path or addsitedir

    def marker_text(self) -> str | None:
        joined: markers.Marker | None = None
        for m in self.markers:
            joined = markers.join(joined, m)
        return markers.render(joined) if joined is not None else None

    def branch(self) -> str | None:
        return self.branches[-1] if self.branches else None

    def string_at(self, name: str, line: int) -> str | None:
        """The value a name was last assigned before ``line`` (None if unknown)."""
        return _last_before(self.strings.get(name, ()), line)

    def path_at(self, name: str, line: int) -> str | None:
        """The folder a name was last assigned before ``line``, when ``_path_expr`` reads it."""
        return _last_before(self.paths.get(name, ()), line)

    def note_assign(self, node: ast.Assign) -> None:
        """``name = value``: its string (``cmd = 'zip ...'``) and, in a text with a sys.path
        insert, the folder it names (``BASE_DIR = os.path.dirname(...)``), for later calls."""
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            return
        line = node.lineno + self.offset
        value = _const_str(node.value)
        if value is not None:
            self.strings.setdefault(node.targets[0].id, []).append((line, value))
        if self.track_paths:
            folder = _path_expr(node.value, lambda n: self.path_at(n, line))
            if folder is not None:
                self.paths.setdefault(node.targets[0].id, []).append((line, folder))

    def visit_Assign(self, node: ast.Assign) -> None:
        self.note_assign(node)
        self.generic_visit(node)

    def _line(self, node: ast.AST) -> int:
        return getattr(node, "lineno", 1) + self.offset

    def visit_Try(self, node: ast.Try) -> None:
        catches = _handler_catches_import_error(node.handlers)
        opt = catches and not _handlers_give_up(node.handlers)
        self.optional += opt
        for stmt in node.body:
            self.visit(stmt)
        self.optional -= opt
        self.optional += catches
        for h in node.handlers:
            self.visit(h)
        self.optional -= catches
        for part in (*node.orelse, *node.finalbody):
            self.visit(part)

    visit_TryStar = visit_Try  # type: ignore[assignment]

    def visit_Import(self, node: ast.Import) -> None:
        marker = self.marker_text()
        for alias in node.names:
            self.imports.append(RawImport(alias.name, self._line(node), self.optional > 0, marker=marker,
                                          branch=self.branch()))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        names = tuple(a.name for a in node.names if a.name != "*")
        if node.level:
            self.imports.append(RawImport(node.module or "", self._line(node), self.optional > 0, relative=True,
                                          names=names))
        elif node.module:
            self.imports.append(RawImport(node.module, self._line(node), self.optional > 0, names=names,
                                          marker=self.marker_text(), branch=self.branch()))

    def visit_Call(self, node: ast.Call) -> None:
        self.visit_Call_only(node)
        self.generic_visit(node)

    def visit_Call_only(self, node: ast.Call) -> None:
        fn = node.func
        name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
        if name in ("import_module", "__import__") and node.args:
            mod = _literal_str(node.args[0])
            if mod and re.fullmatch(r"[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*", mod):
                self.imports.append(RawImport(mod, self._line(node), self.optional > 0, dynamic=True,
                                              marker=self.marker_text()))
            elif mod is None:
                self.warnings.append((self._line(node), f"{name}(...) with a name computed at run time: not "
                                      "resolved (add the module to the model's [mapping] or dependencies.extra "
                                      "if it is third-party)"))
        elif name in ("insert", "append", "addsitedir") and node.args and isinstance(fn, ast.Attribute) and \
                _dotted_name(fn.value) in ("sys.path", "site"):
            arg = node.args[-1] if name == "insert" else node.args[0]
            line = self._line(node)
            folder = _path_expr(arg, lambda n: self.path_at(n, line))
            if folder is not None:
                self.syspath.append((line, folder))
        elif name == "run_cell_magic" and len(node.args) >= 3:
            code = _const_str(node.args[2])
            magic, magic_arg = _const_str(node.args[0]) or "", _const_str(node.args[1]) or ""
            if code is not None and self.depth < 3:
                sub = cell_magic_body(magic, magic_arg, code, 1, line_offset=self._line(node) - 1, depth=self.depth) or \
                    parse_code(code, line_offset=self._line(node) - 1, depth=self.depth + 1)
                self.imports.extend(RawImport(i.module, i.line, i.optional or self.optional > 0, i.relative, i.dynamic)
                                    for i in sub.imports)
                self.commands.extend(sub.commands)
                self.warnings.extend(sub.warnings)
                self.python2.extend(sub.python2)
        elif name in ("run_line_magic", "system", "getoutput") and isinstance(fn, ast.Attribute) and \
                isinstance(fn.value, ast.Call) and getattr(fn.value.func, "id", "") == "get_ipython":
            if name in ("system", "getoutput") and node.args and (cmd := _const_str(node.args[0])):
                self.commands.append((cmd, self._line(node)))
            elif name == "run_line_magic" and len(node.args) >= 2:
                magic, line_arg = _const_str(node.args[0]) or "", _const_str(node.args[1]) or ""
                line_cmd = _line_magic_command(magic, line_arg)
                code = _line_magic_code(f"%{magic} {line_arg}")
                if line_cmd:
                    self.commands.append((line_cmd, self._line(node)))
                elif code is not None and self.depth < 3:  # run_line_magic('time', 'import x')
                    sub = parse_code(code, line_offset=self._line(node) - 1, depth=self.depth + 1)
                    self.imports.extend(RawImport(i.module, i.line, i.optional or self.optional > 0, i.relative,
                                                  i.dynamic) for i in sub.imports)
                    self.commands.extend(sub.commands)
        elif name in SHELL_CALLS and node.args:
            arg = node.args[0]
            cmd = self.string_at(arg.id, node.lineno + self.offset) if isinstance(arg, ast.Name) else _const_str(arg)
            owner = fn.value.id if isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name) else ""
            if cmd and owner in ("os", "subprocess", "commands", "sp"):
                self.commands.append((cmd, self._line(node)))
        elif name == "get_ipython" and not node.args:
            self.commands.append(("ipython", self._line(node)))


def _string_lines(text: str) -> frozenset[int]:
    """Lines (1-based) that continue a multi-line string token, found with the tokenizer (which
    also reads most Python 2 code); on a tokenizer error, the lines found so far."""
    inside: set[int] = set()
    if '"""' not in text and "'''" not in text and "\\\n" not in text:
        return frozenset()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
                inside.update(range(tok.start[0] + 1, tok.end[0] + 1))
    except (tokenize.TokenError, SyntaxError, ValueError):
        pass
    return frozenset(inside)


def _fallback(text: str, line_offset: int) -> tuple[list[RawImport], list[tuple[int, str]]]:
    """Line-level import finder for code that does not parse (Python 2, syntax errors); lines
    inside multi-line strings (per the tokenizer) are skipped."""
    imports: list[RawImport] = []
    py2: list[tuple[int, str]] = []
    depth_try = 0
    in_string = _string_lines(text)
    for i, line in enumerate(text.split("\n"), 1 + line_offset):
        if i - line_offset in in_string:  # 'import x' inside a docstring or other multi-line string
            continue
        stripped = line.strip()
        if stripped.startswith("try:"):
            depth_try = len(line) - len(line.lstrip()) + 1
        elif depth_try and stripped and (len(line) - len(line.lstrip()) + 1) <= depth_try and \
                not stripped.startswith(("except", "finally", "else")):
            depth_try = 0
        optional = bool(depth_try) and (len(line) - len(line.lstrip()) + 1) > depth_try
        m = _IMPORT_LINE.match(line)
        if m:
            for part in m.group(1).split(","):
                name = part.strip().split()[0]
                imports.append(RawImport(name, i, optional))
            continue
        m = _FROM_LINE.match(line)
        if m:
            if m.group(1):
                imports.append(RawImport(m.group(2) or "", i, optional, relative=True))
            elif m.group(2):
                imports.append(RawImport(m.group(2), i, optional))
            continue
        if _PY2_PRINT.match(line) and not stripped.startswith("print ="):
            py2.append((i, "print statement"))
        elif _PY2_EXCEPT.match(line):
            py2.append((i, "'except X, e' syntax"))
    return imports, py2


CALL_TRIGGERS = ("import_module", "__import__", "run_cell_magic", "system", "subprocess", "Popen", "popen",
                 "get_ipython", "getoutput", "sys.path", "addsitedir")
_COMPOUND_FIELDS = ("body", "orelse", "finalbody", "handlers")
_TRIGGERS = re.compile("|".join(map(re.escape, CALL_TRIGGERS)))
# a ! or % line (x = !ls too), or an automagic pip/conda line
_ANY_MAGIC = re.compile(r"(?:^|\n)[ \t\f\v]*(?:(?:[A-Za-z_][\w., \t]*=[ \t]*)?[!%]|(?:pip3?|conda|mamba)[ \t]+(?:install|uninstall)\b"
                        r"|\?{1,2}[A-Za-z_]|[A-Za-z_][\w.]*\?{1,2}[ \t]*(?:\n|$))")


def _hot_lines(text: str, start: int) -> frozenset[int]:
    """Line numbers (1-based) that mention one of ``CALL_TRIGGERS``; ``start`` is the first match."""
    hot: set[int] = set()
    line, pos = 1, 0
    for m in _TRIGGERS.finditer(text, start):
        line += text.count("\n", pos, m.start())
        pos = m.start()
        hot.add(line)
    return frozenset(hot)


def _calls_in(v: _Visitor, node: ast.AST) -> None:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            v.visit_Call_only(sub)


def _walk_statements(v: _Visitor, body: list[ast.stmt], hot: frozenset[int] = frozenset()) -> None:
    """Statement-level walk: imports, try/except ImportError, string assignments, and calls.

    Expressions (most of a file's nodes) are only visited in statements whose lines mention one
    of ``CALL_TRIGGERS`` (``hot``), which keeps scanning fast.
    """
    for stmt in body:
        if isinstance(stmt, ast.Import):
            v.visit_Import(stmt)
            continue
        if isinstance(stmt, ast.ImportFrom):
            v.visit_ImportFrom(stmt)
            continue
        if isinstance(stmt, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            handlers = stmt.handlers  # type: ignore[attr-defined]
            catches = _handler_catches_import_error(handlers)
            opt = catches and not _handlers_give_up(handlers)
            v.optional += opt
            _walk_statements(v, stmt.body, hot)  # type: ignore[attr-defined]
            v.optional -= opt
            v.optional += catches  # a fallback import in the handler is an alternative too
            for h in handlers:
                _walk_statements(v, h.body, hot)
            v.optional -= catches
            _walk_statements(v, stmt.orelse, hot)  # type: ignore[attr-defined]
            _walk_statements(v, stmt.finalbody, hot)  # type: ignore[attr-defined]
            continue
        if isinstance(stmt, ast.If) and _is_type_checking(stmt.test):  # never runs: annotations only
            v.optional += 1
            _walk_statements(v, stmt.body, hot)
            v.optional -= 1
            _walk_statements(v, stmt.orelse, hot)
            continue
        if isinstance(stmt, ast.If) and isinstance(stmt.test, ast.Constant):
            # ``if False:`` / ``if 0:`` never runs its body (and ``if True:`` never its else):
            # imports there are noted as optional, never required
            dead, live = (stmt.orelse, stmt.body) if stmt.test.value else (stmt.body, stmt.orelse)
            v.optional += 1
            _walk_statements(v, dead, hot)
            v.optional -= 1
            _walk_statements(v, live, hot)
            continue
        if isinstance(stmt, ast.If) and (guard := markers.marker_of(stmt.test)) is not None:
            _calls_in_header(v, stmt, hot)
            v.markers.append(guard)
            _walk_statements(v, stmt.body, hot)
            v.markers[-1] = markers.negate(guard)
            _walk_statements(v, stmt.orelse, hot)
            v.markers.pop()
            continue
        if isinstance(stmt, ast.If) and _is_main_guard(stmt.test):
            v.main_guard = True
        elif isinstance(stmt, ast.If):  # a run-time condition: its imports are needed only on that branch
            _calls_in_header(v, stmt, hot)
            v.branches.append(_condition_text(stmt.test))
            _walk_statements(v, stmt.body, hot)
            v.branches[-1] = f"not ({v.branches[-1]})"
            _walk_statements(v, stmt.orelse, hot)
            v.branches.pop()
            continue
        if isinstance(stmt, (ast.With, ast.AsyncWith)) and any(_suppresses_import_error(i.context_expr)
                                                              for i in stmt.items):
            v.optional += 1
            _walk_statements(v, stmt.body, hot)
            v.optional -= 1
            continue
        compound = False
        for f in _COMPOUND_FIELDS:
            sub = getattr(stmt, f, None)
            if sub and isinstance(sub, list) and isinstance(sub[0], (ast.stmt, ast.excepthandler)):
                compound = True
                _walk_statements(v, sub, hot)
        if isinstance(stmt, ast.Match):
            compound = True
            for case in stmt.cases:
                _walk_statements(v, case.body, hot)
        if isinstance(stmt, ast.Assign):
            v.note_assign(stmt)
        if hot:
            if compound:  # only the header expressions (test, iter, items, decorators)
                _calls_in_header(v, stmt, hot)
            elif any(ln + v.offset in hot for ln in range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1)):
                _calls_in(v, stmt)


def _calls_in_header(v: _Visitor, stmt: ast.stmt, hot: frozenset[int]) -> None:
    """Calls in a compound statement's header expressions (test, iter, items, decorators)."""
    if not hot:
        return
    end = stmt.body[0].lineno - 1 if getattr(stmt, "body", None) else stmt.lineno  # type: ignore[attr-defined]
    if any(ln + v.offset in hot for ln in range(stmt.lineno, end + 1)):
        for f in ("test", "iter", "items", "subject", "decorator_list", "args", "returns"):
            node = getattr(stmt, f, None)
            if isinstance(node, ast.AST):
                _calls_in(v, node)
            elif isinstance(node, list):
                for n in node:
                    if isinstance(n, ast.AST):
                        _calls_in(v, n)


def _condition_text(test: ast.expr) -> str:
    """An ``if`` test as written, shortened to a line (``args.use_apex``)."""
    try:
        text = ast.unparse(test)
    except Exception:  # pragma: no cover - unparse handles every expression a parse gives
        text = type(test).__name__
    text = " ".join(text.split())
    return text if len(text) <= 80 else text[:77] + "..."


def _is_main_guard(test: ast.expr) -> bool:
    return isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq) and \
        {_dotted_name(test.left), _dotted_name(test.comparators[0])} == {"__name__", "'__main__'"}


SHELL_CELL_MAGICS = {"bash", "sh", "system", "script"}
FOREIGN_CELL_MAGICS = {"html", "javascript", "js", "latex", "markdown", "svg", "perl", "ruby", "writefile", "file",
                       "sql", "R", "julia"}
_CELL_MAGIC = re.compile(r"\A(?:[ \t]*\n)*[ \t]*%%(\w+)([^\n]*)(?:\n|\Z)")


def _shell_lines(body: str, first_line: int) -> list[tuple[str, int]]:
    """Non-empty, non-comment lines of a shell body, with file line numbers."""
    return [(ln.strip(), i) for i, ln in enumerate(body.split("\n"), first_line)
            if ln.strip() and not ln.strip().startswith("#")]


def cell_magic_body(name: str, arg: str, body: str, first_line: int, *, line_offset: int = 0,
                    depth: int = 0) -> Parsed | None:
    """A cell magic's body by kind: shell magics (``%%bash``, ``%%script sh``) give shell
    commands; ``%%writefile x.py`` is Python, ``%%writefile x.sh`` shell, other written files and
    foreign languages (``%%html``, ``%%javascript``) give nothing; None for Python-bodied magics
    (``%%time``, ``%%capture``), which the caller parses as code."""
    argv = arg.split()
    if name in SHELL_CELL_MAGICS and (name != "script" or (argv and argv[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh"))):
        return Parsed((), tuple(_shell_lines(body, first_line + line_offset)), (), ())
    if name in ("writefile", "file"):
        target = next((a for a in argv if not a.startswith("-")), "")
        if target.endswith(".py"):
            return parse_code("\n" * (first_line - 1) + body, line_offset=line_offset, depth=depth + 1)
        if target.endswith((".sh", ".bash")):
            return Parsed((), tuple(_shell_lines(body, first_line + line_offset)), (), ())
        return Parsed((), (), (), ())
    if name in FOREIGN_CELL_MAGICS or name == "script":
        return Parsed((), (), (), ())
    return None


def parse_code(text: str, *, line_offset: int = 0, depth: int = 0) -> Parsed:
    """Imports, shell commands and warnings of one code text (see the module docstring)."""
    if depth < 3 and "%%" in text and (cm := _CELL_MAGIC.match(text)):
        first = text.count("\n", 0, cm.end()) + 1 if cm.group(0).endswith("\n") else text.count("\n") + 2
        done = cell_magic_body(cm.group(1), cm.group(2), text[cm.end():], first, line_offset=line_offset, depth=depth)
        if done is not None:
            return done
    has_magic = text.lstrip(" \t\f\v").startswith(("!", "%")) or _ANY_MAGIC.search(text)
    clean, magic_cmds = blank_magics(text) if has_magic else (text, [])
    commands = [(c, ln + line_offset) for c, ln in magic_cmds]
    hot_re = _TRIGGERS.search(clean) if any(t in clean for t in CALL_TRIGGERS) else None
    try:
        tree = ast.parse(clean)
    except (SyntaxError, ValueError) as exc:  # ValueError: NUL bytes
        line = getattr(exc, "lineno", None)
        imports, py2 = _fallback(clean, line_offset)
        msg = getattr(exc, "msg", str(exc))
        kind = "Python 2 code" if py2 else "code that does not parse"
        warn = (line + line_offset if line else None,
                f"{kind} ({msg}); imports were read with the line-level fallback")
        return Parsed(tuple(imports), tuple(commands), (warn,), tuple(py2), fallback=True)
    except (RecursionError, MemoryError):  # the parser gave up: the line-level reader still finds imports
        imports, py2 = _fallback(clean, line_offset)
        warn = (None, "code nests too deeply to parse; imports were read with the line-level fallback")
        return Parsed(tuple(imports), tuple(commands), (warn,), tuple(py2), fallback=True)
    v = _Visitor(line_offset, depth)
    v.track_paths = "sys.path" in clean or "addsitedir" in clean
    hot = _hot_lines(clean, hot_re.start()) if hot_re else frozenset()
    try:
        _walk_statements(v, tree.body, hot)
    except RecursionError:
        v.warnings.append((None, "code nests too deeply to walk completely; some imports may be missing"))
    return Parsed(tuple(v.imports), tuple(commands + v.commands), tuple(v.warnings), tuple(v.python2),
                  syspath=tuple(v.syspath), main_guard=v.main_guard or bool(_MAIN_GUARD.search(clean)))


_MAIN_GUARD = re.compile(r"""^[ \t]*if\s+(?:__name__\s*==\s*['"]__main__['"]|['"]__main__['"]\s*==\s*__name__)\s*:""",
                         re.M)


def decode_source(data: bytes) -> tuple[str, str | None]:
    """Source bytes -> text, honouring PEP 263 cookies; (text, warning or None)."""
    note = None
    try:
        enc, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:  # unknown encoding cookie, or a cookie that contradicts a BOM
        enc, note = "utf-8", f"{getattr(exc, 'msg', exc)}; read as utf-8"
    try:
        return data.decode(enc), note
    except (UnicodeDecodeError, LookupError):
        return data.decode("latin-1"), f"not valid {enc}; read as latin-1"

