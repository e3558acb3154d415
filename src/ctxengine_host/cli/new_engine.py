"""``ctxengine new-engine NAME [DIR]``: write a ready-to-publish third-party engine.

The distribution ``ctxengine-<NAME>`` (default DIR: ``./ctxengine-<NAME>``) holds a
sliding-window engine, its config model, tests using the contract kit, and a
README on publishing to PyPI. See docs/authoring.md.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from . import EXIT_BAD_INPUT, EXIT_OK, CliError, add_command, examples
from .output import emit_json


def register(subparsers: Any) -> None:
    parser = add_command(
        subparsers,
        "new-engine",
        epilog=examples(
            "ctxengine new-engine topic-router",
            "ctxengine new-engine topic-router ~/src/ctxengine-topic-router --json",
        ),
        help="write a new third-party engine distribution from the template",
        description="Write ctxengine-NAME: a working sliding-window engine, its config model, "
        "contract-kit tests and a README on publishing it to PyPI.",
    )
    parser.add_argument("name", metavar="NAME", help="engine id, e.g. topic-router")
    parser.add_argument("dir", metavar="DIR", nargs="?", help="target (default ./ctxengine-NAME)")
    parser.add_argument("--force", action="store_true", help="write into a non-empty DIR")
    parser.add_argument("--json", action="store_true", help="print what was written as JSON")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..template import TemplateError, render_project, template_values

    target = Path(args.dir or f"ctxengine-{args.name}")
    try:
        values = template_values(args.name)
        files = render_project(args.name, target, force=args.force)
    except TemplateError as exc:
        raise CliError(str(exc), EXIT_BAD_INPUT) from exc
    if args.json:
        emit_json(
            {
                "name": values["name"],
                "distribution": values["distribution"],
                "module": values["module"],
                "directory": str(target.resolve()),
                "files": [str(p.relative_to(target)) for p in files],
            }
        )
        return EXIT_OK
    print(f"wrote {values['distribution']} to {target} ({len(files)} files)")
    print("next:")
    print(f"  cd {target} && python -m venv .venv && .venv/bin/pip install -e '.[test]'")
    print("  .venv/bin/python -m pytest              # the contract kit and your own tests")
    print(f"  ctxengine use {values['name']}                # once installed where ctxengine runs")
    return EXIT_OK
