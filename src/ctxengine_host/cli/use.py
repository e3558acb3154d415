"""``ctxengine use NAME [--local]``: set the slot in the config file, keeping its comments.

Edits the config file in use (``--config``, ``CTXENGINE_CONFIG``,
``./ctxengine.toml``, the user file), or creates the user file; ``--local``
writes ``./ctxengine.toml`` instead. An unknown engine is refused.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from . import EXIT_BAD_INPUT, EXIT_OK, CliError, add_command, common_options, examples


def register(subparsers: Any) -> None:
    parser = add_command(
        subparsers,
        "use",
        parents=[common_options()],
        help="select an engine: write [context] engine to the config file",
        description="Select an engine for every host that reads this config: write "
        "[context] engine = NAME into the config file in use (comments kept), or into "
        "./ctxengine.toml with --local. An engine that is not installed is refused.",
        epilog=examples(
            "ctxengine use lcm",
            "ctxengine use legacy --local     # back to the default, for this directory only",
        ),
    )
    parser.add_argument("name", help="engine id (see `ctxengine engines`); 'legacy' = default")
    parser.add_argument(
        "--local", action="store_true", help="write ./ctxengine.toml instead of the file in use"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..configfile import LOCAL_CONFIG_NAME, find_config_file, raw_string, read_raw_config
    from ..discovery.engines import find_entries, list_engines
    from ..discovery.slot import DEFAULT_ALIASES, ENGINE_ENV, unknown_engine_message
    from .output import note, warn

    name = args.name.strip()
    path, source = find_config_file(args.config)
    raw = read_raw_config(path, source)
    directory = raw_string(raw, "plugins", "directory", str(path))
    entries = list_engines(plugins_directory=directory)
    if name.lower() not in DEFAULT_ALIASES and not find_entries(name, entries):
        raise CliError(unknown_engine_message(name, entries), EXIT_BAD_INPUT)
    if args.local:
        target = Path.cwd() / LOCAL_CONFIG_NAME
    elif path is not None:
        target = path
    else:
        from ..paths import user_config_file

        target = user_config_file()
    write_slot(target, name)
    print(f"engine slot set to '{name}' in {target}")
    unusable = [e for e in find_entries(name, entries) if e.error]
    if unusable:
        warn(f"'{name}' cannot load as things are: {unusable[0].error}")
    env = os.environ.get(ENGINE_ENV)
    if env is not None:
        note(f"{ENGINE_ENV}={env!r} is set and overrides the config file")
    if args.local and path is not None and path != target and source in ("flag", "env"):
        note(f"the file in use is {path} (from {source}), not {target}")
    return EXIT_OK


def write_slot(target: Path, name: str) -> None:
    """Set ``[context] engine = name`` in ``target``, creating it if needed; comments kept."""
    import tomlkit
    from tomlkit.exceptions import ParseError

    text = target.read_text(encoding="utf-8") if target.is_file() else ""
    try:
        document = tomlkit.parse(text)
    except ParseError as exc:
        raise CliError(
            f"{target}: invalid TOML: {exc}; fix the file first", EXIT_BAD_INPUT
        ) from exc
    context = document.get("context")
    if context is None:
        context = tomlkit.table()
        document["context"] = context
    elif not isinstance(context, dict):
        raise CliError(f"{target}: 'context' must be a table ([context]); fix the file first")
    context["engine"] = name
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(tomlkit.dumps(document), encoding="utf-8")
    os.replace(tmp, target)
