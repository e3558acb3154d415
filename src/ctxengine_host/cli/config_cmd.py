"""``ctxengine config show [--json]``: the effective config, defaults filled in."""

from __future__ import annotations

import argparse
from typing import Any

from . import EXIT_OK, common_options


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("config", help="show the effective configuration")
    actions = parser.add_subparsers(title="actions", metavar="ACTION", required=True)
    show = actions.add_parser(
        "show", parents=[common_options()], help="the effective config with defaults"
    )
    show.add_argument("--json", action="store_true", help="machine-readable output")
    show.set_defaults(handler=run_show)


def effective_config(config_path: str | None, cli_engine: str | None) -> dict[str, Any]:
    """Where the config came from, the slot, and every section with defaults."""
    from ..config import load_config
    from ..discovery import plugins_dir
    from ..slot import choose_slot

    loaded = load_config(config_path)
    choice = choose_slot(cli_engine, loaded)
    return {
        "path": str(loaded.path) if loaded.path else None,
        "source": loaded.source,
        "slot": {"name": choice.name, "source": choice.source, "configured": choice.configured},
        "plugins_dir": str(plugins_dir(loaded.config.plugins.directory)),
        "config": loaded.config.model_dump(mode="json"),
    }


def run_show(args: argparse.Namespace) -> int:
    report = effective_config(args.config, args.engine)
    if args.json:
        from .output import emit_json

        emit_json(report)
        return EXIT_OK
    import tomlkit

    print(f"# effective config: {report['path'] or 'no file, defaults'} [{report['source']}]")
    slot = report["slot"]
    print(f"# slot: {slot['name']} (from {slot['source']}); plugins dir: {report['plugins_dir']}")
    print(tomlkit.dumps(_without_none(report["config"])).rstrip())
    return EXIT_OK


def _without_none(value: Any) -> Any:
    """TOML has no null: unset keys are left out (shown as comments would be noise)."""
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    return value
