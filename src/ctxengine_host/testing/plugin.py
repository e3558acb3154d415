"""Opt-in pytest plugin for the contract kit: ``pytest -p ctxengine_host.testing.plugin``.

Options:

* ``--ctxengine-engine NAME``: run the whole kit on the installed engine NAME
  (built through its entry point, as the host builds it), no test file needed;
* ``--ctxengine-sessions N`` / ``--ctxengine-turns N``: scale the
  concurrent-sessions check up (or down) from the class's settings.

It is not registered through a ``pytest11`` entry point on purpose: installing
``ctxengine-host`` must not change anyone else's test runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

INSTALLED_MODULE = Path(__file__).with_name("installed.py")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ctxengine", "ctxengine contract kit")
    group.addoption(
        "--ctxengine-engine",
        metavar="NAME",
        help="run the contract kit on the installed engine NAME (entry point ctxengine.engines)",
    )
    group.addoption(
        "--ctxengine-sessions",
        metavar="N",
        type=int,
        help="sessions run at once by the concurrent-sessions check",
    )
    group.addoption(
        "--ctxengine-turns",
        metavar="N",
        type=int,
        help="turns per session in the concurrent-sessions check",
    )


def pytest_configure(config: pytest.Config) -> None:
    """With ``--ctxengine-engine``, collect the kit for that engine (alone, unless paths
    were given on the command line too)."""
    if not config.getoption("ctxengine_engine"):
        return
    if config.args_source is not pytest.Config.ArgsSource.ARGS:
        config.args[:] = [str(INSTALLED_MODULE)]
    elif str(INSTALLED_MODULE) not in config.args:
        config.args.append(str(INSTALLED_MODULE))
