"""Fixtures of the reliability suite: the runtime tests' host factory, hypothesis profiles,
and a figures sink that ``benchmarks/reliability_report.py`` reads.

Profiles: ``ci`` (default, bounded and derandomized so CI is reproducible) and ``soak``
(``HYPOTHESIS_PROFILE=soak``: many more examples, random seeds).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# The runtime suite's fixtures, reused as they are (a host over a temp store, its timeouts
# the short HANG_TIMEOUT only where a test asks; quarantine forgotten and hung test engines
# released around each test).
from runtime.conftest import clean_process_state, make_host, store_path  # noqa: F401

settings.register_profile(
    "ci",
    max_examples=100,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    print_blob=True,
)
settings.register_profile(
    "soak",
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    print_blob=True,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

#: Where figures go when the report command runs the suite (unset: nowhere).
FIGURES_ENV = "CTXENGINE_RELIABILITY_FIGURES"


def record_figure(kind: str, **values: object) -> None:
    """Append one JSON line of figures for the report (no-op unless the report asked)."""
    target = os.environ.get(FIGURES_ENV)
    if not target:
        return
    with Path(target).open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"kind": kind, **values}) + "\n")


@pytest.fixture
def figures():
    return record_figure
