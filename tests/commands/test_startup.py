"""What the command line loads before it does anything: a command imports what it runs when
it runs, so ``--help`` (and a typo) costs an interpreter, click and the command's options,
not the store, SQLAlchemy, Alembic, aiohttp or the report writer (bench/startup_cost.py
measures the CPU)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# What no --help needs: the store and its database layer, the HTTP clients, the servers, the reports.
HEAVY = frozenset({"sqlalchemy", "alembic", "aiohttp", "httpx", "uvicorn", "starlette", "jinja2", "tqdm",
                   "shadowdiff.store", "shadowdiff.report.write"})

# ``python -m shadowdiff ARGS`` in a fresh interpreter, then what it had loaded (stdout: the
# command's own output, then one line of JSON).
_RUN = """
import json, runpy, sys
sys.argv = ["shadowdiff", *sys.argv[1:]]
try:
    runpy.run_module("shadowdiff", run_name="__main__", alter_sys=True)
except SystemExit as exc:
    code = exc.code
print()
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def loaded(*args: str) -> tuple[int, str, set[str]]:
    """(exit code, output, the HEAVY modules loaded) of ``shadowdiff ARGS`` in a fresh interpreter."""
    ran = subprocess.run([sys.executable, "-c", _RUN, *args], capture_output=True, text=True, cwd=ROOT,
                         timeout=120, check=True)
    output, _, last = ran.stdout.rstrip("\n").rpartition("\n")
    result = json.loads(last)
    heavy = {m for m in result["modules"] if m in HEAVY or m.split(".")[0] in HEAVY}
    return result["code"], output + ran.stderr, heavy


@pytest.mark.parametrize("args", [("serve", "--help"), ("replay", "--help"), ("report", "--help"),
                                  ("compare", "--help"), ("bench", "--help"), ("prune", "--help"), ("--help",)])
def test_help_loads_no_store_http_client_or_report_writer(args: tuple[str, ...]) -> None:
    code, output, heavy = loaded(*args)
    assert code == 0 and "Usage:" in output, output
    assert heavy == set()


def test_the_help_still_shows_the_defaults_kept_elsewhere() -> None:
    # --side-by-side's default lives in shadowdiff.report, not in the writer it no longer loads
    from shadowdiff.report import SIDE_BY_SIDE

    _, output, _ = loaded("replay", "--help")
    assert "--side-by-side" in output and f"default: {SIDE_BY_SIDE}" in " ".join(output.split())


def test_a_command_that_runs_loads_what_it_runs(tmp_path: Path) -> None:
    """The check above can fail: the same command line, run for real, loads the store."""
    code, output, heavy = loaded("prune", str(tmp_path / "no-store.sqlite"), "--older-than", "1d")
    assert code == 3, output     # no such store: a configuration error, after opening it was tried
    assert {"sqlalchemy", "shadowdiff.store"} <= heavy


def test_a_misspelt_option_loads_nothing_heavy_either() -> None:
    code, output, heavy = loaded("replay", "--no-such-option")
    assert code == 2 and "No such option" in output
    assert heavy == set()
