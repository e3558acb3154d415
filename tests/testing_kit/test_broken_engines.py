"""Each deliberately broken engine makes the kit fail with a message naming its rule.

The kit runs in a real ``python -m pytest`` subprocess on a generated test file
(one ``ContextEngineContract`` subclass per engine), as an author's suite would;
the JUnit XML report says which kit test failed and with what message.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from ctxengine_host.testing import RULES, ContextEngineContract

from .broken_engines import BROKEN, ENTRY_POINTS

HERE = Path(__file__).parent
RULE_IN_MESSAGE = re.compile(r"\[contract: ([a-z-]+)\]")

#: Rules a broken engine may break besides its own, because its defect shows there too:
#: the duck-typed engine lacking should_compress does not keep last_total_tokens either;
#: an engine dropping tool results breaks the long tool loop too; an unstable selection
#: differs between the calls the system-prompt rule compares.
ALSO_BROKEN: dict[str, set[str]] = {
    "required-methods": {"update-from-response"},
    "compress-valid-sequence": {"compress-long-tool-loop"},
    "select-context-stable": {"select-context-head"},
}


def _class_name(rule: str) -> str:
    return "TestBroken_" + rule.replace("-", "_")


def _test_file() -> str:
    lines = [
        "import pytest",
        "from ctxengine_host.testing import ContextEngineContract",
        "import broken_engines",
        "",
        "class TestGood(ContextEngineContract):",
        "    @pytest.fixture",
        "    def engine(self, engine_context):",
        "        return broken_engines.GoodEngine(context=engine_context)",
        "",
    ]
    for rule, engine in BROKEN.items():
        lines += [f"class {_class_name(rule)}(ContextEngineContract):"]
        if rule == "entry-point-discovery":
            lines += ["    entry_point_name = 'kit-misnamed'"]
        lines += [
            "    @pytest.fixture",
            "    def engine(self, engine_context):",
            f"        return broken_engines.{engine.__name__}(context=engine_context)"
            if engine.__init__ is not object.__init__
            else f"        return broken_engines.{engine.__name__}()",
            "",
        ]
    return "\n".join(lines)


def _install_entry_points(site: Path) -> None:
    """A minimal installed distribution declaring the broken engines' entry points."""
    info = site / "kit_broken_engines-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: kit-broken-engines\nVersion: 0.1\n", encoding="utf-8"
    )
    body = "".join(f"{name} = {value}\n" for name, value in ENTRY_POINTS.items())
    (info / "entry_points.txt").write_text(f"[ctxengine.engines]\n{body}", encoding="utf-8")


@pytest.fixture(scope="module")
def kit_run(tmp_path_factory) -> dict[str, dict[str, str]]:
    """Run the kit on every engine once; {class: {test name: failure message or ''}}."""
    work = tmp_path_factory.mktemp("kit-run")
    shutil.copy(HERE / "broken_engines.py", work / "broken_engines.py")
    (work / "test_engines.py").write_text(_test_file(), encoding="utf-8")
    _install_entry_points(work / "site")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(work), str(work / "site")]),
        "CTXENGINE_DATA_DIR": str(work / "data"),
        "CTXENGINE_PLUGINS_DIR": str(work / "no-plugins"),
    }
    report = work / "report.xml"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(work),
            f"--junitxml={report}",
            "test_engines.py",
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert report.exists(), proc.stdout + proc.stderr
    outcomes: dict[str, dict[str, str]] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        cls = case.get("classname", "").rsplit(".", 1)[-1]
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        text = "" if problem is None else (problem.get("message", "") + "\n" + (problem.text or ""))
        outcomes.setdefault(cls, {})[case.get("name", "")] = text
    return outcomes


def test_every_rule_has_a_kit_test_and_a_broken_engine():
    tests = {name for name in dir(ContextEngineContract) if name.startswith("test_")}
    for rule in RULES:
        assert "test_" + rule.replace("-", "_") in tests, rule
    assert set(BROKEN) == set(RULES)
    authoring = (HERE.parents[1] / "docs" / "authoring.md").read_text()
    assert [rule for rule in RULES if f"| `{rule}` |" not in authoring] == []


def test_the_good_engine_passes_every_rule(kit_run):
    failures = {name: text for name, text in kit_run["TestGood"].items() if text}
    assert not failures, failures


@pytest.mark.parametrize("rule", list(BROKEN))
def test_broken_engine_fails_naming_its_rule(kit_run, rule):
    outcomes = kit_run[_class_name(rule)]
    own = outcomes["test_" + rule.replace("-", "_")]
    assert f"[contract: {rule}]" in own, f"{rule}: the kit's own test said: {own or 'passed'}"
    named = {m for text in outcomes.values() for m in RULE_IN_MESSAGE.findall(text)}
    unexpected = named - {rule} - ALSO_BROKEN.get(rule, set())
    assert not unexpected, f"{BROKEN[rule].__name__} also failed {sorted(unexpected)}"
