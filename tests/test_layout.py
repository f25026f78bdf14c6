"""The import direction the layout promises (README, "Layout"), read from the code.

Modes (``proxy``, ``replay``) use the core (``shadowdiff``), never each other; the core
uses no mode; no production path imports the simulator. Two checks:

* the source: every import statement, wherever it sits (module level, inside a
  function, under ``TYPE_CHECKING``), every string that is a module path
  (``"replay.logs"``, ``"proxy.app:build_app"``), and every package named to
  ``importlib.import_module``, ``__import__``, ``importlib.resources.files``,
  ``pkgutil.resolve_name`` or Jinja's ``PackageLoader``;
* what importing each module, and resolving each command of the command line,
  actually loads, in a fresh interpreter.

An import built at run time from pieces (``import_module("re" + "play")``) is beyond
both; review catches that.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("shadowdiff", "proxy", "replay", "simulator")
MODES = ("proxy", "replay", "simulator")

# The composition root: the ``shadowdiff`` command line names every package's commands.
ROOT_MODULES = frozenset({"shadowdiff.cli", "shadowdiff.__main__"})
# The only modules that may import another mode than their own, and which.
EXCEPTIONS = {
    "shadowdiff.cli": {"proxy", "replay", "simulator"},   # the composition root
    "replay.demo": {"simulator"},                         # the demo runs on simulated servers
    # the gradable workload's generator, run by hand to rewrite its data file, writes the
    # prompts from the templates the simulator reads them back with (simulator.gradable)
    "replay.workloads.gradable": {"simulator"},
}


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


# A module path written as a string: "replay.logs", "proxy.app:build_app".
_MODULE_PATH = re.compile(rf"({'|'.join(PACKAGES)})(\.[A-Za-z_]\w*)*(:[A-Za-z_][\w.]*)?")
# Calls that import, or read files of, the package their first argument names.
_LOADERS = frozenset({"import_module", "__import__", "files", "resolve_name", "find_spec", "PackageLoader"})


def imported(tree: ast.AST, name: str, is_package: bool) -> Iterator[tuple[int, str]]:
    """(line, module) for every reference to a module in ``tree``: import statements
    (``from a import b`` yields a and a.b), module paths in strings, and packages
    named to the calls in ``_LOADERS``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if _MODULE_PATH.fullmatch(node.value) and ("." in node.value or ":" in node.value):
                yield node.lineno, node.value.partition(":")[0]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            function = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if function in _LOADERS and isinstance(node.args[0].value, str):
                yield node.lineno, node.args[0].value.partition(":")[0]
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:   # relative: resolve against this module's package
                package = name.split(".") if is_package else name.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join([*package, *([base] if base else [])])
            yield node.lineno, base
            for alias in node.names:
                yield node.lineno, f"{base}.{alias.name}"


def violations(root: Path) -> list[str]:
    """Every import under ``root`` that breaks the layout's direction, as 'file:line: why'."""
    found = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            name = module_name(root, path)
            top = name.split(".")[0]
            allowed = EXCEPTIONS.get(name, set())
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            for line, target in imported(tree, name, path.name == "__init__.py"):
                target_top = target.split(".")[0]
                where = f"{path.relative_to(root)}:{line}"
                if target in ROOT_MODULES and name not in ROOT_MODULES:
                    found.append(f"{where}: {name} imports the command line {target}")
                elif target_top in MODES and target_top != top and target_top not in allowed:
                    role = "the core" if top == "shadowdiff" else f"the {top} package"
                    found.append(f"{where}: {role} ({name}) imports {target}")
    return sorted(set(found))


def test_imports_run_from_the_modes_to_the_core_only() -> None:
    assert violations(ROOT) == []


def test_the_check_finds_what_it_looks_for(tmp_path: Path) -> None:
    """Each rule, broken once in a throwaway tree, is reported with its file and line."""
    sources = {
        "shadowdiff/__init__.py": "",
        "shadowdiff/cli.py": "import proxy.cli\nfrom replay import cli\n",            # allowed: the root
        "shadowdiff/store.py": "def f():\n    from proxy.metrics import X\n",        # core -> mode
        "shadowdiff/report.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import replay.logs\n",
        "shadowdiff/helper.py": "from shadowdiff import cli\n",                      # core -> root
        "shadowdiff/reports.py": 'def f():\n    return importlib.import_module("replay.logs")\n',
        "shadowdiff/review.py": 'X = PackageLoader("proxy", "templates")\nY = "replay.cli:demo"\n'
                                'Z = "replay"  # a word, not a module\n',
        "proxy/__init__.py": "",
        "proxy/pairs.py": "from replay.runner import Replay\n",                      # mode -> mode
        "proxy/fake.py": "from simulator.app import build_app\n",                    # -> simulator
        "replay/__init__.py": "",
        "replay/demo.py": "from simulator.app import build_app\n",                   # allowed: the demo
        "replay/bench.py": "from . import demo\nfrom ..proxy import shadow\n",
        "simulator/__init__.py": "",
        "simulator/app.py": "from shadowdiff.errors import RequestError\n",          # allowed: the core
    }
    for name, text in sources.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    found = violations(tmp_path)
    assert found == sorted({
        "proxy/fake.py:1: the proxy package (proxy.fake) imports simulator.app",
        "proxy/fake.py:1: the proxy package (proxy.fake) imports simulator.app.build_app",
        "proxy/pairs.py:1: the proxy package (proxy.pairs) imports replay.runner",
        "proxy/pairs.py:1: the proxy package (proxy.pairs) imports replay.runner.Replay",
        "replay/bench.py:2: the replay package (replay.bench) imports proxy",
        "replay/bench.py:2: the replay package (replay.bench) imports proxy.shadow",
        "shadowdiff/helper.py:1: shadowdiff.helper imports the command line shadowdiff.cli",
        "shadowdiff/reports.py:2: the core (shadowdiff.reports) imports replay.logs",
        "shadowdiff/review.py:1: the core (shadowdiff.review) imports proxy",
        "shadowdiff/review.py:2: the core (shadowdiff.review) imports replay.cli",
        "shadowdiff/report.py:3: the core (shadowdiff.report) imports replay.logs",
        "shadowdiff/store.py:2: the core (shadowdiff.store) imports proxy.metrics",
        "shadowdiff/store.py:2: the core (shadowdiff.store) imports proxy.metrics.X",
    })


_LOADED = """
import importlib, json, sys
for name in sys.argv[1:]:
    if ":" in name:   # a command of the command line, resolved as running it would
        from shadowdiff.cli import main
        main.get_command(None, name.split(":")[1])
    else:
        importlib.import_module(name)
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""


def loaded(*names: str) -> set[str]:
    """The top-level packages loaded once ``names`` are imported in a fresh interpreter."""
    out = subprocess.run([sys.executable, "-c", _LOADED, *names], capture_output=True, text=True, cwd=ROOT,
                         check=True, timeout=120).stdout
    return set(json.loads(out)) & set(PACKAGES)


def _modules(package: str, *, without: frozenset[str] = frozenset()) -> list[str]:
    names = [module_name(ROOT, p) for p in sorted((ROOT / package).rglob("*.py"))]
    return [n for n in names if n not in without and ".migrations" not in n]


def test_importing_the_core_loads_no_mode() -> None:
    assert loaded(*_modules("shadowdiff", without=ROOT_MODULES)) == {"shadowdiff"}


def test_each_mode_loads_only_itself_and_the_core() -> None:
    assert loaded(*_modules("proxy")) == {"proxy", "shadowdiff"}
    assert loaded(*_modules("replay", without=frozenset({"replay.demo", "replay.workloads.gradable"}))) == \
        {"replay", "shadowdiff"}
    assert loaded("replay.demo") == {"replay", "shadowdiff", "simulator"}   # the demo runs on simulators
    assert loaded("replay.workloads.gradable") == {"replay", "shadowdiff", "simulator"}
    assert loaded(*_modules("simulator")) == {"simulator", "shadowdiff"}


def test_each_command_loads_only_what_it_runs() -> None:
    assert loaded("cli:serve") == {"proxy", "shadowdiff"}
    assert loaded("cli:replay", "cli:bench", "cli:demo", "cli:compare") == {"replay", "shadowdiff"}
    assert loaded("cli:report", "cli:judge", "cli:review") == {"shadowdiff"}
    assert loaded("cli:simulate") == {"simulator", "shadowdiff"}


def test_every_benchmark_still_imports() -> None:
    """The benchmarks are run by hand, not by the tests: a renamed function must still
    break here, not in front of the next person to measure."""
    scripts = sorted(p.stem for p in (ROOT / "bench").glob("*.py") if not p.stem.startswith("_"))
    assert scripts
    code = "import sys; sys.path.insert(0, 'bench'); " + "; ".join(f"import {s}" for s in scripts)
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
