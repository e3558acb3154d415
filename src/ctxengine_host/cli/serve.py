"""``ctxengine serve``: the selected engine for the TypeScript gateway, over JSON-RPC.

stdio by default (the gateway plugin starts one server per gateway process);
``--socket PATH`` or ``--http PORT`` for several gateway processes sharing one
server. The protocol is in docs/bridge.md.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import Any

from . import EXIT_OK, CliError, common_options

TOKEN_ENV = "CTXENGINE_BRIDGE_TOKEN"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "serve",
        parents=[common_options()],
        help="serve the selected engine to the TypeScript gateway (JSON-RPC 2.0)",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--socket", metavar="PATH", help="listen on a unix socket (mode 0600)")
    where.add_argument(
        "--http", metavar="PORT", type=int, help=f"listen on 127.0.0.1:PORT; needs ${TOKEN_ENV}"
    )
    parser.add_argument("--model", help="model name (default: [context] model)")
    parser.add_argument(
        "--context-length", type=int, help="context window (default: [context] context_length)"
    )
    parser.add_argument("--store", metavar="PATH", help="transcript store (default: config)")
    parser.add_argument("--data-dir", metavar="DIR", help="engines' data directory")
    parser.add_argument("-v", "--verbose", action="store_true", help="log calls to stderr")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..gateway_bridge.sessions import BridgeSessions
    from ..gateway_bridge.transports import make_http_server, serve_stdio, serve_unix
    from ..host import ContextHost

    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="ctxengine serve: %(levelname)s %(name)s: %(message)s",
    )
    token = os.environ.get(TOKEN_ENV, "")
    if args.http is not None and len(token) < 16:
        raise CliError(f"--http needs a token of at least 16 characters in ${TOKEN_ENV}")
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
