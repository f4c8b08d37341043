"""The fast reader of ``.py`` files: ``parse_code``'s answer, parsing only what can hold imports.

Most of a file is code that cannot hold an import. ``parse_fast(text)`` finds, with plain string
searches (never a regular expression over the whole text where a literal search does), the
lines that can: ``import``/``from`` statements, dynamic imports (``import_module``,
``__import__``), IPython calls, shell-command calls and ``sys.path`` inserts. Then it parses:

* an import whose enclosing blocks are all ``def``/``class``/plain ``for``/``while``/the main
  guard: only its own statement (nothing around it changes its kind or makes it branch-only);
* any other import or dynamic import: the outermost ``def`` around it when only ``def``/``class``
  enclose that, else its whole top-level statement, so ``try/except ImportError``,
  ``TYPE_CHECKING`` and platform/version guards are seen exactly as a full parse sees them;
* a shell-command call: its own statement, and the assignments of a name it passes
  (``cmd = "zip ..."; os.system(cmd)``). A text with a ``sys.path`` insert goes to the thorough
  reader whole: the folder it names may come through assignments anywhere above it.

Whatever it cannot place with certainty (IPython magics, Python 2 hints, backslash
continuations, a triple quote it cannot classify, a piece that does not parse on its own) sends
the whole text to ``python.parse_code``, the thorough reader. One difference is by design: a
syntax error in statements the fast path never parses is not reported (the imports found are
the same); ``pyrepro scan --thorough`` parses every file in full.
"""

from __future__ import annotations

import ast
import bisect
import re

from pyrepro.scan import markers
from pyrepro.scan.python import (
    _MAIN_GUARD,
    CALL_TRIGGERS,
    Parsed,
    _const_str,
    _is_main_guard,
    _suppresses_import_error,
    _Visitor,
    _walk_statements,
    parse_code,
)

# A line that needs the thorough reader: IPython magics and Python 2 statements.
_THOROUGH = r"[ \t\f\v]*(?:[!%]|(?:pip3?|conda|mamba)[ \t]+(?:install|uninstall)\b|print[ \t]+[^\s(=]|print[ \t]*$|exec[ \t]+[\"'\w]|except[ \t]+[\w.]+[ \t]*,|raise[ \t]+[\w.]+[ \t]*,)"
_THOROUGH_FIRST = re.compile(_THOROUGH, re.M)  # the first line
_THOROUGH_LINE = re.compile(r"\n" + _THOROUGH, re.M)  # any other line: a literal first character searches fast
_ASSIGN_MAGIC_HINT = re.compile(r"=[ \t]*[!%]")  # files = !ls
_CHUNK_TRIGGERS = ("import_module", "__import__", "get_ipython", "run_cell_magic", "run_line_magic")
_STMT_TRIGGERS = ("system", "subprocess", "Popen", "popen", "getoutput", "sys.path", "addsitedir")
_WORDS = tuple(dict.fromkeys((*_CHUNK_TRIGGERS, *_STMT_TRIGGERS, *CALL_TRIGGERS)))
_IMPORT_PREFIX = re.compile(r"(?:^|[:;])[ \t\f]*(?:from[ \t]+[\w.]+[ \t]+)?$", re.M)
_FROM_ONLY = re.compile(r"from[ \t]+[\w.]+")
_HEADER = re.compile(r"(?:async[ \t]+)?(def|class|if|elif|else|try|except|finally|with|for|while|match|case)\b")
_NEUTRAL = {"def", "class", "for", "while", "match", "case"}  # blocks that never change an import's kind
_TOP_CONTINUES = ("except", "else", "elif", "finally")
_CLAUSE = re.compile(r"(?:except|else|finally|case)\b")
_STMT_LINES = 25  # lines a call's statement may span before the enclosing piece is parsed instead


class NotFast(Exception):
    """The fast path cannot place something with certainty: read the whole text."""


def _find_all(text: str, word: str) -> list[int]:
    out = []
    i = text.find(word)
    while i >= 0:
        out.append(i)
        i = text.find(word, i + 1)
    return out


def _string_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each triple-quoted string. An opening triple quote must be read with
    certainty: a ``#`` or an unbalanced quote before it on its line raises ``NotFast``."""
    if '"""' not in text and "'''" not in text:
        return []
    spans: list[tuple[int, int]] = []
    pos = 0
    while True:
        a, b = text.find('"""', pos), text.find("'''", pos)
        if a < 0 and b < 0:
            return spans
        start = a if b < 0 or (0 <= a < b) else b
        quote = text[start:start + 3]
        prefix = text[max(text.rfind("\n", 0, start) + 1, pos):start]
        if "#" in prefix or prefix.count('"') % 2 or prefix.count("'") % 2:
            raise NotFast
        end = start + 3
        while True:
            end = text.find(quote, end)
            if end < 0:
                raise NotFast  # unterminated: the thorough reader reports it
            k = end
            while k > 0 and text[k - 1] == "\\":
                k -= 1
            if (end - k) % 2 == 0:
                break
            end += 1
        spans.append((start, end + 3))
        pos = end + 3


class _Text:
    """Line-level view of a text: indents, which lines are code, block and statement bounds.
    Everything is computed on demand around the lines asked about."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.split("\n")
        self.spans = _string_spans(text)
        self.span_starts = [s for s, _ in self.spans]
        self._last = (0, 1)  # (offset, line) of the last line_of answer
        # lines whose start lies inside a triple-quoted string: (first, last) intervals
        self.string_lines = [(self.line_of(s) + 1, self.line_of(e - 1)) for s, e in self.spans]
        self.string_firsts = [f for f, _ in self.string_lines]
        self._up: dict[tuple[int, int], int | None] = {}

    def in_string(self, pos: int) -> bool:
        if not self.spans:
            return False
        k = bisect.bisect_right(self.span_starts, pos) - 1
        return k >= 0 and self.spans[k][0] < pos < self.spans[k][1]

    def line_in_string(self, line: int) -> bool:
        if not self.spans:
            return False
        k = bisect.bisect_right(self.string_firsts, line) - 1
        return k >= 0 and line <= self.string_lines[k][1]

    def line_of(self, pos: int) -> int:
        off, line = self._last
        if pos >= off:
            line += self.text.count("\n", off, pos)
        else:
            line = self.text.count("\n", 0, pos) + 1
        self._last = (pos, line)
        return line

    def indent(self, line: int) -> int | None:
        """Indent of a code line; None for blank, comment and string lines."""
        raw = self.lines[line - 1]
        stripped = raw.lstrip(" \t")
        if not stripped or stripped[0] in "#\r\f" or self.line_in_string(line):
            return None
        return len(raw) - len(stripped)

    def header_above(self, line: int, threshold: int) -> int | None:
        """The nearest line above ``line`` that starts a block and is indented less than
        ``threshold`` (continuation lines such as ``):`` are passed over)."""
        i = line - 1
        seen = []
        found = None
        lines = self.lines
        while i >= 1:
            key = (i, threshold)
            if key in self._up:
                found = self._up[key]
                break
            seen.append(key)
            raw = lines[i - 1]
            stripped = raw.lstrip(" \t")
            if stripped and len(raw) - len(stripped) < threshold and _HEADER.match(stripped) and \
                    not self.line_in_string(i):
                found = i
                break
            i -= 1
        for key in seen:
            self._up[key] = found
        return found

    def chain(self, line: int) -> list[int] | None:
        """Header lines of the blocks around ``line``, innermost first; None when unsure."""
        ind = self.indent(line)
        if ind is None:
            return None
        out: list[int] = []
        while ind > 0:
            h = self.header_above(line, ind)
            if h is None:
                return None
            out.append(h)
            line, ind = h, len(self.lines[h - 1]) - len(self.lines[h - 1].lstrip(" \t"))
        return out

    def _column0(self, line: int) -> bool:
        """A code line at column 0 that starts a statement of its own."""
        raw = self.lines[line - 1]
        return bool(raw) and raw[0] not in " \t#)]}\r\f" and not self.line_in_string(line)

    def top_piece(self, line: int) -> tuple[int, int, int]:
        """(first line, end line, 0) of the top-level statement holding ``line``."""
        start = line
        while start > 1 and not (self._column0(start) and not self.lines[start - 1].startswith(_TOP_CONTINUES)):
            start -= 1
        while start > 1 and self.lines[start - 2].startswith("@") and self._column0(start - 1):
            start -= 1  # decorators belong to their def/class
        end = start + 1
        in_decorators = self.lines[start - 1].startswith("@")
        while end <= len(self.lines):
            if self._column0(end):
                raw = self.lines[end - 1]
                if in_decorators and (raw.startswith(("@", "def", "class", "async"))):
                    in_decorators = raw.startswith("@")
                elif not raw.startswith(_TOP_CONTINUES):
                    break
            end += 1
        return start, end, 0

    def block_end(self, header: int) -> int:
        """The first line after the block that starts at ``header`` (len+1 at the end)."""
        indent = len(self.lines[header - 1]) - len(self.lines[header - 1].lstrip(" \t"))
        for i in range(header + 1, len(self.lines) + 1):
            raw = self.lines[i - 1]
            stripped = raw.lstrip(" \t")
            if stripped and len(raw) - len(stripped) <= indent and stripped[0] not in "#)]}\r\f" and \
                    not self.line_in_string(i):
                return i
        return len(self.lines) + 1

    def statement(self, line: int) -> ast.Module | None:
        """The statement that starts on ``line``, dedented and parsed with true line numbers;
        None when no run of up to ``_STMT_LINES`` lines from there parses."""
        first = self.lines[line - 1]
        indent = first[:len(first) - len(first.lstrip(" \t"))]
        body = [first[len(indent):]]
        if body[0].startswith("elif") and not body[0][4:5].isidentifier():  # `elif x:` is read as `if x:`
            body[0] = body[0][2:]
        for k in range(_STMT_LINES):
            try:
                return _parse_at("\n".join(body), line)
            except (SyntaxError, ValueError):
                nxt = line + k
                if nxt >= len(self.lines):
                    return None
                extra = self.lines[nxt]
                body.append(extra[len(indent):] if extra.startswith(indent) else extra)
        return None


def _parse_at(source: str, first: int) -> ast.Module:
    """Parse a piece of a file whose first line is line ``first`` of the file; the tree keeps
    the piece's own line numbers and carries the offset as ``_pyrepro_offset``."""
    tree = ast.parse(source)
    tree._pyrepro_offset = first - 1  # type: ignore[attr-defined]
    return tree


def _walk(v: _Visitor, tree: ast.Module, hot: frozenset[int]) -> None:
    v.offset = getattr(tree, "_pyrepro_offset", 0)
    _walk_statements(v, tree.body, hot)


def _neutral(view: _Text, header: int) -> bool:
    """A block that never changes the kind of an import inside it."""
    stripped = view.lines[header - 1].strip()
    m = _HEADER.match(stripped)
    if m is None:
        return False
    kw = m.group(1)
    if kw in _NEUTRAL:
        return True
    if kw not in ("if", "with") or not stripped.endswith(":"):
        return False
    try:  # a one-line header: is it a guard, TYPE_CHECKING or suppress(ImportError)?
        node = ast.parse(stripped + "\n    pass").body[0]
    except (SyntaxError, ValueError):
        return False
    if isinstance(node, ast.If):
        # only the main guard: a run-time condition makes its imports branch-only
        # (``RawImport.branch``), platform guards and TYPE_CHECKING change their kind, and an `else`
        # below needs the whole statement
        return _is_main_guard(node.test) and not _has_else(view, header)
    if isinstance(node, ast.With):
        return not any(_suppresses_import_error(i.context_expr) for i in node.items)
    return False


def _has_else(view: _Text, header: int) -> bool:
    end = view.block_end(header)
    if end > len(view.lines):
        return False
    return view.lines[end - 1].lstrip(" \t").startswith(("else", "elif"))


def parse_fast(text: str) -> Parsed:
    """``parse_code``'s answer for one ``.py`` text (see the module docstring)."""
    if "\0" in text or "\\\n" in text or "\f" in text or "<>" in text or 'ur"' in text or "ur'" in text or \
            _THOROUGH_FIRST.match(text) or _THOROUGH_LINE.search(text) or _ASSIGN_MAGIC_HINT.search(text):
        return parse_code(text)
    try:
        return _parse_fast(text)
    except (NotFast, RecursionError, MemoryError):
        return parse_code(text)


def _parse_fast(text: str) -> Parsed:
    if "sys.path" in text or "addsitedir" in text:
        # an insert may name a folder through assignments anywhere above it (BASE_DIR = ...;
        # sys.path.append(os.path.join(BASE_DIR, "utils"))): the thorough reader follows them
        raise NotFast
    view = _Text(text)
    whole: set[tuple[int, int, int]] = set()  # (first line, end line, indent) of pieces to parse whole
    single: set[int] = set()  # lines whose own statement is enough

    def place(pos: int, *, context_free_ok: bool) -> None:
        line = view.line_of(pos)
        chain = view.chain(line)
        if chain is None:
            whole.add(view.top_piece(line))
            return
        if context_free_ok and all(_neutral(view, h) for h in chain):
            single.add(line)
            return
        # the outermost def whose enclosing blocks are all def/class, else the top-level statement
        for h in reversed(chain):
            kw = _HEADER.match(view.lines[h - 1].lstrip(" \t"))
            name = kw.group(1) if kw else ""
            if name == "def":
                ind = len(view.lines[h - 1]) - len(view.lines[h - 1].lstrip(" \t"))
                whole.add((h, view.block_end(h), ind))
                return
            if name != "class":
                break
        whole.add(view.top_piece(line))

    for pos in _find_all(text, "import"):
        before = text[pos - 1:pos] if pos else ""
        after = text[pos + 6:pos + 7]
        if (before and (before.isalnum() or before in "_.")) or (after and (after.isalnum() or after == "_")):
            continue
        line_start = text.rfind("\n", 0, pos) + 1
        prefix = text[line_start:pos].strip(" \t\f")
        plain = not prefix or (prefix.startswith("from") and _FROM_ONLY.fullmatch(prefix) is not None)
        if not plain and not _IMPORT_PREFIX.search(text, line_start, pos):
            continue  # `import` in the middle of other code: not a statement
        if view.in_string(pos):
            continue
        place(pos, context_free_ok=plain)
    hits = {word: _find_all(text, word) for word in _WORDS}
    for word in _CHUNK_TRIGGERS:
        for pos in hits[word]:
            if not view.in_string(pos):
                place(pos, context_free_ok=False)
    hot = frozenset(view.line_of(pos) for word in CALL_TRIGGERS for pos in hits[word])

    # a piece inside another is read with it; overlapping pieces mean unsure
    parse: list[tuple[int, int, int]] = []
    for piece in sorted(whole, key=lambda p: (p[0], -p[1])):
        if parse and piece[1] <= parse[-1][1]:
            continue
        if parse and piece[0] < parse[-1][1]:
            raise NotFast
        parse.append(piece)
    firsts = [p[0] for p in parse]

    def covered(line: int) -> bool:
        k = bisect.bisect_right(firsts, line) - 1
        return k >= 0 and line < parse[k][1]

    v = _Visitor(0, 0)
    for first, end, indent in parse:
        body = view.lines[first - 1:end - 1]
        if indent:
            body = [ln[indent:] if not ln[:indent].strip(" \t") else ln for ln in body]
        try:
            tree = _parse_at("\n".join(body), first)
        except (SyntaxError, ValueError) as exc:
            raise NotFast from exc
        _walk(v, tree, hot)

    # single statements: context-free imports, shell-command calls and sys.path inserts
    calls: set[int] = set()
    for word in _STMT_TRIGGERS:
        for pos in hits[word]:
            line = view.line_of(pos)
            if view.in_string(pos) or view.indent(line) is None:
                continue
            head = view.lines[line - 1].lstrip(" \t")
            # a full parse never reads calls in these clause headers (handler types, patterns)
            if not _CLAUSE.match(head):
                single.add(line)
                calls.add(line)
    statements: list[ast.Module] = []
    lines_in_order = sorted(single)
    done_until = 0  # the last line a parsed statement covers
    k = 0
    while k < len(lines_in_order):
        line = lines_in_order[k]
        k += 1
        if line <= done_until or covered(line):
            continue
        run = [line]  # consecutive one-line imports at one indent (a block of imports) parse together
        while line not in calls and k < len(lines_in_order) and lines_in_order[k] == run[-1] + 1 and \
                lines_in_order[k] not in calls and not covered(lines_in_order[k]) and \
                view.indent(lines_in_order[k]) == view.indent(line):
            run.append(lines_in_order[k])
            k += 1
        chunk: ast.Module | None = None
        if len(run) > 1:
            ind = view.indent(line) or 0
            try:
                chunk = _parse_at("\n".join(view.lines[ln - 1][ind:] for ln in run), run[0])
            except (SyntaxError, ValueError):
                k -= len(run) - 1  # read them one by one
                run = [line]
        if chunk is None:
            chunk = view.statement(line)
            if chunk is None:
                raise NotFast
        statements.append(chunk)
        off = getattr(chunk, "_pyrepro_offset", 0)
        done_until = max(done_until, off + max((getattr(n, "end_lineno", 0) or 0) for n in chunk.body) if chunk.body else 0)
    names = {a.id for t in statements
             if t.body and any(ln + t._pyrepro_offset in calls  # type: ignore[attr-defined]
                    for ln in range(t.body[0].lineno, (t.body[-1].end_lineno or 0) + 1))
             for n in ast.walk(t) if isinstance(n, ast.Call) and n.args
             for a in n.args[:1] if isinstance(a, ast.Name)} if calls else set()
    for name in sorted(names):  # `cmd = "zip ..."` then `os.system(cmd)`: the assignments of that name
        for m in re.finditer(rf"^[ \t]*{re.escape(name)}[ \t]*=(?!=)", text, re.M):
            if view.in_string(m.start()):
                continue
            assign = view.statement(view.line_of(m.start()))
            if assign is None:
                raise NotFast
            for stmt in assign.body:
                if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
                        isinstance(stmt.targets[0], ast.Name) and (value := _const_str(stmt.value)) is not None:
                    v.strings.setdefault(stmt.targets[0].id, []).append(
                        (stmt.lineno + assign._pyrepro_offset, value))  # type: ignore[attr-defined]
    for entries in v.strings.values():
        entries.sort()
    for tree in statements:
        _walk(v, tree, hot)
    main_guard = v.main_guard or ("__main__" in text and bool(_MAIN_GUARD.search(text)))
    return Parsed(tuple(sorted(v.imports, key=lambda i: i.line)), tuple(sorted(v.commands, key=lambda c: c[1])),
                  tuple(v.warnings), tuple(v.python2), syspath=tuple(sorted(v.syspath)), main_guard=main_guard)

