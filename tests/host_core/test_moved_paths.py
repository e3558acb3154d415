"""Old module paths (before the subpackages) still import until 0.2.0: each warns once,
naming the new path, and is the very module at the new path. Our own code uses none."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from ctxengine_host import _moved

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_DIR = ROOT / "src" / "ctxengine_host"


def run(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT
    )


def old_paths() -> list[str]:
    """Every old name: the table's, and each submodule of an old package."""
    names = []
    for old, new in _moved.MOVED.items():
        names.append(f"ctxengine_host.{old}")
        folder = PACKAGE_DIR / new.replace(".", "/")
        if folder.is_dir():
            names += [
                f"ctxengine_host.{old}.{p.stem}"
                for p in folder.glob("*.py")
                if p.stem != "__init__"
            ]
    return sorted(set(names))


IMPORT_EACH = """
import json, sys, warnings
out = {}
for old in json.loads(sys.argv[1]):
    with warnings.catch_warnings(record=True) as first:
        warnings.simplefilter("always")
        exec(f"import {old}")  # a plain import statement, as a user writes it
    module = sys.modules[old]
    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always")
        exec(f"import {old}")
    out[old] = {
        "module": module.__name__,
        "spec": module.__spec__.name,
        "same": sys.modules[old] is sys.modules[module.__name__],
        "first": [str(w.message) for w in first if w.category is DeprecationWarning
                  and w.message.args[0].startswith(old + " moved")],
        "first_file": [w.filename for w in first if w.category is DeprecationWarning],
        "again": len([w for w in again if w.category is DeprecationWarning]),
    }
print(json.dumps(out))
"""


def test_each_old_path_is_the_new_module_and_warns_once_with_its_new_name():
    names = old_paths()
    assert len(names) > len(_moved.MOVED)  # old packages' submodules are covered
    result = run(IMPORT_EACH.replace("sys.argv[1]", repr(json.dumps(names))))
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    for old in names:
        new = _moved.new_name(old)
        got = seen[old]
        assert got["module"] == new and got["spec"] == new and got["same"], (old, got)
        assert len(got["first"]) == 1, (old, got)
        assert new in got["first"][0] and _moved.REMOVED_IN in got["first"][0]
        assert got["again"] == 0, old  # once: the alias stays in sys.modules
        assert all(f == "<string>" for f in got["first_file"]), got  # points at the importer


def test_the_old_names_are_the_same_objects():
    result = run(
        "import warnings; warnings.simplefilter('ignore')\n"
        "import ctxengine_host.session as old, ctxengine_host.runtime.session as new\n"
        "from ctxengine_host.pgstore import PostgresTranscriptStore as P\n"
        "from ctxengine_host.stores.pg_transcript import PostgresTranscriptStore as Q\n"
        "import ctxengine_host.generator.filler as f, ctxengine_host.replay.generator.filler as g\n"
        "from ctxengine_host.compat.hermes import register_engine as r\n"
        "from ctxengine_host.integrations.hermes import register_engine as s\n"
        "print(old.Session is new.Session, P is Q, f is g, r is s)"
    )
    assert result.stdout.split() == ["True"] * 4, result.stderr


@pytest.mark.parametrize(
    ("statement", "new"),
    [
        ("from ctxengine_host.discovery import list_engines", "discovery.engines.list_engines"),
        ("from ctxengine_host.stores.transcript import open_store", "stores.backends.open_store"),
    ],
)
def test_names_that_left_their_module_warn_and_resolve(statement, new):
    result = run(statement, "-W", "error::DeprecationWarning")
    assert result.returncode == 1 and f"ctxengine_host.{new}" in result.stderr, result.stderr
    assert run(statement, "-W", "ignore::DeprecationWarning").returncode == 0


def test_every_name_that_moved_is_the_object_at_its_new_place():
    code = (
        "import importlib, json, warnings\n"
        "from ctxengine_host import _moved\n"
        "out = {}\n"
        "for key, new in _moved.NAMES_MOVED.items():\n"
        "    module, _, name = key.rpartition('.')\n"
        "    old = importlib.import_module('ctxengine_host.' + module)\n"
        "    with warnings.catch_warnings(record=True) as seen:\n"
        "        warnings.simplefilter('always')\n"
        "        value = getattr(old, name)\n"
        "    target = getattr(importlib.import_module('ctxengine_host.' + new), name)\n"
        "    out[key] = [value is target, [str(w.message) for w in seen]]\n"
        "print(json.dumps(out))\n"
    )
    result = run(code)
    assert result.returncode == 0, result.stderr
    for key, (same, messages) in json.loads(result.stdout).items():
        name = key.rpartition(".")[2]
        new = f"ctxengine_host.{_moved.NAMES_MOVED[key]}.{name}"
        assert same and len(messages) == 1 and new in messages[0], (key, messages)


def test_an_unknown_name_is_still_an_attribute_error():
    result = run("from ctxengine_host.discovery import no_such_name")
    assert "ImportError" in result.stderr and "no_such_name" in result.stderr


def test_no_file_is_left_at_an_old_path():
    # The old paths are served by ctxengine_host._moved alone: a file there would stop a
    # parallel edit of the old module from following the rename.
    for old in _moved.MOVED:
        stem = PACKAGE_DIR / old.replace(".", "/")
        assert not stem.with_suffix(".py").exists(), stem
        assert not (stem / "__init__.py").exists() or old in _moved.MODULES_NOW_PACKAGES, stem


def test_importing_the_package_and_every_module_warns_about_nothing():
    assert run("import ctxengine_host", "-W", "error::DeprecationWarning").returncode == 0
    code = (
        "import importlib, pkgutil, ctxengine_host\n"
        "for m in pkgutil.walk_packages(ctxengine_host.__path__, 'ctxengine_host.'):\n"
        "    if '.template.files' in m.name or m.name.endswith('__main__'):\n"
        "        continue\n"
        "    try:\n"
        "        importlib.import_module(m.name)\n"
        "    except ImportError as exc:\n"
        "        if (exc.name or '').startswith('ctxengine_host'):\n"
        "            raise\n"  # a framework that is not installed here is fine
    )
    result = run(code, "-W", "error::DeprecationWarning")
    assert result.returncode == 0, result.stderr[-3000:]


def _old_imports(path: Path) -> list[str]:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError):
        return []
    found = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        for name in names:
            new = _moved.new_name(name)
            if new is not None:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name} (now {new})")
    return found


def test_our_code_imports_no_old_path():
    folders = ["src", "tests", "benchmarks", "examples", "scripts", "integrations", "docs"]
    this = Path(__file__).resolve()
    found = []
    for folder in folders:
        for path in (ROOT / folder).rglob("*.py"):
            if path.resolve() != this and "node_modules" not in path.parts:
                found += _old_imports(path)
    assert not found, "\n".join(found)
