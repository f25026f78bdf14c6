"""The suite keeps its bytecode, even where ``PYTHONDONTWRITEBYTECODE`` says not to.

The suite starts about 150 Python processes (``shadowdiff serve``, ``replay``, ``simulate``,
its workers, pytest's own workers). Without cached bytecode each one compiles every module it
imports from source: ``import shadowdiff.proxy.app`` took 2.3 s of CPU that way against 0.8 s from
``.pyc`` files, and a pytest worker's collection 9.5 s against 3.8 s (its test modules'
rewritten assertions are cached the same way). Container images often set the variable, so
the run unsets it for itself and everything it starts: files go to ``__pycache__`` folders,
which git ignores. The README's test command installs the environment with
``--compile-bytecode``, so the installed packages are compiled once, before any test.
"""

from __future__ import annotations

import os
import sys

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    # before pytest-xdist starts its workers (at session start), which inherit the environment
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False
