"""The rooms of ``ctxengine_host`` and their import rules, read from the source with ast.

A room is a subpackage (``contract``, ``discovery``, ``runtime``, ``stores``, ...); the
top-level modules (config, paths, limits, tokens, ...) form the room ``shared``. The rules
are those of docs/design.md, "Where things live": the rooms depend on each other without a
cycle, the contract depends on nothing of the host, and a session's parts see the session
through ``runtime.parts`` only.
"""

from __future__ import annotations

import ast
import itertools
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = "ctxengine_host"


@dataclass(frozen=True)
class Import:
    importer: str
    target: str
    kind: str  # "module" (runs on import), "lazy" (inside a function), "typing" (TYPE_CHECKING)
    line: int


def _modules() -> dict[str, tuple[Path, bool]]:
    modules = {}
    for path in sorted((SRC / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        modules[".".join(parts)] = (path, is_package)
    return modules


MODULES = _modules()


def _targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = module.split(".") if is_package else module.split(".")[:-1]
    if node.level:
        base = base[: len(base) - node.level + 1]
        target = ".".join([*base, *([node.module] if node.module else [])])
    else:
        target = node.module or ""
    # ``from . import sub`` imports the submodule (its package is imported already).
    subs = [f"{target}.{a.name}" if f"{target}.{a.name}" in MODULES else target for a in node.names]
    return list(dict.fromkeys(subs))


def _imports() -> list[Import]:
    found = []
    for module, (path, is_package) in MODULES.items():

        def walk(node: ast.AST, kind: str, module: str = module, is_package: bool = is_package):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                    walk(child, "typing")
                elif isinstance(child, ast.Import | ast.ImportFrom):
                    for target in _targets(module, is_package, child):
                        if target in MODULES and target != module:
                            found.append(Import(module, target, kind, child.lineno))
                elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                    walk(child, "typing" if kind == "typing" else "lazy")
                else:
                    walk(child, kind)

        walk(ast.parse(path.read_text(encoding="utf-8")), "module")
    return found


IMPORTS = _imports()
RUNNING = [i for i in IMPORTS if i.kind != "typing"]  # the imports that execute


def room(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "package"  # the public names (imported lazily by name, not by statements)
    if parts[1] == "__main__":
        return "cli"  # ``python -m ctxengine_host`` is the command line
    if (SRC / PACKAGE / parts[1]).is_dir():
        return parts[1]
    return "shared"


def _cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``edges`` (as a path that returns to its start), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node)):
            return found
    return None


def _where(imports: list[Import], pairs: set[tuple[str, str]], key) -> list[str]:
    return [
        f"{i.importer} -> {i.target} (line {i.line}, {i.kind})"
        for i in imports
        if (key(i.importer), key(i.target)) in pairs
    ]


def test_the_parser_sees_the_imports_it_must():
    # A rule over an empty list cannot fail: check the reader on imports known to exist.
    seen = {(i.importer, i.target, i.kind) for i in IMPORTS}
    assert ("ctxengine_host.runtime.session", "ctxengine_host.runtime.assembly", "module") in seen
    assert ("ctxengine_host.runtime.host", "ctxengine_host.discovery.slot", "lazy") in seen
    assert ("ctxengine_host.runtime.session", "ctxengine_host.runtime.host", "typing") in seen
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}}) is None


def test_no_import_cycle_between_modules():
    """Module-level and lazy imports: no module imports itself back, however far round."""
    edges: dict[str, set[str]] = {}
    for i in RUNNING:
        edges.setdefault(i.importer, set()).add(i.target)
    cycle = _cycle(edges)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_no_import_cycle_between_rooms():
    edges: dict[str, set[str]] = {}
    for i in RUNNING:
        if room(i.importer) != room(i.target):
            edges.setdefault(room(i.importer), set()).add(room(i.target))
    cycle = _cycle(edges)
    if cycle:
        pairs = set(itertools.pairwise(cycle))
        pytest.fail(
            f"rooms import each other: {' -> '.join(cycle)}\n"
            + "\n".join(_where(RUNNING, pairs, room))
        )


# What each room may import besides itself, type-only imports included.
MAY_IMPORT = {
    "contract": set(),  # an engine author reads only this room
    "shapes": {"contract"},
    "shared": {"contract", "shapes"},  # tokens counts messages in every shape
    "stores": {"contract", "shared"},
    "summarizer": {"contract", "shared"},
    "discovery": {"contract", "shared", "stores", "summarizer"},
    "runtime": {"contract", "shapes", "shared", "stores", "summarizer", "discovery"},
}


@pytest.mark.parametrize("name", sorted(MAY_IMPORT))
def test_a_lower_room_imports_nothing_above_it(name):
    allowed = MAY_IMPORT[name] | {name}
    wrong = [
        f"{i.importer} -> {i.target} (line {i.line}, {i.kind})"
        for i in IMPORTS
        if room(i.importer) == name and room(i.target) not in allowed
    ]
    assert not wrong, f"{name} may import only {sorted(allowed)}:\n" + "\n".join(wrong)


def test_only_the_command_line_imports_the_command_line():
    wrong = [
        f"{i.importer} -> {i.target}"
        for i in IMPORTS
        if room(i.target) == "cli" and room(i.importer) != "cli"
    ]
    assert not wrong, wrong


SESSION_PARTS = ("assembly", "compaction", "maintenance", "subagents", "views", "live")


@pytest.mark.parametrize("part", SESSION_PARTS)
def test_a_session_part_does_not_name_the_session_back(part):
    """The parts see the session and the host through ``runtime.parts`` protocols."""
    module = f"{PACKAGE}.runtime.{part}"
    assert module in MODULES
    back = [
        f"{i.target} (line {i.line}, {i.kind})"
        for i in IMPORTS
        if i.importer == module and i.target.rsplit(".", 1)[-1] in ("session", "host")
    ]
    assert not back, f"{module} imports {back}"
