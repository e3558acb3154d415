"""``ctxengine engines [--json] [--check]``: every engine found, and which one is selected.

Without ``--check`` nothing is imported: names, versions and clashes come from
metadata, and the slot from the raw config file (no pydantic on this path unless
there is a config file: it is validated as ``doctor`` validates it, so that both
report the same config errors). An unknown selected engine is bad input (exit 2)
after the listing, with the message every command gives.
"""

from __future__ import annotations

import argparse
from typing import Any

from . import EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, add_command, common_options, examples


def register(subparsers: Any) -> None:
    parser = add_command(
        subparsers,
        "engines",
        parents=[common_options(engine=True)],
        help="list the engines found and the one selected",
        description="List every engine found (installed distributions, the plugins "
        "directory, built-in) without importing any of them, and mark the selected one.",
        epilog=examples(
            "ctxengine engines",
            "ctxengine engines --json | jq '.engines[].name'",
            "ctxengine engines --check        # import, construct and validate each engine",
        ),
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument(
        "--check", action="store_true", help="import, construct and validate every engine"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..configfile import find_config_file, raw_string, read_raw_config
    from ..discovery.engines import find_entries, list_engines, plugins_dir
    from ..discovery.slot import choose_slot_from, slot_may_exist, unknown_slot_message

    path, source = find_config_file(args.config)
    raw = read_raw_config(path, source)
    if path is not None:  # the same config errors as doctor, the same exit code
        from ..config import load_config

        load_config(args.config)
    origin = str(path)
    choice = choose_slot_from(args.engine, raw_string(raw, "context", "engine", origin))
    directory = raw_string(raw, "plugins", "directory", origin)
    entries = list_engines(plugins_directory=directory)
    checks = check_all(entries, args.config) if args.check else None
    if checks is not None:  # the imports recorded the engine names of directory engines
        entries = list_engines(plugins_directory=directory)
    selected = find_entries(choice.name, entries)[:1]
    rows = []
    for entry in entries:
        row = entry.as_dict()
        row["selected"] = entry in selected
        rows.append(row)
    failed = False
    if checks is not None:
        for row in rows:
            row["check"] = checks[id_of(row)]
            failed = failed or not row["check"]["ok"]
    found = any(row["selected"] for row in rows)
    block = (raw.get("engines") or {}).get(choice.name)
    enabled = not (isinstance(block, dict) and block.get("enabled") is False)
    report = {
        "config": {"path": str(path) if path else None, "source": source},
        "plugins_dir": str(plugins_dir(directory)),
        "slot": {"name": choice.name, "source": choice.source, "configured": choice.configured},
        "selected_found": found,
        "selected_enabled": enabled,
        "engines": rows,
    }
    if args.json:
        from .output import emit_json

        emit_json(report)
    else:
        print_table(report)
    if not found and not slot_may_exist(choice.name, entries):
        from . import CliError

        raise CliError(unknown_slot_message(choice, entries, path), EXIT_BAD_INPUT)
    if not found:
        from .output import note

        note(
            f"no engine is listed as {choice.name!r}; a directory engine may call itself "
            "that once imported: `ctxengine engines --check` imports them"
        )
    return EXIT_FAILURE if failed else EXIT_OK


def id_of(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["name"], row["source"], row["distribution"], row["location"])


def check_all(entries: list[Any], config_path: str | None) -> dict[tuple[Any, ...], dict]:
    """Import, construct and validate each entry; one result per entry."""
    from ..config import ConfigError, load_config
    from ..discovery.compat.cloning import clone_problems
    from ..discovery.engines import EngineLoadError
    from ..discovery.slot import construct_engine
    from ..discovery.validation import contract_problems, host_requirement_problems
    from ..runtime.standalone import context_factory, counter_for

    loaded = load_config(config_path)
    make_context = context_factory(loaded, counter_for(loaded))
    results = {}
    for entry in entries:
        problems: list[str] = []
        if entry.error is not None:
            problems.append(entry.error)
        else:
            try:
                engine = construct_engine(entry, loaded, make_context)
            except (EngineLoadError, ConfigError) as exc:
                problems.append(str(exc))
            else:
                expected = None if entry.source == "directory" else entry.name
                problems = contract_problems(engine, expected)
                problems += [] if problems else clone_problems(engine)
                problems += [] if problems else host_requirement_problems(engine, _caps())
                try:
                    engine.dispose()
                except Exception as exc:
                    problems.append(f"dispose() raised {type(exc).__name__}: {exc}")
        results[id_of(entry.as_dict())] = {"ok": not problems, "problems": problems}
    return results


def _caps() -> frozenset[str]:
    from ..contract.models import HOST_CAPABILITIES

    return HOST_CAPABILITIES


def print_table(report: dict[str, Any]) -> None:
    from .output import note, warn

    slot = report["slot"]
    rows = report["engines"]
    width = max([len(r["name"]) for r in rows] + [4])
    print(f"{'':2}{'NAME':<{width}}  {'VERSION':<10} {'SOURCE':<12} DISTRIBUTION / LOCATION")
    for row in rows:
        mark = "* " if row["selected"] else "  "
        where = row["distribution"] if row["source"] != "directory" else row["location"]
        version = row["version"] or "-"
        print(f"{mark}{row['name']:<{width}}  {version:<10} {row['source']:<12} {where}")
        if row.get("aliases"):
            print(f"{'':{width + 4}}also selected as: {', '.join(row['aliases'])}")
        for warning in row["warnings"]:
            warn(f"{row['name']}: {warning}")
        if row["error"]:
            print(f"{'':{width + 4}}unusable: {row['error']}")
        check = row.get("check")
        if check is not None:
            verdict = "ok" if check["ok"] else "FAILED: " + "; ".join(check["problems"])
            print(f"{'':{width + 4}}check: {verdict}")
    print(f"\nselected: {slot['name']} (from {slot['source']})")
    if report["selected_found"] and not report["selected_enabled"]:
        note(
            f"[engines.{slot['name']}] enabled = false in the config file; "
            f"the default engine runs instead"
        )
