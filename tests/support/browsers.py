"""Headless Chromium for the browser tests: the ``browser`` fixture, signing in, where screenshots go.

``browser`` is a fixture of a plugin listed in tests/conftest.py."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.support.tools import required, tool

TOKEN = "browser-review-token"
CHROMIUM = os.environ.get("SHADOWDIFF_CHROMIUM", "/usr/bin/chromium")


def _playwright() -> Any:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if required():
            raise
        pytest.skip("playwright is not installed")
    tool(CHROMIUM, "apt-get install chromium")
    return sync_playwright


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_playwright = _playwright()
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"])
        yield launched
        launched.close()


def sign_in(page: Any, base: str, name: str = "ana") -> None:
    page.goto(base + "/")
    assert urlsplit(page.url).path == "/review/login"          # no token: the login form, no data
    page.fill("input[name=token]", TOKEN)
    page.fill("input[name=reviewer]", name)
    page.click("button[type=submit]")
    page.wait_for_url(base + "/")


def output_dir() -> Path:
    out = Path(os.environ.get("SHADOWDIFF_TEST_OUTPUT", "test-output"))
    out.mkdir(parents=True, exist_ok=True)
    return out
