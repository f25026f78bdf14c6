"""The import direction the layout promises (docs/architecture.md, "Layout"), read from the code.

The modes (``shadowdiff.proxy``, ``shadowdiff.replay``, ``shadowdiff.simulator``) use the core,
never each other; the core uses no mode, and its parts import down their layers only
(``LAYERS``: answers below triage below statistics ... below commands); no production path
imports the simulator. Two checks:

* the source: every import statement, wherever it sits (module level, inside a
  function, under ``TYPE_CHECKING``), every string that is a module path
  (``"shadowdiff.replay.logs"``, ``"shadowdiff.proxy.app:build_app"``), and every package named to
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
import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "shadowdiff"
# The modes, each ``shadowdiff.<mode>``: proxy/ and replay/ sit at the repository's top level
# (shadowdiff/proxy and shadowdiff/replay link to them), the simulator inside shadowdiff/.
MODES = ("proxy", "replay", "simulator")
FOLDERS = {"shadowdiff": ROOT / "shadowdiff", "shadowdiff.proxy": ROOT / "proxy", "shadowdiff.replay": ROOT / "replay"}
# The core's parts, lowest first: each imports only itself and the parts before it.
# "shadowdiff" is the package's own top-level modules (errors, vocabulary).
LAYERS = ("shadowdiff", "answers", "triage", "statistics", "store", "verdict", "report", "review", "commands")

# The composition root: the ``shadowdiff`` command line names every package's commands.
ROOT_MODULES = frozenset({"shadowdiff.cli", "shadowdiff.__main__"})
# The only modules that may import another mode than their own, and which.
EXCEPTIONS = {
    "shadowdiff.cli": {"proxy", "replay", "simulator"},   # the composition root
    "shadowdiff.replay.demo": {"simulator"},              # the demo runs on simulated servers
    # the gradable workload's generator, run by hand to rewrite its data file, writes the
    # prompts from the templates the simulator reads them back with (shadowdiff.simulator.gradable)
    "shadowdiff.replay.workloads.gradable": {"simulator"},
}


def dotted(relative: Path) -> str:
    """The module a file is, by its path below the folder its package names start in."""
    parts = list(relative.with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(root: Path) -> Iterator[tuple[str, Path]]:
    """(module, file) for every module of the package, the modes' folders at their
    installed names. Links are not followed: their targets are walked as themselves."""
    for prefix, folder in FOLDERS.items():
        folder = root / folder.relative_to(ROOT)
        for directory, subfolders, files in os.walk(folder):   # os.walk does not follow links
            subfolders.sort()
            for file in sorted(f for f in files if f.endswith(".py")):
                path = Path(directory) / file
                yield f"{prefix}.{dotted(path.relative_to(folder))}".rstrip("."), path


def part(module: str) -> str:
    """Which part a module belongs to: a mode, a layer of the core, or the command line."""
    names = module.split(".")
    if names[0] != PACKAGE:
        return ""
    if module in ROOT_MODULES:
        return "cli"
    if len(names) > 1 and (names[1] in MODES or names[1] in LAYERS):
        return names[1]
    return PACKAGE


# A module path written as a string: "shadowdiff.replay.logs", "shadowdiff.proxy.app:build_app".
_MODULE_PATH = re.compile(r"shadowdiff(\.[A-Za-z_]\w*)+(:[A-Za-z_][\w.]*)?")
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


def why(name: str, target: str) -> str | None:
    """Why ``name`` may not import ``target``, or None where it may."""
    if target.split(".")[0] in MODES:
        return f"{name} imports {target}, a name the wheel does not install (shadowdiff.{target})"
    source, wanted = part(name), part(target)
    if not wanted or wanted == source:
        return None
    if wanted == "cli":
        return f"{name} imports the command line {target}"
    if wanted in MODES:
        if source == "cli" or wanted in EXCEPTIONS.get(name, set()):
            return None
        role = f"the {source} package" if source in MODES else f"the core ({source})"
        return f"{role} ({name}) imports {target}"
    if source in LAYERS and LAYERS.index(wanted) > LAYERS.index(source):
        return f"the core's {source} ({name}) imports {target}, a layer above it"
    return None


def violations(root: Path) -> list[str]:
    """Every import under ``root`` that breaks the layout's direction, as 'file:line: why'."""
    found = []
    for name, path in modules(root):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for line, target in imported(tree, name, path.name == "__init__.py"):
            reason = why(name, target)
            if reason:
                found.append(f"{path.relative_to(root)}:{line}: {reason}")
    return sorted(set(found))


def test_imports_run_from_the_modes_to_the_core_and_down_its_layers() -> None:
    assert violations(ROOT) == []


def test_every_core_folder_is_a_layer() -> None:
    """A new folder of the core has its place in the layers, and a docstring that says what it holds."""
    folders = {p.name for p in (ROOT / "shadowdiff").iterdir()
               if p.is_dir() and not p.is_symlink() and (p / "__init__.py").exists()}
    assert folders == (set(LAYERS) - {PACKAGE}) | {"simulator"}
    for folder in folders:
        assert ast.get_docstring(ast.parse((ROOT / "shadowdiff" / folder / "__init__.py").read_text())), folder
    # and the tests follow: a folder of tests per part
    tests = {p.name for p in (ROOT / "tests").iterdir() if (p / "__init__.py").exists()}
    assert folders | set(MODES) <= tests, sorted(folders | set(MODES) - tests)


def test_the_modes_install_under_the_one_name() -> None:
    """proxy/ and replay/ are linked into shadowdiff/ and mapped there by the build."""
    for mode in ("proxy", "replay"):
        link = ROOT / "shadowdiff" / mode
        assert link.is_symlink() and link.resolve() == (ROOT / mode).resolve(), mode
    with (ROOT / "pyproject.toml").open("rb") as f:
        setuptools = tomllib.load(f)["tool"]["setuptools"]
    assert setuptools["package-dir"] == {"shadowdiff.proxy": "proxy", "shadowdiff.replay": "replay"}
    # every package of the source, listed: the build finds none by itself
    packages = {name for name, path in modules(ROOT) if path.name == "__init__.py"}
    assert sorted(setuptools["packages"]) == sorted(packages)


def test_the_check_finds_what_it_looks_for(tmp_path: Path) -> None:
    """Each rule, broken once in a throwaway tree, is reported with its file and line."""
    sources = {
        "shadowdiff/__init__.py": "",
        "shadowdiff/cli.py": "import shadowdiff.proxy.cli\nfrom shadowdiff.replay import cli\n",   # allowed: the root
        "shadowdiff/store/__init__.py": "def f():\n    from shadowdiff.proxy.metrics import X\n",    # core -> mode
        "shadowdiff/report/__init__.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                         "    import shadowdiff.replay.logs\n",
        "shadowdiff/answers/helper.py": "from shadowdiff import cli\n",                    # core -> root
        "shadowdiff/answers/parse.py": "from shadowdiff.store import Store\n",            # a layer up
        "shadowdiff/report/write.py": 'def f():\n    return importlib.import_module("shadowdiff.replay.logs")\n',
        "shadowdiff/review/app.py": 'X = PackageLoader("shadowdiff.proxy", "templates")\n'
                                    'Y = "shadowdiff.replay.cli:demo"\nZ = "replay"  # a word, not a module\n',
        "proxy/__init__.py": "",
        "proxy/pairs.py": "from shadowdiff.replay.runner import Replay\n",                    # mode -> mode
        "proxy/fake.py": "from shadowdiff.simulator.app import build_app\n",                  # -> simulator
        "proxy/ok.py": "from shadowdiff.store import Store\n",                               # allowed: the core
        "replay/__init__.py": "",
        "replay/demo.py": "from shadowdiff.simulator.app import build_app\n",                 # allowed: the demo
        "replay/bench.py": "from . import demo\nfrom ..proxy import shadow\n",
        "shadowdiff/simulator/__init__.py": "",
        "shadowdiff/simulator/app.py": "from shadowdiff.errors import RequestError\n",        # allowed: the core
        "shadowdiff/answers/tap.py": "import proxy.tap\n",                 # the repository's folder, not installed
    }
    for name, text in sources.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    found = violations(tmp_path)
    assert found == sorted({
        "proxy/fake.py:1: the proxy package (shadowdiff.proxy.fake) imports shadowdiff.simulator.app",
        "proxy/fake.py:1: the proxy package (shadowdiff.proxy.fake) imports shadowdiff.simulator.app.build_app",
        "proxy/pairs.py:1: the proxy package (shadowdiff.proxy.pairs) imports shadowdiff.replay.runner",
        "proxy/pairs.py:1: the proxy package (shadowdiff.proxy.pairs) imports shadowdiff.replay.runner.Replay",
        "replay/bench.py:2: the replay package (shadowdiff.replay.bench) imports shadowdiff.proxy",
        "replay/bench.py:2: the replay package (shadowdiff.replay.bench) imports shadowdiff.proxy.shadow",
        "shadowdiff/answers/tap.py:1: shadowdiff.answers.tap imports proxy.tap, a name the wheel does not install "
        "(shadowdiff.proxy.tap)",
        "shadowdiff/answers/helper.py:1: shadowdiff.answers.helper imports the command line shadowdiff.cli",
        "shadowdiff/answers/parse.py:1: the core's answers (shadowdiff.answers.parse) imports shadowdiff.store, "
        "a layer above it",
        "shadowdiff/answers/parse.py:1: the core's answers (shadowdiff.answers.parse) imports shadowdiff.store.Store, "
        "a layer above it",
        "shadowdiff/report/write.py:2: the core (report) (shadowdiff.report.write) imports shadowdiff.replay.logs",
        "shadowdiff/review/app.py:1: the core (review) (shadowdiff.review.app) imports shadowdiff.proxy",
        "shadowdiff/review/app.py:2: the core (review) (shadowdiff.review.app) imports shadowdiff.replay.cli",
        "shadowdiff/report/__init__.py:3: the core (report) (shadowdiff.report) imports shadowdiff.replay.logs",
        "shadowdiff/store/__init__.py:2: the core (store) (shadowdiff.store) imports shadowdiff.proxy.metrics",
        "shadowdiff/store/__init__.py:2: the core (store) (shadowdiff.store) imports shadowdiff.proxy.metrics.X",
    })


_LOADED = """
import importlib, json, sys
for name in sys.argv[1:]:
    if ":" in name:   # a command of the command line, resolved as running it would
        from shadowdiff.cli import main
        main.get_command(None, name.split(":")[1])
    else:
        importlib.import_module(name)
print(json.dumps(sorted({".".join(m.split(".")[:2]) for m in sys.modules if m.startswith("shadowdiff")})))
"""


def loaded(*names: str) -> set[str]:
    """What of the package is loaded once ``names`` are imported in a fresh interpreter:
    "shadowdiff" for the core, and each mode by name."""
    out = subprocess.run([sys.executable, "-c", _LOADED, *names], capture_output=True, text=True, cwd=ROOT,
                         check=True, timeout=120).stdout
    return {name.split(".")[1] if name.split(".")[-1] in MODES else PACKAGE for name in json.loads(out)}


def _modules(prefix: str, *, without: frozenset[str] = frozenset()) -> list[str]:
    return [name for name, _ in modules(ROOT)
            if (name == prefix or name.startswith(prefix + ".")) and name not in without and ".migrations" not in name]


_CORE_ONLY = ROOT_MODULES | {name for name, _ in modules(ROOT) if part(name) in MODES}


def test_importing_the_core_loads_no_mode() -> None:
    assert loaded(*_modules("shadowdiff", without=_CORE_ONLY)) == {"shadowdiff"}


def test_each_mode_loads_only_itself_and_the_core() -> None:
    assert loaded(*_modules("shadowdiff.proxy")) == {"proxy", "shadowdiff"}
    generators = frozenset({"shadowdiff.replay.demo", "shadowdiff.replay.workloads.gradable"})
    assert loaded(*_modules("shadowdiff.replay", without=generators)) == {"replay", "shadowdiff"}
    assert loaded("shadowdiff.replay.demo") == {"replay", "shadowdiff", "simulator"}   # the demo runs on simulators
    assert loaded("shadowdiff.replay.workloads.gradable") == {"replay", "shadowdiff", "simulator"}
    assert loaded(*_modules("shadowdiff.simulator")) == {"simulator", "shadowdiff"}


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


def test_no_test_module_imports_another() -> None:
    """What tests share lives in tests/support/; a test module imports no other test module
    (or conftest), so that moving or deleting one breaks nothing else."""
    found = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        name = dotted(path.relative_to(ROOT))
        for line, target in imported(ast.parse(path.read_text(encoding="utf-8")), name, path.name == "__init__.py"):
            last = target.split(".")
            if target.startswith("tests.") and any(p.startswith("test_") or p == "conftest" for p in last[1:]):
                found.append(f"{path.relative_to(ROOT)}:{line}: imports {target}")
    assert found == []
