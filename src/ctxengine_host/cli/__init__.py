"""The ``ctxengine`` command line: a thin layer over the library.

Each command lives in ``ctxengine_host/cli/<module>.py`` and exposes
``register(subparsers)``; :data:`COMMAND_MODULES` lists them (the command name is
the module name without a ``_cmd`` suffix, ``_`` read as ``-``). Only the module
of the command being run is imported, and command modules import heavy
libraries (pydantic, tiktoken, pluggy) inside their handlers, so that
``ctxengine engines`` starts fast whatever is installed.

Exit codes: 0 ok, 1 failure, 2 bad input.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

#: Command modules, in help order. Other commands: add the module name here.
COMMAND_MODULES: tuple[str, ...] = (
    "engines",
    "doctor",
    "use",
    "config_cmd",
    "validate",
    "convert",
    "generate_session",
    "replay",
    "compare",
    "new_engine",
    "migrate",
    "export_import",
    "hermes",
    "serve",
)

EXIT_OK, EXIT_FAILURE, EXIT_BAD_INPUT = 0, 1, 2

_OPTIONS_WITH_VALUE = ("--config", "--engine")


class CliError(Exception):
    """A failure to report as ``ctxengine: error: ...`` with an exit code."""

    def __init__(self, message: str, code: int = EXIT_BAD_INPUT) -> None:
        super().__init__(message)
        self.code = code


def command_name(module: str) -> str:
    """The command a module implements: ``config_cmd`` -> ``config``."""
    return module.removesuffix("_cmd").replace("_", "-")


def common_options() -> argparse.ArgumentParser:
    """Options every command accepts, before or after the command name."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--config",
        metavar="PATH",
        default=argparse.SUPPRESS,
        help="config file to use (default: $CTXENGINE_CONFIG, ./ctxengine.toml, user config)",
    )
    common.add_argument(
        "--engine",
        metavar="NAME",
        default=argparse.SUPPRESS,
        help="select this engine (wins over $CTXENGINE_ENGINE and the config file)",
    )
    return common


def _requested_command(argv: Sequence[str]) -> str | None:
    """The first positional argument (the command), skipping global options."""
    skip = False
    for token in argv:
        if skip:
            skip = False
        elif token in _OPTIONS_WITH_VALUE:
            skip = True
        elif not token.startswith("-"):
            return token
    return None


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``command`` known, only that command's module is imported."""
    parser = argparse.ArgumentParser(
        prog="ctxengine",
        parents=[common_options()],
        description="Pluggable context engines for LLM agents.",
    )
    parser.set_defaults(config=None, engine=None, handler=None)
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    modules = [m for m in COMMAND_MODULES if command_name(m) == command] or COMMAND_MODULES
    for module in modules:
        importlib.import_module(f"{__name__}.{module}").register(subparsers)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"ctxengine-host {version('ctxengine-host')}"
    except PackageNotFoundError:
        return "ctxengine-host (not installed as a distribution)"


def _bad_input_errors() -> tuple[type[BaseException], ...]:
    """Config errors of modules already imported (one never imported cannot have raised)."""
    found: list[type[BaseException]] = []
    for module, name in (
        ("ctxengine_host.config", "ConfigError"),
        ("ctxengine_host.configfile", "RawConfigError"),
    ):
        cls = getattr(sys.modules.get(module), name, None)
        if cls is not None:
            found.append(cls)
    return tuple(found)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_requested_command(args_list))
    args = parser.parse_args(args_list)
    if args.version:
        print(_version())
        return EXIT_OK
    if args.handler is None:
        parser.print_help(sys.stderr)
        return EXIT_BAD_INPUT
    try:
        return int(args.handler(args))
    except CliError as exc:
        print(f"ctxengine: error: {exc}", file=sys.stderr)
        return exc.code
    except BrokenPipeError:
        # The reader went away (`ctxengine engines | head`): not an error worth a traceback.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FAILURE
    except Exception as exc:
        if isinstance(exc, _bad_input_errors()):
            print(f"ctxengine: error: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
        raise
