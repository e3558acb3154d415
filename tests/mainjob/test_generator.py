"""``ctxengine generate-session``: determinism, the frozen samples, facts and probes."""

from __future__ import annotations

import json
import re
from functools import cache

from ctxengine_host.replay.generator import (
    GENERATOR_VERSION,
    generate_session,
    generate_single_loop,
    render_jsonl,
)
from ctxengine_host.replay.generator.filler import SUBSYSTEMS
from ctxengine_host.replay.sessionfile import message_text, parse_session, read_text

from .conftest import LONG, SESSIONS, SHORT, run_cli


@cache
def long_session():
    """The committed long sample's arguments, generated once per test run."""
    return generate_session(2000, 2000, 50)


def test_same_seed_gives_identical_bytes_through_the_cli(tmp_path) -> None:
    outputs = []
    for name in ("a", "b"):
        out = tmp_path / name / "s.jsonl.gz"
        result = run_cli("generate-session", str(out), "--turns", "40", "--seed", "5")
        assert result.returncode == 0, result.stderr
        outputs.append((out.read_bytes(), (out.parent / "s.probes.json").read_bytes()))
    assert outputs[0] == outputs[1]
    other = generate_session(40, 6)
    assert render_jsonl(other) != render_jsonl(generate_session(40, 5))


def test_committed_samples_are_the_generators_output() -> None:
    """The format is frozen: regenerating the samples must give the committed bytes."""
    short = generate_session(60, 11, 10)
    assert render_jsonl(short) == SHORT.read_bytes()
    assert read_text(LONG).encode() == render_jsonl(long_session())
    header = json.loads(SHORT.read_text().splitlines()[0])["ctxengine_session"]
    assert header["generator"]["generator_version"] == GENERATOR_VERSION


def test_sessions_look_like_coding_agent_work() -> None:
    session = generate_session(300, 3)
    parsed = parse_session(render_jsonl(session).decode())
    assert parsed.errors == []
    tools = {c["function"]["name"] for m in session.messages for c in m.get("tool_calls") or ()}
    assert {"read_file", "run_tests", "grep", "shell", "edit_file"} <= tools
    biggest = max(len(message_text(m)) for m in session.messages if m["role"] == "tool")
    assert biggest > 10_000, "some tool outputs reach tens of KB"
    topics = [m for m in session.messages if m["role"] == "user" and "New topic" in m["content"]]
    switches = [m for m in session.messages if m["role"] == "user" and "Switching" in m["content"]]
    assert len(topics) + len(switches) >= 5


def test_probes_never_give_the_answer_away() -> None:
    session = long_session()
    kinds = {p.kind for p in session.probes}
    assert len(kinds) >= 8
    texts = [message_text(m) for m in session.messages]
    for probe in session.probes:
        assert probe.answer.lower() not in probe.question.lower()
        holders = [i for i, t in enumerate(texts) if probe.answer in t]
        assert holders == [probe.message_index], probe
        fact = texts[probe.message_index]
        # The subject (the subsystem) is the one natural overlap, e.g. in a path or a URL.
        shared = _distinctive(probe.question) & _distinctive(probe.answer) - set(SUBSYSTEMS)
        assert not shared, (probe.question, probe.answer)
        assert fact.count(probe.answer) >= 1


def _distinctive(text: str) -> set[str]:
    return {w for w in re.findall(r"[A-Za-z0-9]{4,}", text.lower())}


def test_bad_generator_arguments_exit_2(tmp_path) -> None:
    bad_name = run_cli("generate-session", str(tmp_path / "x.txt"), "--turns", "5")
    assert bad_name.returncode == 2 and ".jsonl" in bad_name.stderr
    zero = run_cli("generate-session", str(tmp_path / "x.jsonl"), "--turns", "0")
    assert zero.returncode == 2 and "--turns" in zero.stderr
    too_many = run_cli(
        "generate-session", str(tmp_path / "y.jsonl"), "--turns", "5", "--probes", "9"
    )
    assert too_many.returncode == 2 and "--probes" in too_many.stderr


def test_samples_directory_holds_both_sizes() -> None:
    assert SHORT.stat().st_size < 1_000_000
    assert LONG.stat().st_size < 3_000_000
    assert (SESSIONS / "long-2000.probes.json").is_file()


SINGLE_LOOP = SESSIONS / "single-loop-120.jsonl.gz"


def test_single_loop_is_one_task_then_a_long_tool_loop() -> None:
    session = generate_single_loop(200, 9)
    roles = [m["role"] for m in session.messages]
    assert roles[:2] == ["system", "user"] and roles.count("user") == 1
    assert roles[-1] == "assistant" and "tool_calls" not in session.messages[-1]
    steps = [m for m in session.messages if m.get("tool_calls")]
    assert len(steps) == 200
    assert any(len(m["tool_calls"]) > 1 for m in steps), "some steps call tools in parallel"
    assert parse_session(render_jsonl(session).decode()).errors == []
    texts = [message_text(m) for m in session.messages]
    assert len(session.probes) == 8
    for probe in session.probes:
        assert session.messages[probe.message_index]["role"] == "tool"
        assert [i for i, t in enumerate(texts) if probe.answer in t] == [probe.message_index]
    header = session.header["ctxengine_session"]["generator"]
    assert header["generator_version"] == "2" != GENERATOR_VERSION
    assert header["shape"] == "single-loop" and header["steps"] == 200


def test_the_committed_single_loop_sample_is_the_generators_output() -> None:
    assert read_text(SINGLE_LOOP).encode() == render_jsonl(generate_single_loop(120, 120))


def test_single_loop_through_the_cli_and_its_argument_errors(tmp_path) -> None:
    out = tmp_path / "loop.jsonl"
    ok = run_cli("generate-session", str(out), "--shape", "single-loop", "--steps", "30")
    assert ok.returncode == 0, ok.stderr
    assert out.read_bytes() == render_jsonl(generate_single_loop(30, 0))
    missing = run_cli("generate-session", str(out), "--shape", "single-loop")
    assert missing.returncode == 2 and "needs --steps" in missing.stderr
    mixed = run_cli("generate-session", str(out), "--turns", "5", "--steps", "5")
    assert mixed.returncode == 2 and "--steps does not apply" in mixed.stderr
