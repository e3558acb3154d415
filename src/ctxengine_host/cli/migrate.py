"""``ctxengine migrate [--url URL] [--check] [--json]``: bring PostgreSQL schemas up to date.

Without ``--url`` it migrates every PostgreSQL URL the config names (``[store] url``,
``[engines.lcm] database``). Each component (transcripts, quarantine, and every
installed engine that registers a schema) has a version; steps run once, in order,
each component in one transaction, serialized across workers by an advisory lock.
``--check`` changes nothing and exits 1 when a schema is behind.
"""

from __future__ import annotations

import argparse
from typing import Any

from . import (
    EXIT_BAD_INPUT,
    EXIT_FAILURE,
    EXIT_OK,
    CliError,
    add_command,
    common_options,
    examples,
)


def register(subparsers: Any) -> None:
    parser = add_command(
        subparsers,
        "migrate",
        parents=[common_options()],
        help="create or upgrade the PostgreSQL tables ([store] url, [engines.lcm] database)",
        description="Bring every PostgreSQL schema the config names (or --url) up to date; "
        "steps run once, in order, under an advisory lock. --check changes nothing and "
        "exits 1 when a schema is behind.",
        epilog=examples(
            "ctxengine migrate",
            "ctxengine migrate --url postgresql://127.0.0.1/agents --check",
        ),
    )
    parser.add_argument(
        "--url", action="append", metavar="URL", help="postgresql:// URL (repeatable)"
    )
    parser.add_argument("--check", action="store_true", help="report only; exit 1 if behind")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(handler=run)


def configured_urls(config_path: str | None) -> list[str]:
    """The PostgreSQL URLs of the config in use, without duplicates."""
    from ..config import load_config
    from ..stores.pg import is_postgres_url

    cfg = load_config(config_path).config
    candidates = [cfg.store.url, (cfg.engines.get("lcm") or {}).get("database")]
    return list(dict.fromkeys(str(u) for u in candidates if is_postgres_url(u)))


def run(args: argparse.Namespace) -> int:
    try:
        from ..stores import pg
    except ImportError as exc:  # pragma: no cover - pg itself has no hard imports
        raise CliError(str(exc)) from None
    urls = args.url or configured_urls(args.config)
    if not urls:
        raise CliError(
            "no PostgreSQL URL to migrate: pass --url postgresql://HOST/DATABASE or set "
            "[store] url / [engines.lcm] database in the config",
            EXIT_BAD_INPUT,
        )
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise CliError(
            "psycopg is not installed: pip install 'ctxengine-host[postgres]'", EXIT_FAILURE
        ) from None
    report: dict[str, Any] = {"ok": True, "databases": []}
    for url in urls:
        try:
            target = pg.parse_url(url)
            if not args.check:
                pg.migrate(target)
            state = pg.describe(url)
        except pg.PgUrlError as exc:
            raise CliError(str(exc), EXIT_BAD_INPUT) from None
        except (pg.PgUnavailable, pg.SchemaBehindError) as exc:
            raise CliError(str(exc), EXIT_FAILURE) from None
        behind = [c for c, s in state["schema"].items() if not s["current"]]
        report["ok"] = report["ok"] and not behind
        report["databases"].append({**state, "behind": behind})
    if args.json:
        from .output import emit_json

        emit_json(report)
    else:
        for db in report["databases"]:
            print(f"{db['url']} (PostgreSQL {db['server_version']})")
            for component, s in db["schema"].items():
                mark = "ok" if s["current"] else "BEHIND"
                print(f"  {component:<12} version {s['applied']}/{s['latest']}  {mark}")
        if not report["ok"]:
            from .output import note

            note("run `ctxengine migrate` (without --check) to apply the missing steps")
    return EXIT_OK if report["ok"] else EXIT_FAILURE


# For `ctxengine doctor`: which backend each store uses, and for PostgreSQL the server
# version and migration state.


def storage_report(config_path: str | None, installed: set[str]) -> dict[str, Any]:
    """``{"transcripts": {...}, "lcm": {...}, "problems": [...]}`` for doctor.

    Real locations, never placeholders; an engine's store only when the engine is
    ``installed`` (doctor says nothing about engines that are not).
    """
    from ..config import load_config
    from ..paths import user_data_dir
    from ..stores.pg import is_postgres_url
    from ..stores.transcript import default_store_path

    cfg = load_config(config_path).config
    wanted = {"transcripts": cfg.store.url or str(default_store_path(cfg.store.path))}
    if "lcm" in installed:
        lcm_default = user_data_dir() / "engines" / "lcm" / "lcm.db"
        wanted["lcm"] = (cfg.engines.get("lcm") or {}).get("database") or str(lcm_default)
    report: dict[str, Any] = {"problems": []}
    described: dict[str, dict[str, Any]] = {}
    for store, location in wanted.items():
        if not is_postgres_url(location):
            report[store] = {"backend": "sqlite", "location": location}
            continue
        if location not in described:
            described[location] = _describe_server(location)
        info = described[location]
        report[store] = {"backend": "postgresql", **info}
        if info.get("error"):
            report["problems"].append(f"{store} store: {info['error']}")
        elif info["behind"]:
            report["problems"].append(
                f"{store} store {info['url']}: schema behind ({', '.join(info['behind'])}); "
                "run `ctxengine migrate`"
            )
    return report


def _describe_server(url: str) -> dict[str, Any]:
    try:
        from ..stores import pg

        state = pg.describe(url)
    except ImportError:
        return {"url": url, "error": "psycopg is missing: pip install 'ctxengine-host[postgres]'"}
    except Exception as exc:  # bad URL, server down: doctor reports, never crashes
        return {"url": url, "error": str(exc)}
    behind = [c for c, s in state["schema"].items() if not s["current"]]
    return {**state, "behind": behind}


def doctor_quarantine_log(config_path: str | None) -> Any:
    """The quarantine log the host would use (the database's when it is reachable)."""
    from ..config import load_config
    from ..stores.pg_quarantine import quarantine_log_for
    from ..stores.quarantine import QuarantineLog

    try:
        return quarantine_log_for(load_config(config_path).config.store.url)
    except Exception:  # unreachable or behind: storage_report says why
        return QuarantineLog()


def storage_lines(storage: dict[str, Any]) -> list[str]:
    """Doctor's text lines for :func:`storage_report`."""
    lines = []
    for store, label in (("transcripts", "store:"), ("lcm", "lcm store:")):
        info = storage.get(store)
        if info is None:  # the engine is not installed
            continue
        if info["backend"] == "sqlite":
            lines.append(f"{label:<12}sqlite {info['location']}")
        elif info.get("error"):
            lines.append(f"{label:<12}postgresql {info['url']}: UNAVAILABLE")
        else:
            versions = ", ".join(
                f"{c} {s['applied']}/{s['latest']}" for c, s in info["schema"].items()
            )
            lines.append(
                f"{label:<12}postgresql {info['url']} (server {info['server_version']}); "
                f"schema {versions}"
            )
    return lines
