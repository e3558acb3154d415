"""The ``ctxengine`` command line: a thin layer over the library.

Each command lives in ``ctxengine_host/cli/<module>.py`` and exposes
``register(subparsers)``; :data:`COMMAND_MODULES` lists them (the command name is
the module name without a ``_cmd`` suffix, ``_`` read as ``-``). Only the module
of the command being run is imported, and command modules import heavy
libraries (pydantic, tiktoken, pluggy) inside their handlers, so that
``ctxengine engines`` starts fast whatever is installed.

Exit codes (the same for every command, documented in docs/discovery.md):

- 0: the command did what was asked and found nothing wrong;
- 1: it ran, but the outcome is a failure (``doctor`` found a problem, ``engines
  --check`` failed a check, a schema is behind, a store cannot be reached);
- 2: bad input, nothing was done: a usage error, an invalid or missing config file
  or value, an unknown engine (from ``--engine``, ``CTXENGINE_ENGINE`` or the config),
  an unreadable or invalid input file.

Results go to stdout; warnings, notes, progress and errors go to stderr, so that
``ctxengine ... --json | jq`` always reads clean JSON. ``-v``/``-q`` set the level
of the log records the library emits (on stderr).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence
from typing import Any

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
    "completion",
)

EXIT_OK, EXIT_FAILURE, EXIT_BAD_INPUT = 0, 1, 2

#: What each exit code means; the help text and the docs say the same.
EXIT_CODES_HELP = (
    "exit codes: 0 ok; 1 the command ran and found a failure; "
    "2 bad input (usage, config, unknown engine, unreadable file), nothing done"
)

_OPTIONS_WITH_VALUE = ("--config", "--engine")


class CliError(Exception):
    """A failure to report as ``ctxengine: error: ...`` with an exit code."""

    def __init__(self, message: str, code: int = EXIT_BAD_INPUT) -> None:
        super().__init__(message)
        self.code = code


def command_name(module: str) -> str:
    """The command a module implements: ``config_cmd`` -> ``config``."""
    return module.removesuffix("_cmd").replace("_", "-")


def common_options(*, engine: bool = False) -> argparse.ArgumentParser:
    """``--config`` (read by the commands that take these options), and ``--engine``
    for the commands that select an engine (``engine=True``): options only where they apply."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--config",
        metavar="PATH",
        default=argparse.SUPPRESS,
        help="config file to use (default: $CTXENGINE_CONFIG, ./ctxengine.toml, user config)",
    )
    if engine:
        common.add_argument(
            "--engine",
            metavar="NAME",
            default=argparse.SUPPRESS,
            help="select this engine (wins over $CTXENGINE_ENGINE and the config file)",
        )
    return common


def examples(*lines: str) -> str:
    """A command's ``--help`` epilog: example invocations, one per line."""
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)


def add_command(subparsers: Any, name: str, **kwargs: Any) -> argparse.ArgumentParser:
    """``subparsers.add_parser`` with the epilog kept as written (examples keep their lines)."""
    kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
    return subparsers.add_parser(name, **kwargs)


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
        description="Pluggable context engines for LLM agents: find, select, check and "
        "compare them, and replay recorded sessions through them.",
        epilog=examples(
            "ctxengine engines            # what is installed, which one is selected",
            "ctxengine doctor             # is the selected engine usable here",
            "ctxengine COMMAND --help     # each command's options and examples",
        )
        + "\n\n"
        + EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(config=None, engine=None, handler=None)
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    loudness = parser.add_mutually_exclusive_group()
    loudness.add_argument(
        "-v",
        "--verbose",
        dest="log_verbose",
        action="count",
        default=0,
        help="more log output on stderr (-v info, -vv debug)",
    )
    loudness.add_argument(
        "-q",
        "--quiet",
        dest="log_quiet",
        action="store_true",
        help="only errors on stderr (no warnings)",
    )
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    modules = [m for m in COMMAND_MODULES if command_name(m) == command] or COMMAND_MODULES
    for module in modules:
        importlib.import_module(f"{__name__}.{module}").register(subparsers)
    return parser


class _StderrFormatter(logging.Formatter):
    """``warning: message``; the CLI's own notes (logger ``ctxengine.cli``) carry their prefix."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        return text if record.name == CLI_LOGGER else f"{record.levelname.lower()}: {text}"


CLI_LOGGER = "ctxengine.cli"


def configure_logging(verbose: int, quiet: bool) -> None:
    """Log records of the ``ctxengine`` loggers on stderr, at the level ``-v``/``-q`` ask for."""
    level = logging.ERROR if quiet else (logging.WARNING, logging.INFO)[min(verbose, 1)]
    if verbose >= 2:
        level = logging.DEBUG
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_StderrFormatter())
    root = logging.getLogger("ctxengine")
    root.handlers[:] = [handler]
    root.setLevel(level)
    root.propagate = False


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
    configure_logging(args.log_verbose, args.log_quiet)
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
