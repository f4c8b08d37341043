"""Platform and version guards around imports, as PEP 508 markers.

``if sys.platform == "win32": import win32api`` needs ``pywin32`` only where
``sys_platform == "win32"``; ``if sys.version_info < (3, 8): import importlib_metadata`` only
where ``python_version < "3.8"``. ``marker_of(test)`` turns such a test into a marker tree, or
None when the test is not a guard it understands (the import then stays required). The trees
are plain tuples so they can be negated (``else:`` branches; PEP 508 has no ``not``) and joined.
"""

from __future__ import annotations

import ast
from typing import Any

# ("cmp", variable, operator, value) or ("and" | "or", Marker, Marker)
Marker = tuple[Any, ...]

_NEGATE = {"==": "!=", "!=": "==", "<": ">=", ">=": "<", ">": "<=", "<=": ">"}
_OPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
_SWAP = {"==": "==", "!=": "!=", "<": ">", ">": "<", "<=": ">=", ">=": "<="}
# sys.platform.startswith(prefix) -> the sys_platform value it means
_PLATFORM_PREFIX = {"win": "win32", "win32": "win32", "linux": "linux", "darwin": "darwin", "cygwin": "cygwin",
                    "freebsd": "freebsd", "aix": "aix"}


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    if isinstance(node, ast.Call) and not node.args and not node.keywords:
        inner = _dotted(node.func)
        return f"{inner}()" if inner else ""
    return ""


def _str(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _version(node: ast.AST) -> str | None:
    """``(3, 8)`` -> "3.8", ``3`` -> "3" (a major version compares as a version too)."""
    if isinstance(node, ast.Tuple) and node.elts and all(
            isinstance(e, ast.Constant) and isinstance(e.value, int) and not isinstance(e.value, bool)
            for e in node.elts):
        return ".".join(str(e.value) for e in node.elts[:2] if isinstance(e, ast.Constant))
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return str(node.value)
    return None


def _variable(node: ast.AST) -> str | None:
    """The PEP 508 variable a guard's left side means."""
    name = _dotted(node)
    if name in ("sys.platform", "platform"):
        return "sys_platform" if name == "sys.platform" else None
    if name in ("os.name",):
        return "os_name"
    if name in ("platform.system()",):
        return "platform_system"
    if name in ("platform.machine()",):
        return "platform_machine"
    if name in ("sys.version_info", "sys.version_info.major") or (
            isinstance(node, ast.Subscript) and _dotted(node.value) == "sys.version_info"):
        return "python_version"
    return None


def _major_only(node: ast.AST) -> bool:
    """``sys.version_info[0]`` / ``sys.version_info.major``: compares the major version only."""
    if _dotted(node) == "sys.version_info.major":
        return True
    return isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and node.slice.value == 0


def _compare(node: ast.Compare) -> Marker | None:
    if len(node.ops) != 1 or type(node.ops[0]) not in _OPS:
        return None
    op = _OPS[type(node.ops[0])]
    left, right = node.left, node.comparators[0]
    var = _variable(left)
    if var is None and _variable(right) is not None:  # "win32" == sys.platform
        left, right, op = right, left, _SWAP[op]
        var = _variable(left)
    if var is None:
        return None
    if var == "python_version":
        value = _version(right)
        if value is None:
            return None
        if _major_only(left):  # sys.version_info[0] == 2  ->  python_version >= "2" and < "3"
            major = int(value.split(".")[0])
            lower, upper = ("cmp", var, ">=", f"{major}"), ("cmp", var, "<", f"{major + 1}")
            return {"==": ("and", lower, upper), "!=": ("or", negate(lower), negate(upper)),
                    "<": ("cmp", var, "<", f"{major}"), ">=": ("cmp", var, ">=", f"{major}"),
                    "<=": ("cmp", var, "<", f"{major + 1}"), ">": ("cmp", var, ">=", f"{major + 1}")}[op]
        return ("cmp", var, op, value)
    value_s = _str(right)
    if value_s is None or op not in ("==", "!="):
        return None
    return ("cmp", var, op, value_s)


def marker_of(test: ast.expr) -> Marker | None:
    """The marker a guard means, or None when it is not (only) a platform/version guard."""
    if isinstance(test, ast.Compare):
        return _compare(test)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = marker_of(test.operand)
        return negate(inner) if inner is not None else None
    if isinstance(test, ast.BoolOp) and len(test.values) >= 2:
        parts = [marker_of(v) for v in test.values]
        if any(p is None for p in parts):
            return None
        kind = "and" if isinstance(test.op, ast.And) else "or"
        out = parts[0]
        for p in parts[1:]:
            out = (kind, out, p)
        return out
    if isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute) and test.func.attr == "startswith" \
            and _dotted(test.func.value) == "sys.platform" and len(test.args) == 1:
        prefix = _str(test.args[0])
        if prefix in _PLATFORM_PREFIX:
            return ("cmp", "sys_platform", "==", _PLATFORM_PREFIX[prefix])
    return None


def negate(m: Marker) -> Marker:
    if m[0] == "cmp":
        return ("cmp", m[1], _NEGATE[m[2]], m[3])
    a, b = m[1], m[2]
    return ("or" if m[0] == "and" else "and", negate(a), negate(b))


def join(a: Marker | None, b: Marker | None, kind: str = "and") -> Marker | None:
    if a is None:
        return b
    if b is None:
        return a
    return (kind, a, b)


def render(m: Marker, parent: str = "") -> str:
    if m[0] == "cmp":
        return f'{m[1]} {m[2]} "{m[3]}"'
    kind = m[0]
    text = f" {kind} ".join((render(m[1], kind), render(m[2], kind)))
    return f"({text})" if parent and parent != kind else text
