"""External tools some tests drive (Chromium, promtool, prometheus, kustomize, hadolint...).

A test that needs one is skipped when it is missing on a developer's machine, but not
under CI: ``.ci/run`` installs them and sets ``SHADOWDIFF_REQUIRE_TOOLS=1``, which
turns a missing tool into a failure instead of a silent skip.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest


def required() -> bool:
    return os.environ.get("SHADOWDIFF_REQUIRE_TOOLS") == "1"


def tool(name: str, hint: str) -> str:
    """The path of ``name`` (a command or a path); skips, or fails under CI, without it."""
    # (tools installed from PyPI live beside this interpreter, which need not be on PATH)
    found = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    if found is None:
        if required():
            pytest.fail(f"{name} is required here (SHADOWDIFF_REQUIRE_TOOLS=1): {hint}")
        pytest.skip(f"{name} is not installed ({hint})")
    return found
