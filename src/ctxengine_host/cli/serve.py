"""``ctxengine serve``: the selected engine for the TypeScript gateway, over JSON-RPC.

stdio by default (the gateway plugin starts one server per gateway process);
``--socket PATH`` or ``--http PORT`` for several gateway processes sharing one
server. The protocol is in docs/bridge.md.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from . import EXIT_OK, CliError, add_command, common_options, configure_logging, examples

TOKEN_ENV = "CTXENGINE_BRIDGE_TOKEN"


def register(subparsers: Any) -> None:
    parser = add_command(
        subparsers,
        "serve",
        parents=[common_options(engine=True)],
        help="serve the selected engine to the TypeScript gateway (JSON-RPC 2.0)",
        description="Serve the selected engine over JSON-RPC 2.0 to the TypeScript gateway "
        "plugin: on stdio (the default), a unix socket or 127.0.0.1 HTTP. See docs/bridge.md.",
        epilog=examples(
            "ctxengine serve                      # stdio, as the gateway plugin starts it",
            "ctxengine serve --socket /run/ctxengine.sock --engine lcm",
            "CTXENGINE_BRIDGE_TOKEN=... ctxengine serve --http 8765",
        ),
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--socket", metavar="PATH", help="listen on a unix socket (mode 0600)")
    where.add_argument(
        "--http",
        metavar="[127.0.0.1:]PORT",
        type=_local_port,
        help=f"listen on 127.0.0.1:PORT; needs ${TOKEN_ENV}",
    )
    parser.add_argument("--model", help="model name (default: [context] model)")
    parser.add_argument(
        "--context-length", type=int, help="context window (default: [context] context_length)"
    )
    parser.add_argument("--store", metavar="PATH", help="transcript store (default: config)")
    parser.add_argument("--data-dir", metavar="DIR", help="engines' data directory")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="log calls to stderr (as ctxengine -vv)"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..gateway_bridge.sessions import BridgeSessions
    from ..gateway_bridge.transports import make_http_server, serve_stdio, serve_unix
    from ..runtime.host import ContextHost

    if args.verbose:
        configure_logging(2, False)
    token = os.environ.get(TOKEN_ENV, "")
    if args.http is not None and len(token) < 16:
        raise CliError(f"--http needs a token of at least 16 characters in ${TOKEN_ENV}")
    _refuse_unknown_engine(args)
    host = ContextHost.from_config(
        args.config,
        engine=args.engine,
        model=args.model,
        context_length=args.context_length,
        store_path=args.store,
        data_dir=args.data_dir,
    )
    sessions = BridgeSessions(host)
    try:
        if args.socket:
            serve_unix(sessions, Path(args.socket))
        elif args.http is not None:
            server = make_http_server(sessions, args.http, token)
            print(
                f"ctxengine serve: listening on http://127.0.0.1:{server.server_port}",
                file=sys.stderr,
                flush=True,
            )
            server.serve_forever()
        else:
            serve_stdio(sessions)
    except KeyboardInterrupt:
        pass
    finally:
        sessions.end_all("server-stopped")
        host.close()
    return EXIT_OK


def _local_port(value: str) -> int:
    """``PORT`` or ``127.0.0.1:PORT``: the bridge listens on 127.0.0.1 only."""
    host, _, port = value.rpartition(":")
    if host not in ("", "127.0.0.1") or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"expected PORT or 127.0.0.1:PORT, not {value!r}")
    return int(port)


def _refuse_unknown_engine(args: argparse.Namespace) -> None:
    """An unknown engine is bad input here as in every command (no silent fallback)."""
    from ..config import load_config
    from ..discovery.engines import list_engines
    from ..discovery.slot import UnknownEngineError, check_slot_known, choose_slot

    loaded = load_config(args.config)
    entries = list_engines(plugins_directory=loaded.config.plugins.directory)
    try:
        check_slot_known(choose_slot(args.engine, loaded), entries, loaded.path)
    except UnknownEngineError as exc:
        raise CliError(str(exc)) from None
