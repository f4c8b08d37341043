"""PEP 508 marker environments of a target interpreter and platform.

A neutral module (standard library and ``packaging`` only) shared by the dependency graph
(``pyrepro.graph``) and the local backend (``pyrepro.backends.local``), so neither imports the
other for it.
"""

from __future__ import annotations

from collections.abc import Iterable

from packaging.markers import InvalidMarker, Marker


def target_environment(python: str, platform: str = "linux-x86_64", full_version: str | None = None) -> dict[str, str]:
    """PEP 508 marker environment for CPython ``python`` (``"3.11"``) on ``platform``;
    ``full_version``: the lowest patch release the lock is for (``interpreters.first_patch``;
    default ``python.0``)."""
    machine = platform.split("-", 1)[1] if "-" in platform else "x86_64"
    system = platform.split("-", 1)[0]
    sys_platform = {"linux": "linux", "darwin": "darwin", "windows": "win32"}.get(system, system)
    platform_system = {"linux": "Linux", "darwin": "Darwin", "windows": "Windows"}.get(system, system)
    return {
        "implementation_name": "cpython",
        "implementation_version": f"{python}.0",
        "os_name": "nt" if system == "windows" else "posix",
        "platform_machine": machine,
        "platform_release": "",
        "platform_system": platform_system,
        "platform_version": "",
        "python_full_version": full_version or f"{python}.0",
        "platform_python_implementation": "CPython",
        "python_version": python,
        "sys_platform": sys_platform,
    }


def marker_holds(marker: str | None, env: dict[str, str], extras: Iterable[str] = ()) -> bool:
    """Whether ``marker`` holds in ``env`` for any of ``extras`` (none: the empty extra). An
    unparsable marker holds (the edge is kept; the caller reports the problem)."""
    if not marker:
        return True
    try:
        m = Marker(marker)
    except InvalidMarker:
        return True
    extras = list(extras) or [""]
    return any(m.evaluate({**env, "extra": e}) for e in extras)
