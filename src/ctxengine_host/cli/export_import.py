"""``ctxengine export FILE`` / ``ctxengine import FILE``: move sessions between stores.

An archive is JSON lines: a header, then one line per session with its transcript
(every row with its uid, digest and origin; the live view; the session's fields)
and each engine's history (engines register an archiver under the entry point
group ``ctxengine.archivers``; LCM does). Export from SQLite and import into
PostgreSQL to move up (or back). Import never overwrites: a session the target
already has is skipped. Both commands end by counting what the target holds.
Nothing is written before every record is checked: its shape and what the stores could
not keep (:func:`_record_problem`), and each engine's history by its archiver's
``problem(data)`` (optional: what keeps the history from being imported, or None).
Row timestamps are set at import time; uids, digests, order and content are kept.
The header names the source store's ``store_id``; engines file an imported history
under the target store's id (an engine history follows its transcript, never the
source's identity, so a copy never shares history with its original).
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from ..limits import loads_json
from . import EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, CliError, add_command, common_options
from . import examples as example_lines

FORMAT = "ctxengine-archive"
VERSION = 1
ARCHIVER_GROUP = "ctxengine.archivers"


def register(subparsers: Any) -> None:
    for name, help_text in (
        ("export", "write sessions (transcripts and engine histories) to an archive file"),
        ("import", "load sessions from an archive file into the configured stores"),
    ):
        parser = add_command(
            subparsers,
            name,
            parents=[common_options()],
            help=help_text,
            description=help_text[0].upper() + help_text[1:] + "; " + _HELP_TAIL[name],
            epilog=example_lines(*_EXAMPLES[name]),
        )
        parser.add_argument("file", help="archive path (JSON lines)")
        parser.add_argument(
            "--store", metavar="LOCATION", help="transcript store: path or postgresql:// URL"
        )
        parser.add_argument(
            "--engine-db",
            action="append",
            default=[],
            metavar="NAME=LOCATION",
            help="an engine's database, e.g. lcm=postgresql://host/db (default: the config)",
        )
        parser.add_argument("--json", action="store_true", help="machine-readable summary")
        if name == "export":
            parser.add_argument(
                "--session", action="append", metavar="ID", help="only this session (repeatable)"
            )
        parser.set_defaults(handler=run_export if name == "export" else run_import)


_HELP_TAIL = {
    "export": "SQLite or PostgreSQL, all sessions or --session ID.",
    "import": "a session the target already has is skipped, never overwritten.",
}
_EXAMPLES = {
    "export": ("ctxengine export sessions.jsonl", "ctxengine export one.jsonl --session abc123"),
    "import": ("ctxengine import sessions.jsonl --store postgresql://127.0.0.1/agents",),
}


# Where things are.


def _store_location(args: argparse.Namespace) -> str:
    from ..config import load_config
    from ..stores.transcript import default_store_path

    if args.store:
        return args.store
    store = load_config(args.config).config.store
    return store.url or str(default_store_path(store.path))


def _archivers(args: argparse.Namespace) -> dict[str, Any]:
    """Engine name → archiver over its configured (or ``--engine-db``) database."""
    from ..config import load_config
    from ..paths import user_data_dir

    overrides: dict[str, str] = {}
    for item in args.engine_db:
        name, sep, location = item.partition("=")
        if not sep or not name or not location:
            raise CliError(f"--engine-db {item!r}: use NAME=LOCATION, e.g. lcm=/path/lcm.db")
        overrides[name] = location
    engines = load_config(args.config).config.engines
    out = {}
    for entry in entry_points(group=ARCHIVER_GROUP):
        block = dict(engines.get(entry.name) or {})
        if entry.name in overrides:
            block["database"] = overrides.pop(entry.name)
        out[entry.name] = entry.load()(block, user_data_dir() / "engines" / entry.name)
    if overrides:
        raise CliError(f"--engine-db: no installed engine archives {', '.join(overrides)}")
    return out


def _open_store(location: str, must_exist: bool) -> Any:
    from ..stores.backends import open_store
    from ..stores.pg import PgUnavailable, PgUrlError, SchemaBehindError, is_postgres_url

    if must_exist and not is_postgres_url(location):
        path = Path(location.removeprefix("sqlite:///")).expanduser()
        if not path.exists():
            raise CliError(f"no transcript store at {path}; pass --store", EXIT_BAD_INPUT)
    try:
        return open_store(location)
    except PgUrlError as exc:
        raise CliError(str(exc), EXIT_BAD_INPUT) from None
    except (PgUnavailable, SchemaBehindError) as exc:
        raise CliError(str(exc), EXIT_FAILURE) from None


# Progress.


class Progress:
    """A one-line bar on stderr when it is a terminal; silent otherwise."""

    def __init__(self, total: int, label: str) -> None:
        self.total, self.label, self.done = total, label, 0
        self.active = sys.stderr.isatty() and total > 0

    def step(self) -> None:
        self.done += 1
        if self.active:
            filled = int(30 * self.done / self.total)
            bar = "#" * filled + "." * (30 - filled)
            sys.stderr.write(f"\r{self.label} [{bar}] {self.done}/{self.total}")
            sys.stderr.flush()

    def close(self) -> None:
        if self.active:
            sys.stderr.write("\n")


# Export.


def export_session(store: Any, archivers: dict[str, Any], session_id: str) -> dict[str, Any]:
    row = store.get_session(session_id)
    rows = store.rows(session_id)
    index = {r.row_id: n for n, r in enumerate(rows)}
    engines = {}
    for name, archiver in archivers.items():
        data = archiver.export_session(session_id, store.store_id, store.holds_message)
        if data is not None:
            engines[name] = data
    return {
        "session_id": session_id,
        "session": {
            "parent_session_id": row.parent_session_id,
            "ended": row.ended_at is not None,
            "turn_index": row.turn_index,
            "system_prompt": row.system_prompt,
            "tools": row.tools,
        },
        "rows": [{"message": r.message, "digest": r.digest, "origin": r.origin} for r in rows],
        "live": [index[r.row_id] for r in store.live(session_id)],
        "bootstrapped": [n for n in _engine_names() if store.is_bootstrapped(n, session_id)],
        "engines": engines,
    }


def _engine_names() -> list[str]:
    return sorted({e.name for e in entry_points(group="ctxengine.engines")})


def run_export(args: argparse.Namespace) -> int:
    store = _open_store(_store_location(args), must_exist=True)
    archivers = {n: a for n, a in _archivers(args).items() if a.exists()}
    try:
        ids = args.session or store.session_ids()
        unknown = [s for s in ids if store.get_session(s) is None]
        if unknown:
            raise CliError(f"no such session(s) in {store.location}: {', '.join(unknown)}")
        progress = Progress(len(ids), "export")
        totals = _zero_totals()
        with open(args.file, "w", encoding="utf-8") as out:
            header = {
                "format": FORMAT,
                "version": VERSION,
                "sessions": len(ids),
                "store_id": store.store_id,
            }
            out.write(json.dumps(header) + "\n")
            for session_id in ids:
                record = export_session(store, archivers, session_id)
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
                _add(totals, _archive_counts(record, archivers))
                progress.step()
        progress.close()
    finally:
        store.close()
        for archiver in archivers.values():
            archiver.close()
    return _finish(args, "exported", totals, {"file": args.file, "source": store.location}, [])


# Import.


def import_session(store: Any, archivers: dict[str, Any], record: dict[str, Any]) -> bool:
    """Write one archived session; False (nothing written) when the target has it."""
    session_id = record["session_id"]
    if store.get_session(session_id) is not None:
        return False
    info = record["session"]
    store.open_session(
        session_id,
        parent_session_id=info["parent_session_id"],
        system_prompt=info["system_prompt"],
        tools=info["tools"],
    )
    rows = [(r["message"], r["digest"], r["origin"]) for r in record["rows"]]
    ids = store.insert_rows(session_id, rows) if rows else []
    store.replace_live(session_id, [ids[n] for n in record["live"]])
    for engine in record["bootstrapped"]:
        store.mark_bootstrapped(engine, session_id)
    for name, data in record["engines"].items():
        if name in archivers:
            archivers[name].import_session(session_id, data, store.store_id)
    store.update_session(session_id, turn_index=info["turn_index"], ended=True)
    if not info["ended"]:
        store.update_session(session_id, ended=False)
    return True


def _read_archive(path: str) -> list[dict[str, Any]]:
    try:
        with open(path, encoding="utf-8") as fh:
            lines = [loads_json(ln, what=f"line {n}") for n, ln in enumerate(fh, 1) if ln.strip()]
    except FileNotFoundError:
        raise CliError(f"no archive at {path}", EXIT_BAD_INPUT) from None
    except OSError as exc:
        raise CliError(f"cannot read the archive {path}: {exc}", EXIT_BAD_INPUT) from None
    except ValueError as exc:  # invalid JSON or UTF-8, nested past the limit
        raise CliError(f"{path} is not a ctxengine archive: {exc}", EXIT_BAD_INPUT) from None
    if not lines or not isinstance(lines[0], dict) or lines[0].get("format") != FORMAT:
        raise CliError(f"{path} is not a ctxengine archive (no header line)", EXIT_BAD_INPUT)
    for number, record in enumerate(lines[1:], start=2):
        problem = _record_problem(record)
        if problem is not None:
            raise CliError(
                f"{path}: session record {number - 1} {problem}; the archive is damaged, "
                "export it again",
                EXIT_BAD_INPUT,
            )
    if lines[0].get("version") != VERSION:
        raise CliError(f"{path}: archive version {lines[0].get('version')} is not {VERSION}")
    if len(lines) - 1 != lines[0].get("sessions"):
        raise CliError(
            f"{path}: the header announces {lines[0].get('sessions')} sessions but the file "
            f"has {len(lines) - 1}; it is truncated"
        )
    return lines[1:]


#: The keys of an archived session record and the type of each.
_RECORD_SHAPE: dict[str, type | tuple[type, ...]] = {
    "session_id": str, "session": dict, "rows": list, "live": list, "bootstrapped": list,
    "engines": dict,
}  # fmt: skip
_SESSION_SHAPE: dict[str, type | tuple[type, ...]] = {
    "parent_session_id": (str, type(None)), "system_prompt": (str, type(None)),
    "tools": (list, type(None)), "turn_index": int, "ended": bool,
}  # fmt: skip


def _record_problem(record: Any) -> str | None:
    """What is wrong with one archived session, or None: its shape, and what the stores
    could not keep (ids and texts, by the rules the live path applies on every backend),
    checked before anything is written, so a damaged archive never leaves half a session
    behind."""
    if not isinstance(record, dict):
        return f"is {type(record).__name__}, not an object"
    for key, kind in _RECORD_SHAPE.items():
        if not _is(record.get(key), kind):
            return f"has a missing or malformed '{key}'"
    for key, kind in _SESSION_SHAPE.items():
        if not _is(record["session"].get(key), kind):
            return f"has a missing or malformed 'session.{key}'"
    rows = record["rows"]
    for row in rows:
        if not (
            isinstance(row, dict) and isinstance(row.get("message"), dict)
            and isinstance(row.get("digest"), str) and isinstance(row.get("origin"), str)
        ):  # fmt: skip
            return "has a malformed row (message, digest, origin)"
    if not all(_is(n, int) and 0 <= n < len(rows) for n in record["live"]):
        return "has a live-view index outside its rows"
    if not all(isinstance(name, str) for name in record["bootstrapped"]):
        return "has a malformed 'bootstrapped' list"
    return _content_problem(record)


def _content_problem(record: dict[str, Any]) -> str | None:
    """What in a well-shaped record no store can keep as given, or None."""
    from ..contract.messages import uid_problem
    from ..runtime.host import session_id_problem, system_prompt_problem

    session = record["session"]
    for name in ("session_id", "parent_session_id"):
        value = record["session_id"] if name == "session_id" else session[name]
        if value is not None and (problem := session_id_problem(value)) is not None:
            return f"has a '{name}' no store takes: {problem}"
    if session["system_prompt"] and (problem := system_prompt_problem(session["system_prompt"])):
        return f"has a 'session.system_prompt' no store takes: {problem}"
    for number, row in enumerate(record["rows"], start=1):
        message = row["message"]
        for field in ("message_uid", "_tool_call_uid"):
            uid = message.get(field)
            if field in message and not isinstance(uid, str):
                return f"has row {number} whose {field} is not a string"
            if isinstance(uid, str) and (problem := uid_problem(uid)) is not None:
                return f"has row {number} whose {field} {problem}"
    if _unencodable(record["rows"]) or _unencodable(session["tools"]):
        return "holds half of a character (a lone UTF-16 surrogate) in a row or a tool"
    return None


def _unencodable(value: Any) -> bool:
    """Whether ``value``'s JSON text has no UTF-8 form (a lone surrogate in a text)."""
    try:
        json.dumps(value, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return True
    return False


def _check_engine_histories(
    path: str, records: list[dict[str, Any]], archivers: dict[str, Any]
) -> None:
    """Ask each archiver that can check a history (``problem(data)``: what keeps it from
    being imported, or None) about every record's, before anything is written."""
    for number, record in enumerate(records, start=1):
        for name, data in record["engines"].items():
            check = getattr(archivers.get(name), "problem", None)
            problem = check(data) if callable(check) else None
            if problem is not None:
                raise CliError(
                    f"{path}: session record {number}: its {name} history {problem}; the "
                    "archive is damaged, export it again",
                    EXIT_BAD_INPUT,
                )


def _is(value: Any, kind: type | tuple[type, ...]) -> bool:
    """``isinstance``, except that a boolean is not an integer."""
    return isinstance(value, kind) and (kind is bool or not isinstance(value, bool))


def run_import(args: argparse.Namespace) -> int:
    records = _read_archive(args.file)
    archivers = _archivers(args)
    _check_engine_histories(args.file, records, archivers)
    store = _open_store(_store_location(args), must_exist=False)
    problems: list[str] = []
    skipped: list[str] = []
    totals = _zero_totals()
    try:
        progress = Progress(len(records), "import")
        for record in records:
            if import_session(store, archivers, record):
                expected = _archive_counts(record, archivers)
                found = _target_counts(store, archivers, record["session_id"])
                if found != expected:
                    problems.append(
                        f"session {record['session_id']}: expected {expected}, found {found}"
                    )
                _add(totals, found)
            else:
                skipped.append(record["session_id"])
            progress.step()
        progress.close()
    finally:
        store.close()
        for archiver in archivers.values():
            archiver.close()
    _analyze([_store_location(args), *(a.location for a in archivers.values())])
    extra = {"file": args.file, "target": store.location, "skipped_existing": skipped}
    return _finish(args, "imported", totals, extra, problems)


def _analyze(locations: list[str]) -> None:
    """ANALYZE the PostgreSQL targets: search plans depend on statistics, and autovacuum
    would gather them only some time after a bulk load."""
    from ..stores.pg import connect, is_postgres_url, parse_url

    for url in dict.fromkeys(loc for loc in locations if is_postgres_url(loc)):
        with connect(parse_url(url), autocommit=True) as conn:
            tables = conn.execute(
                "SELECT format('%I.%I', schemaname, tablename) FROM pg_tables "
                "WHERE schemaname = current_schema()"
            ).fetchall()
            for (table,) in tables:
                conn.execute(f"ANALYZE {table}")


# Counting.


def _zero_totals() -> dict[str, int]:
    return {"sessions": 0, "rows": 0, "live": 0}


def _add(totals: dict[str, int], counts: dict[str, int]) -> None:
    for key, value in counts.items():
        totals[key] = totals.get(key, 0) + value


def _archive_counts(record: dict[str, Any], archivers: dict[str, Any]) -> dict[str, int]:
    counts = {"sessions": 1, "rows": len(record["rows"]), "live": len(record["live"])}
    for name, data in record["engines"].items():
        if name in archivers:
            for key, value in archivers[name].counts_in(data).items():
                counts[f"{name}_{key}"] = value
    return counts


def _target_counts(store: Any, archivers: dict[str, Any], session_id: str) -> dict[str, int]:
    counts = {
        "sessions": 1,
        "rows": store.count_rows(session_id),
        "live": len(store.live(session_id)),
    }
    for name, archiver in archivers.items():
        found = archiver.counts(session_id, store.store_id)
        if found["conversations"]:
            for key, value in found.items():
                counts[f"{name}_{key}"] = value
    return counts


def _finish(
    args: argparse.Namespace,
    verb: str,
    totals: dict[str, int],
    extra: dict[str, Any],
    problems: list[str],
) -> int:
    report = {"ok": not problems, verb: totals, **extra, "problems": problems}
    if args.json:
        from .output import emit_json

        emit_json(report)
    else:
        counts = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in totals.items())
        print(f"{verb}: {counts}")
        if extra.get("skipped_existing"):
            print(f"skipped (already in the target): {', '.join(extra['skipped_existing'])}")
        for problem in problems:
            print(f"problem: {problem}")
        print("verified" if not problems else "VERIFICATION FAILED")
    return EXIT_OK if not problems else EXIT_FAILURE
