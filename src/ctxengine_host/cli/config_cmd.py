"""``ctxengine config show [--json]``: the effective config, defaults filled in."""

from __future__ import annotations

import argparse
from typing import Any

from . import EXIT_BAD_INPUT, EXIT_OK, CliError, add_command, common_options, examples


def register(subparsers: Any) -> None:
    parser = add_command(
        subparsers,
        "config",
        help="show the effective configuration",
        description="Inspect the configuration ctxengine reads (one TOML file, never merged).",
        epilog=examples("ctxengine config show", "ctxengine config show --json"),
    )
    actions = parser.add_subparsers(title="actions", metavar="ACTION", required=True)
    show = add_command(
        actions,
        "show",
        parents=[common_options(engine=True)],
        help="the effective config with defaults",
        description="Print the config file in use, where the engine slot comes from, and "
        "every section with its defaults filled in. An unknown selected engine is bad "
        "input (exit 2), after the listing.",
        epilog=examples(
            "ctxengine config show",
            "ctxengine config show --config ./ctxengine.toml --json",
        ),
    )
    show.add_argument("--json", action="store_true", help="machine-readable output")
    show.set_defaults(handler=run_show)


def effective_config(config_path: str | None, cli_engine: str | None) -> dict[str, Any]:
    """Where the config came from, the slot, and every section with defaults."""
    from ..config import load_config
    from ..discovery.engines import list_engines, plugins_dir
    from ..discovery.slot import choose_slot, slot_may_exist, unknown_slot_message

    loaded = load_config(config_path)
    choice = choose_slot(cli_engine, loaded)
    entries = list_engines(plugins_directory=loaded.config.plugins.directory)
    unknown = None
    if not slot_may_exist(choice.name, entries):
        unknown = unknown_slot_message(choice, entries, loaded.path)
    return {
        "path": str(loaded.path) if loaded.path else None,
        "source": loaded.source,
        "slot": {"name": choice.name, "source": choice.source, "configured": choice.configured},
        "plugins_dir": str(plugins_dir(loaded.config.plugins.directory)),
        "config": loaded.config.model_dump(mode="json"),
        "unknown_engine": unknown,
    }


def run_show(args: argparse.Namespace) -> int:
    report = effective_config(args.config, args.engine)
    if args.json:
        from .output import emit_json

        emit_json(report)
    else:
        import tomlkit

        path = report["path"] or "no file, defaults"
        print(f"# effective config: {path} [{report['source']}]")
        slot = report["slot"]
        print(
            f"# slot: {slot['name']} (from {slot['source']}); plugins dir: {report['plugins_dir']}"
        )
        print(tomlkit.dumps(_without_none(report["config"])).rstrip())
    if report["unknown_engine"]:
        raise CliError(report["unknown_engine"], EXIT_BAD_INPUT)
    return EXIT_OK


def _without_none(value: Any) -> Any:
    """TOML has no null: unset keys are left out (shown as comments would be noise)."""
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    return value
