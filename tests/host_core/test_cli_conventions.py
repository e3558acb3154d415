"""The CLI's conventions, on real subprocesses: help texts, options where they apply,
stderr for warnings, -v/-q, completion, exit codes, strict config, unknown engines."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from ctxengine_host.cli import build_parser

from .test_cli import cli  # noqa: F401  (the fixture)

ROOT = Path(__file__).resolve().parents[2]
SESSION = ROOT / "examples" / "sessions" / "short-60.jsonl"
#: The commands that select an engine, and so the only ones offering --engine.
SELECTING = {"engines", "doctor", "config show", "replay", "serve"}


def command_paths() -> list[str]:
    """Every command and sub-action, ``config show`` included, read from the parser."""

    def walk(prefix: str, parser: argparse.ArgumentParser) -> list[str]:
        found = [prefix] if prefix else []
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found += walk(f"{prefix} {name}".strip(), sub)
        return found

    return walk("", build_parser())


def test_every_command_has_a_description_and_an_example(cli):  # noqa: F811
    for path in command_paths():
        result = cli(*path.split(), "--help")
        assert result.returncode == 0, (path, result.stderr)
        head, _, tail = result.stdout.partition("examples:")
        assert tail.strip().startswith("ctxengine"), f"`ctxengine {path} --help` has no example"
        description = head.split("\n\n")[1]  # after the usage block
        assert not description.lstrip().startswith(("positional", "options")), (
            f"`ctxengine {path} --help` has no description"
        )


def test_engine_is_offered_only_by_commands_that_select_one(cli):  # noqa: F811
    for path in command_paths():
        offered = "--engine NAME" in cli(*path.split(), "--help").stdout
        assert offered == (path in SELECTING), path
    ignored = cli("validate", str(SESSION), "--engine", "lcm")
    assert ignored.returncode == 2 and "unrecognized arguments: --engine" in ignored.stderr


def test_warnings_and_notes_go_to_stderr_and_quiet_silences_them(cli):  # noqa: F811
    result = cli("use", "legacy", env={"CTXENGINE_ENGINE": "lcm"})
    assert result.returncode == 0
    assert result.stdout.startswith("engine slot set to 'legacy'") and "note" not in result.stdout
    assert "note: CTXENGINE_ENGINE='lcm' is set and overrides" in result.stderr
    quiet = cli("-q", "use", "legacy", env={"CTXENGINE_ENGINE": "lcm"})
    assert quiet.returncode == 0 and quiet.stderr == ""


def test_library_log_records_follow_verbose_and_quiet(cli):  # noqa: F811
    (cli.workdir / "ctxengine.toml").write_text("[engines.lcm]\nenabled = false\n")
    args = ("replay", str(SESSION), "--engine", "lcm", "--json")
    loud = cli(*args)
    assert loud.returncode == 0 and "warning: engine 'lcm' not used" in loud.stderr
    json.loads(loud.stdout)  # stdout stays clean JSON
    assert "engine 'lcm' not used" not in cli("-q", *args).stderr
    both = cli("-v", "-q", "engines")
    assert both.returncode == 2 and "not allowed with argument" in both.stderr


def test_bash_completion_completes_commands_options_and_choices(cli, tmp_path):  # noqa: F811
    script = tmp_path / "ctxengine.bash"
    result = cli("completion", "bash")
    assert result.returncode == 0
    script.write_text(result.stdout)
    probe = (
        f"source {script}\n"
        't() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); COMPREPLY=(); '
        '_ctxengine; echo "${COMPREPLY[*]}"; }\n'
        "t ctxengine rep\nt ctxengine replay --js\nt ctxengine replay --per ''\n"
        "t ctxengine --config x.toml config s\nt ctxengine validate --eng\n"
        "t ctxengine completion ''\n"
    )
    lines = subprocess.run(
        ["bash", "-c", probe], capture_output=True, text=True, timeout=30, check=True
    ).stdout.splitlines()
    assert lines == ["replay", "--json", "auto turn call", "show", "", "bash zsh fish"]


def test_zsh_and_fish_completion_name_every_command(cli):  # noqa: F811
    top = [p for p in command_paths() if " " not in p]
    zsh = cli("completion", "zsh").stdout
    assert zsh.startswith("#compdef ctxengine") and "complete -o filenames -F _ctxengine" in zsh
    fish = cli("completion", "fish").stdout
    for name in top:
        assert f"-a {name} " in fish and f"'{name}'" in zsh
    assert "-l engine" in fish and cli("completion", "tcsh").returncode == 2


def test_exit_codes_are_documented_in_help_and_docs(cli):  # noqa: F811
    text = cli("--help").stdout
    assert "exit codes: 0 ok; 1 the command ran and found a failure; 2 bad input" in text
    docs = (ROOT / "docs" / "discovery.md").read_text()
    for line in ("| 0 |", "| 1 |", "| 2 |"):
        assert line in docs


@pytest.mark.parametrize("command", ["doctor", "engines", "config show"])
def test_a_string_for_enabled_is_a_config_error_naming_key_and_file(cli, command):  # noqa: F811
    config = cli.workdir / "ctxengine.toml"
    config.write_text('[engines.lcm]\nenabled = "false"\n')
    result = cli(*command.split())
    assert result.returncode == 2
    assert f"{config}: key 'engines.lcm.enabled': must be true or false" in result.stderr


def test_config_values_are_not_coerced_from_strings(cli):  # noqa: F811
    (cli.workdir / "ctxengine.toml").write_text(
        '[compression]\ncontext_timeout_seconds = "5"\nmodel_thresholds = {gpt-4 = 1}\n'
    )
    result = cli("doctor")
    assert result.returncode == 2
    assert "key 'compression.context_timeout_seconds'" in result.stderr
    assert "model_thresholds" not in result.stderr  # an integer is a valid float


@pytest.mark.parametrize("source", ["flag", "env", "config"])
def test_an_unknown_engine_is_the_same_bad_input_from_any_source(cli, source):  # noqa: F811
    config = cli.workdir / "ctxengine.toml"
    flag: tuple[str, ...] = ()
    env = {}
    if source == "flag":
        flag, origin = ("--engine", "lcn"), "the explicit engine choice (--engine"
    elif source == "env":
        env, origin = {"CTXENGINE_ENGINE": "lcn"}, "the environment variable CTXENGINE_ENGINE"
    else:
        config.write_text('[context]\nengine = "lcn"\n')
        origin = f"[context] engine in {config}"
    messages = set()
    for command in (("replay", str(SESSION)), ("doctor",), ("engines",), ("serve",)):
        result = cli(*command, *flag, env=env)
        assert result.returncode == 2, (command, result.stdout, result.stderr)
        [error] = [line for line in result.stderr.splitlines() if "ctxengine: error:" in line]
        assert "unknown engine 'lcn'. Did you mean 'lcm'?" in error and origin in error
        assert "to fix:" in error and "fallback" not in result.stdout
        messages.add(error)
    assert len(messages) == 1  # one message, whichever command
    report = json.loads(cli("doctor", "--json").stdout)
    assert report["quarantine"]["count"] == 0  # a typo leaves no quarantine record


def test_doctor_shows_the_real_paths_it_uses(cli, tmp_path):  # noqa: F811
    data = tmp_path / "data-here"
    config = cli.workdir / "ctxengine.toml"
    config.write_text(f'[store]\npath = "{tmp_path / "t.db"}"\n')
    result = cli("doctor", "--json", env={"CTXENGINE_DATA_DIR": str(data)})
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    paths = report["paths"]
    assert paths == {
        "config_file": str(config),
        "data_dir": str(data),
        "transcript_store": str(tmp_path / "t.db"),
        "quarantine": report["quarantine"]["path"],  # the file doctor read
        "plugins_dir": paths["plugins_dir"],
    }
    assert Path(paths["quarantine"]).is_absolute() and Path(paths["plugins_dir"]).is_absolute()
    text = cli("doctor", env={"CTXENGINE_DATA_DIR": str(data)}).stdout
    assert f"store:      sqlite {tmp_path / 't.db'}" in text
    assert f"lcm store:  sqlite {data / 'engines' / 'lcm' / 'lcm.db'}" in text
    assert "(default path)" not in text and f"data dir:   {data}" in text


def test_doctor_says_nothing_about_an_engine_that_is_not_installed():
    from ctxengine_host.cli.migrate import storage_lines, storage_report

    report = storage_report(None, installed={"legacy"})
    assert "lcm" not in report
    assert [line.split()[0] for line in storage_lines(report)] == ["store:"]


def test_python_dash_m_ctxengine_host_offers_completion():
    result = subprocess.run(
        [sys.executable, "-m", "ctxengine_host", "completion", "bash"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0 and "complete -o filenames -F _ctxengine ctxengine" in (
        result.stdout
    )
