"""The third-party engine template that ``ctxengine new-engine`` writes.

The files are ``string.Template`` texts shipped as package data; the names
they use are computed from the engine id by :func:`template_values`.
"""

from __future__ import annotations

import re
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from string import Template

from .._version import __version__

FILES_DIR = Path(__file__).parent / "files"

#: Generated path (with ``{module}``) -> template file.
LAYOUT: dict[str, str] = {
    "pyproject.toml": "pyproject.toml.tmpl",
    "README.md": "README.md.tmpl",
    ".gitignore": "gitignore.tmpl",
    "src/{module}/__init__.py": "package_init.py.tmpl",
    "src/{module}/config.py": "config.py.tmpl",
    "src/{module}/engine.py": "engine.py.tmpl",
    "tests/test_contract.py": "test_contract.py.tmpl",
    "tests/test_engine.py": "test_engine.py.tmpl",
}

ENGINE_ID = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
#: Ids the slot reads as "the default engine", or that our own distributions use.
RESERVED_IDS = frozenset({"none", "legacy", "compressor", "lcm", "builtin-last-resort"})


class TemplateError(ValueError):
    """The engine id or the target directory cannot be used; the message says why."""


def check_engine_id(name: str) -> None:
    """Raise :class:`TemplateError` unless ``name`` makes a good engine id."""
    if not ENGINE_ID.match(name):
        raise TemplateError(
            f"engine name {name!r} is not valid: use lowercase letters, digits and single "
            "hyphens, starting with a letter (e.g. 'topic-router')"
        )
    if name in RESERVED_IDS:
        raise TemplateError(f"engine name {name!r} is reserved; choose another name")


def template_values(name: str) -> dict[str, str]:
    """The names a template uses, derived from the engine id."""
    check_engine_id(name)
    words = name.split("-")
    camel = "".join(word.capitalize() for word in words)
    try:
        host_version = version("ctxengine-host")
    except PackageNotFoundError:
        host_version = __version__
    return {
        "name": name,
        "distribution": f"ctxengine-{name}",
        "module": "ctxengine_" + "_".join(words),
        "class_name": f"{camel}Engine",
        "config_class": f"{camel}Config",
        "display_name": " ".join(words).capitalize(),
        "host_version": host_version,
    }


def render_project(name: str, target: Path, *, force: bool = False) -> list[Path]:
    """Write the distribution ``ctxengine-<name>`` into ``target``; return the files written."""
    values = template_values(name)
    target = Path(target)
    if target.exists() and not target.is_dir():
        raise TemplateError(f"{target} exists and is not a directory; pick another DIR")
    if target.is_dir() and any(target.iterdir()) and not force:
        raise TemplateError(
            f"{target} is not empty; pick another DIR or pass --force to overwrite its files"
        )
    written = []
    for relative, template_name in LAYOUT.items():
        path = target / relative.format(module=values["module"])
        text = Template((FILES_DIR / template_name).read_text(encoding="utf-8"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.substitute(values), encoding="utf-8")
        written.append(path)
    return written
