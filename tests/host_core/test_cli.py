"""The ``ctxengine`` CLI, run as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ctxengine_host.discovery.engines import ENGINE_GROUP

from .distfactory import engine_module, make_dist


@pytest.fixture
def cli(site, tmp_path):
    """Run ``ctxengine ARGS`` with the test site on PYTHONPATH, in a clean working dir."""
    workdir = tmp_path / "work"
    workdir.mkdir()

    def run(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None):
        full_env = {**os.environ, "PYTHONPATH": str(site), **(env or {})}
        return subprocess.run(
            [sys.executable, "-m", "ctxengine_host.cli", *args],
            capture_output=True,
            text=True,
            env=full_env,
            cwd=cwd or workdir,
            timeout=60,
        )

    run.workdir = workdir
    return run


def install(site, dist, engine, marker=None, source=None):
    module = "tpe_" + engine.replace("-", "_")
    make_dist(
        site,
        dist,
        "1.0",
        {ENGINE_GROUP: {engine: f"{module}:Engine"}},
        {f"{module}.py": source or engine_module("Engine", engine, marker=marker)},
    )


def test_version(cli):
    result = cli("--version")
    assert result.returncode == 0 and result.stdout.startswith("ctxengine-host 0.1.0")


def test_python_dash_m_runs_the_same_cli():
    import subprocess
    import sys

    import ctxengine_host

    result = subprocess.run(
        [sys.executable, "-m", "ctxengine_host", "--version"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"ctxengine-host {ctxengine_host.__version__}"


def test_no_command_prints_help_and_exits_2(cli):
    result = cli()
    assert result.returncode == 2 and "engines" in result.stderr and "doctor" in result.stderr


def test_engines_json_lists_without_importing(cli, site, tmp_path):
    marker = tmp_path / "imported"
    install(site, "tpe-listed", "listed", marker=marker)
    result = cli("engines", "--json", env={"CTXENGINE_ENGINE": "listed"})
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    rows = {row["name"]: row for row in report["engines"]}
    assert rows["listed"]["distribution"] == "tpe-listed" and rows["listed"]["selected"]
    assert not rows["legacy"]["selected"]
    assert report["slot"] == {"name": "listed", "source": "env", "configured": "listed"}
    assert not marker.exists()


def test_engines_text_and_check_show_broken_engine(cli, site, tmp_path):
    install(site, "tpe-fine", "fine")
    install(site, "tpe-bad", "bad", source="import does_not_exist_anywhere\n")
    result = cli("engines")
    assert result.returncode == 0 and "* legacy" in result.stdout and "tpe-bad" in result.stdout
    checked = cli("engines", "--check", "--json")
    assert checked.returncode == 1
    rows = {row["name"]: row for row in json.loads(checked.stdout)["engines"]}
    assert rows["fine"]["check"] == {"ok": True, "problems": []}
    assert rows["legacy"]["check"]["ok"] and rows["lcm"]["check"]["ok"]
    assert "does_not_exist_anywhere" in rows["bad"]["check"]["problems"][0]


def test_engines_shows_duplicate_claims(cli, site):
    install(site, "tpe-one", "twin")
    make_dist(site, "tpe-two", "1", {ENGINE_GROUP: {"twin": "tpe_twin_two:Engine"}})
    result = cli("engines")
    assert result.returncode == 0
    assert "also claimed by distribution 'tpe-two'" in result.stderr  # a warning


def test_doctor_ok_json(cli):
    result = cli("doctor", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] and report["slot"]["source"] == "default"
    assert report["engine"]["name"] == "legacy" and report["engine"]["info"]["name"] == "legacy"
    assert report["tokenizer"]["works_offline"] and report["tokenizer"]["sample_tokens"] > 0


def test_doctor_fails_when_configured_engine_is_not_installed(cli):
    config = cli.workdir / "ctxengine.toml"
    config.write_text('[context]\nengine = "lcn"\n')
    result = cli("doctor")
    assert result.returncode == 2  # bad input, as for every command and every source
    assert "unknown engine 'lcn'" in result.stderr and "Did you mean 'lcm'" in result.stderr
    assert "from config" in result.stdout and f"[context] engine in {config}" in result.stderr
    report = json.loads(cli("doctor", "--json").stdout)
    assert report["quarantine"]["count"] == 0  # a typo is not a fault to quarantine
    assert config.read_text() == '[context]\nengine = "lcn"\n'  # configured value kept


def test_doctor_duplicate_claim_names_both(cli, site):
    install(site, "tpe-one", "twin")
    make_dist(site, "tpe-two", "1", {ENGINE_GROUP: {"twin": "tpe_twin_two:Engine"}})
    result = cli("doctor", "--engine", "twin")
    assert result.returncode == 1
    assert "'tpe-one'" in result.stderr and "'tpe-two'" in result.stderr


def test_doctor_flag_wins_over_env(cli, site):
    install(site, "tpe-flagged", "flagged")
    report = json.loads(
        cli("doctor", "--engine", "flagged", "--json", env={"CTXENGINE_ENGINE": "lcm"}).stdout
    )
    assert report["slot"]["source"] == "flag" and report["engine"]["name"] == "flagged"


def test_use_writes_slot_preserving_comments(cli):
    config = cli.workdir / "ctxengine.toml"
    config.write_text(
        '# my settings\n[context]\nengine = "legacy"  # was default\n\n'
        '[summarizer]\n# keep\nbackend = "extractive"\n'
    )
    result = cli("use", "lcm")
    assert result.returncode == 0, result.stderr
    text = config.read_text()
    assert 'engine = "lcm"' in text and "# my settings" in text and "# keep" in text
    report = json.loads(cli("doctor", "--json").stdout)
    assert report["engine"]["name"] == "lcm" and report["slot"]["source"] == "config"


def test_use_creates_user_file_or_local(cli, tmp_path):
    result = cli("use", "lcm")
    assert result.returncode == 0, result.stderr
    user_file = Path(os.environ["XDG_CONFIG_HOME"]) / "ctxengine" / "config.toml"
    assert 'engine = "lcm"' in user_file.read_text()
    local = cli("use", "compressor", "--local")
    assert local.returncode == 0
    assert 'engine = "compressor"' in (cli.workdir / "ctxengine.toml").read_text()
    report = json.loads(cli("doctor", "--json").stdout)
    assert report["config"]["source"] == "local" and report["engine"]["name"] == "legacy"


def test_use_refuses_unknown_engine(cli):
    result = cli("use", "lcmm")
    assert result.returncode == 2
    assert "unknown engine 'lcmm'" in result.stderr and "Did you mean 'lcm'" in result.stderr
    assert "Available engines:" in result.stderr and "pip install ctxengine-lcmm" in result.stderr
    assert not (cli.workdir / "ctxengine.toml").exists()


def test_invalid_toml_is_bad_input_naming_the_file(cli):
    config = cli.workdir / "ctxengine.toml"
    config.write_text("[context\nengine = 1\n")
    for command in (["engines"], ["doctor"], ["config", "show"], ["use", "lcm"]):
        result = cli(*command)
        assert result.returncode == 2, command
        assert str(config) in result.stderr and "invalid TOML" in result.stderr


def test_wrong_type_names_file_key_and_type(cli):
    config = cli.workdir / "bad.toml"
    config.write_text('[context]\nreserve_output_tokens = "lots"\n')
    result = cli("--config", str(config), "doctor")
    assert result.returncode == 2
    assert "context.reserve_output_tokens" in result.stderr and "integer" in result.stderr
    config.write_text("[context]\nengine = 3\n")
    listed = cli("engines", "--config", str(config))
    doctor = cli("doctor", "--config", str(config))
    assert listed.returncode == doctor.returncode == 2 and listed.stderr == doctor.stderr
    assert "key 'context.engine': Input should be a valid string" in listed.stderr


def test_missing_config_file_from_flag(cli):
    result = cli("--config", "/nonexistent/ctx.toml", "engines")
    assert result.returncode == 2 and "does not exist" in result.stderr


def test_config_show_with_defaults(cli):
    (cli.workdir / "ctxengine.toml").write_text("[compression]\nhook_timeout_seconds = 3\n")
    report = json.loads(cli("config", "show", "--json").stdout)
    assert report["source"] == "local"
    assert report["config"]["compression"]["hook_timeout_seconds"] == 3
    assert report["config"]["context"]["reserve_output_tokens"] == 4096
    text = cli("config", "show")
    assert text.returncode == 0 and "reserve_output_tokens = 4096" in text.stdout


def test_engines_path_imports_no_heavy_library(cli):
    code = (
        "import sys; from ctxengine_host.cli import main; main(['engines', '--json']);"
        "heavy = [m for m in ('pydantic', 'tiktoken', 'pluggy') if m in sys.modules];"
        "print('HEAVY', heavy, file=sys.stderr)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=cli.workdir, timeout=60
    )
    assert "HEAVY []" in result.stderr, result.stderr


def test_doctor_unmet_host_requirements_fail_closed(cli, site):
    source = engine_module(
        "Engine",
        "needy",
        extra="""
        Engine.host_requirements = {"maintain": {"capabilities": ["gpu"], "message": "GPU only"}}
        """,
    )
    install(site, "tpe-needy", "needy", source=source)
    result = cli("doctor", "--json", "--engine", "needy")
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["host_requirements"]["ok"] is False and report["engine"] is None
    assert "gpu for 'maintain': GPU only" in report["host_requirements"]["problems"][0]


def test_engines_notes_a_disabled_selected_engine(cli):
    (cli.workdir / "ctxengine.toml").write_text(
        '[context]\nengine = "lcm"\n[engines.lcm]\nenabled = false\n'
    )
    result = cli("engines")
    assert result.returncode == 0 and "* lcm" in result.stdout
    assert "enabled = false" in result.stderr
    report = json.loads(cli("engines", "--json").stdout)
    assert report["selected_enabled"] is False and report["selected_found"] is True
    doctor = json.loads(cli("doctor", "--json").stdout)
    assert doctor["engine"]["name"] == "legacy" and doctor["slot"]["name"] == "lcm"
    assert doctor["ok"] and "enabled = false" in doctor["warnings"][0]
