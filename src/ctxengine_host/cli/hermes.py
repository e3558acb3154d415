"""``ctxengine hermes install ENGINE``: run one of our engines inside the Hermes agent.

Writes a plugin under Hermes's home directory (``--hermes-home``, ``$HERMES_HOME``,
``~/.hermes``), never into site-packages, enables it in Hermes's ``config.yaml``
and sets ``context.engine`` (unless ``--no-select``). docs/compat.md has the steps.
"""

from __future__ import annotations

import argparse
from typing import Any

from . import EXIT_OK, CliError, add_command, common_options, examples


def register(subparsers: Any) -> None:
    parser = add_command(
        subparsers,
        "hermes",
        help="run a ctxengine engine inside the Hermes agent",
        description="Integration with the Hermes agent (hermes-agent on PyPI).",
        epilog=examples("ctxengine hermes install lcm"),
    )
    actions = parser.add_subparsers(dest="hermes_action", required=True)
    install = add_command(
        actions,
        "install",
        parents=[common_options()],
        help="write a Hermes plugin that runs ENGINE and select it in Hermes's config",
        description="Write a Hermes plugin under Hermes's home that runs our engine NAME, "
        "enable it in Hermes's config.yaml and set context.engine (unless --no-select).",
        epilog=examples(
            "ctxengine hermes install lcm",
            "ctxengine hermes install legacy --hermes-home ~/.hermes-test --no-select",
        ),
    )
    install.add_argument("name", help="our engine id (lcm, legacy, ...)")
    install.add_argument(
        "--hermes-home", metavar="DIR", help="Hermes's home (default: HERMES_HOME or ~/.hermes)"
    )
    install.add_argument(
        "--no-select", action="store_true", help="enable the plugin but leave context.engine"
    )
    install.add_argument("--json", action="store_true", help="machine-readable output")
    install.set_defaults(handler=run_install)


def run_install(args: argparse.Namespace) -> int:
    from ..discovery.engines import find_entries, list_engines
    from ..integrations.hermes import hermes_home, install

    entries = [e for e in find_entries(args.name, list_engines()) if e.source == "entry-point"]
    if not entries:
        raise CliError(
            f"'{args.name}' is not an installed ctxengine engine (see `ctxengine engines`); "
            f"directory engines run in Hermes as Hermes plugins already"
        )
    tools = _tool_names(args.name, args.config)
    result = install(
        args.name,
        home=hermes_home(args.hermes_home),
        config_path=args.config,
        select=not args.no_select,
        tools=tools,
        version=entries[0].version or "",
    )
    if args.json:
        from .output import emit_json

        emit_json(result)
        return EXIT_OK
    print(f"wrote the Hermes plugin {result['plugin']}")
    print(
        f"updated {result['config']} (plugins.enabled"
        + (f", context.engine: {args.name})" if result["selected"] else ")")
        + ("" if result["config_changed"] else ": already set")
    )
    print(f"the engine keeps its data under {result['data_dir']}")
    return EXIT_OK


def _tool_names(name: str, config_path: str | None) -> list[str]:
    """The engine's tool names, for the manifest (empty when it cannot be built here)."""
    try:
        from ..discovery.compat.shims import install_framework_shims
        from ..integrations.hermes import build_engine

        install_framework_shims()  # without Hermes in this Python, the ABC shim stands in
        engine = build_engine(name, config_path=config_path)
    except Exception:
        return []
    try:
        return [t.get("function", t).get("name") for t in engine.get_tool_schemas()]
    finally:
        dispose = getattr(engine.engine, "dispose", None)
        if callable(dispose):
            dispose()
