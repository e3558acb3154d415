"""Deterministic long coding-agent sessions with planted facts and probes.

``generate_session(turns, seed)`` draws everything from ``random.Random(seed)``:
the same arguments give the same bytes on every machine and Python version we
support. The output format is frozen at ``GENERATOR_VERSION``; engine work must
never tune it (change the version if the output ever has to change).
"""

from __future__ import annotations

import gzip
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..probes import Probe, probes_document
from ..sessionfile import FORMAT_VERSION, HEADER_KEY, message_text, probes_path_for
from . import filler
from .facts import Fact, draw_facts
from .single_loop import SINGLE_LOOP_VERSION, build_single_loop, default_single_loop_probes

GENERATOR_VERSION = "1"
#: Session shapes ``generate-session --shape`` writes, with the generator version of each.
SHAPES = {"multi-turn": GENERATOR_VERSION, "single-loop": SINGLE_LOOP_VERSION}
PROJECTS = ("harbor", "lumen", "quarry", "tessera", "meridian", "kestrel", "orchard", "basalt")

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {key: {"type": "string"} for key in params},
                "required": list(params[:1]),
            },
        },
    }
    for name, description, params in (
        ("read_file", "Read a file of the repository.", ("path",)),
        ("run_tests", "Run pytest on a path or node id.", ("target",)),
        ("grep", "Search the repository for a regular expression.", ("pattern", "path")),
        ("shell", "Run a shell command in the repository root.", ("command",)),
        ("edit_file", "Apply a unified diff to a file.", ("path", "patch")),
    )
]


@dataclass
class GeneratedSession:
    """A generated session: header, messages and the probes for its planted facts."""

    header: dict[str, Any]
    messages: list[dict[str, Any]]
    probes: list[Probe]


def session_header(**generator: Any) -> dict[str, Any]:
    """The header line of a generated session: format, tools, and how it was generated
    (``generator`` fields in the order given, after the generator's name)."""
    return {
        HEADER_KEY: {
            "format_version": FORMAT_VERSION,
            "tools": TOOLS,
            "generator": {"name": "ctxengine generate-session", **generator},
        }
    }


def default_probe_count(turns: int) -> int:
    """About one probe per 40 turns, at least 8, never more than a third of the turns."""
    return max(1, min(max(8, turns // 40), turns // 3, 50))


def generate_session(turns: int, seed: int, probes: int | None = None) -> GeneratedSession:
    """A coding-agent session of ``turns`` user turns with ``probes`` planted facts."""
    if turns < 1:
        raise ValueError("--turns must be at least 1")
    count = default_probe_count(turns) if probes is None else probes
    if count < 0 or count > turns:
        raise ValueError(f"--probes must be between 0 and the number of turns ({turns})")
    rng = random.Random(seed)
    builder = _Builder(rng, rng.choice(PROJECTS))
    facts = draw_facts(rng, count, filler.SUBSYSTEMS, builder.project)
    plants = _plant_schedule(rng, turns, facts)
    builder.system()
    for turn in range(1, turns + 1):
        builder.turn(turn, plants.get(turn, []))
    probe_list = builder.probes()
    _scrub(builder.messages, probe_list)
    header = session_header(
        generator_version=GENERATOR_VERSION, turns=turns, seed=seed, probes=len(probe_list)
    )
    return GeneratedSession(header, builder.messages, probe_list)


def generate_single_loop(steps: int, seed: int, probes: int | None = None) -> GeneratedSession:
    """One user task, then ``steps`` tool-call steps and a final answer (generator version 2)."""
    if steps < 1:
        raise ValueError("--steps must be at least 1")
    count = default_single_loop_probes(steps) if probes is None else probes
    if count < 0 or count > steps:
        raise ValueError(f"--probes must be between 0 and the number of steps ({steps})")
    rng = random.Random(seed)
    builder = _Builder(rng, rng.choice(PROJECTS))
    build_single_loop(builder, steps, count)
    probe_list = builder.probes()
    _scrub(builder.messages, probe_list)
    header = session_header(
        generator_version=SINGLE_LOOP_VERSION,
        shape="single-loop",
        steps=steps,
        seed=seed,
        probes=len(probe_list),
    )
    return GeneratedSession(header, builder.messages, probe_list)


def render_jsonl(session: GeneratedSession) -> bytes:
    """The session file's bytes: the header line, then one message per line."""
    lines = [json.dumps(session.header, ensure_ascii=False)]
    lines += [json.dumps(m, ensure_ascii=False) for m in session.messages]
    return ("\n".join(lines) + "\n").encode("utf-8")


def write_session(out: str | Path, session: GeneratedSession) -> tuple[Path, Path]:
    """Write the session (gzip when ``out`` ends in .gz, with a fixed mtime) and its probes."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    data = render_jsonl(session)
    if out.name.endswith(".gz"):
        with (
            out.open("wb") as raw,
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as gz,
        ):
            gz.write(data)
    else:
        out.write_bytes(data)
    probes_path = probes_path_for(out)
    document = probes_document(out.name, len(session.messages), session.probes)
    probes_path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    return out, probes_path


def _plant_schedule(
    rng: random.Random, turns: int, facts: list[Fact]
) -> dict[int, list[tuple[Fact, bool]]]:
    """Turn -> [(fact, is_old_statement)], facts spread evenly over the session."""
    plants: dict[int, list[tuple[Fact, bool]]] = {}
    span = max(1, int(turns * 0.97))
    for i, fact in enumerate(facts):
        turn = 1 + min(span - 1, int((i + rng.uniform(0.1, 0.9)) * span / len(facts)))
        plants.setdefault(turn, []).append((fact, False))
        if fact.old_statement and turn > 2:
            earlier = rng.randint(max(1, turn - 150), turn - 1)
            plants.setdefault(earlier, []).append((fact, True))
    return plants


class _Builder:
    """Appends the messages of one session, turn by turn."""

    def __init__(self, rng: random.Random, project: str) -> None:
        self.rng = rng
        self.project = project
        self.messages: list[dict[str, Any]] = []
        self.planted: list[tuple[Fact, int, int]] = []  # fact, message index, turn
        self.topic_left = 0
        self.subsystem = filler.SUBSYSTEMS[0]
        self.task = filler.TASKS[0]
        self.files: list[str] = []

    def system(self) -> None:
        self.messages.append(
            {
                "role": "system",
                "content": (
                    f"You are a coding agent working in the `{self.project}` repository, a "
                    "Python service monorepo. Use the tools to read files, search, run tests "
                    "and shell commands, and edit files with unified diffs. Keep changes "
                    "small and run the relevant tests after each edit. Report what you "
                    "changed and why in a few sentences. Never invent file contents: read "
                    "them first. Ask before deleting anything."
                ),
            }
        )

    def probes(self) -> list[Probe]:
        return [
            Probe(
                id=f"p{n:02d}",
                question=fact.question,
                answer=fact.answer,
                turn=turn,
                message_index=index,
                kind=fact.kind,
            )
            for n, (fact, index, turn) in enumerate(self.planted, start=1)
        ]

    def turn(self, number: int, plants: list[tuple[Fact, bool]]) -> None:
        rng = self.rng
        request = self._user_request()
        spoken = [(f, old) for f, old in plants if old or not f.in_tool_output]
        logged = [f for f, old in plants if not old and f.in_tool_output]
        notes = [(f.old_statement or "") if old else f.statement for f, old in spoken]
        text = "\n\n".join([*notes, request]) if notes else request
        self.messages.append({"role": "user", "content": text})
        for fact, old in spoken:
            if not old:
                self.planted.append((fact, len(self.messages) - 1, number))
        steps = rng.choice((0, 1, 1, 2, 2, 3, 4))
        for fact in logged:
            self._tool_step(number, log_fact=fact)
        for _ in range(steps):
            self._tool_step(number)
        self.messages.append({"role": "assistant", "content": self._wrap_up(bool(notes))})

    def _user_request(self) -> str:
        rng = self.rng
        if self.topic_left <= 0:
            self.topic_left = rng.randint(8, 40)
            self.subsystem = rng.choice(filler.SUBSYSTEMS)
            self.task = rng.choice(filler.TASKS)
            self.files = [filler.module_path(rng, self.project, self.subsystem) for _ in range(4)]
            return rng.choice(
                (
                    f"New topic. I'd like you to {self.task} {self.subsystem}. "
                    f"Start with {self.files[0]}.",
                    f"Switching gears: please {self.task} the {self.subsystem} package. "
                    f"{filler.sentence(rng)}",
                )
            )
        self.topic_left -= 1
        return rng.choice(
            (
                f"Next, look at {rng.choice(self.files)} and {rng.choice(filler.VERBS)} the "
                f"{rng.choice(filler.NOUNS)} handling.",
                f"The tests for {self.subsystem} still fail on my machine. {filler.sentence(rng)}",
                f"Can you check why {filler.ident(rng)} is slow? {filler.sentence(rng)}",
                f"Looks good. Now {rng.choice(filler.VERBS)} the {rng.choice(filler.ADJECTIVES)} "
                f"{rng.choice(filler.NOUNS)} path too.",
                f"Please add a test for {filler.ident(rng)}.",
                "Run the whole suite again and tell me what breaks.",
                f"Why does {filler.class_name(rng)} keep a {rng.choice(filler.NOUNS)} around?",
            )
        )

    def _tool_step(self, turn: int, log_fact: Fact | None = None) -> None:
        rng = self.rng
        calls = []
        outputs: list[tuple[dict[str, Any], Fact | None]] = []
        for _ in range(1 if log_fact or rng.random() < 0.75 else 2):
            name, args, output = self._tool_use(log_fact)
            call_id = f"call_{rng.getrandbits(96):024x}"
            calls.append(
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
            )
            outputs.append(({"role": "tool", "tool_call_id": call_id, "content": output}, log_fact))
            log_fact = None
        thought = rng.choice((None, None, filler.sentence(self.rng)))
        self.messages.append({"role": "assistant", "content": thought, "tool_calls": calls})
        for tool_message, fact in outputs:
            self.messages.append(tool_message)
            if fact is not None:
                self.planted.append((fact, len(self.messages) - 1, turn))

    def _tool_use(self, log_fact: Fact | None) -> tuple[str, dict[str, str], str]:
        rng = self.rng
        sub = self.subsystem
        if log_fact is not None:
            lines = filler.log_lines(rng, log_fact.subsystem, rng.randint(60, 300)).split("\n")
            lines.insert(rng.randint(len(lines) // 3, len(lines)), log_fact.statement)
            command = f"kubectl logs deploy/{log_fact.subsystem}-worker --since=2h"
            return "shell", {"command": command}, "\n".join(lines)
        kind = rng.choice(("read", "read", "tests", "grep", "shell", "edit"))
        big = rng.random() < 0.04
        if kind == "read":
            path = (
                rng.choice(self.files) if self.files else filler.module_path(rng, self.project, sub)
            )
            size = rng.randint(30, 45) if big else rng.randint(2, 9)
            return "read_file", {"path": path}, filler.source_file(rng, size)
        if kind == "tests":
            tests = rng.randint(400, 700) if big else rng.randint(10, 90)
            failures = rng.choice((0, 0, 1, 2, 3 if big else 1))
            return (
                "run_tests",
                {"target": f"tests/{sub}"},
                filler.test_run(rng, sub, tests, failures),
            )
        if kind == "grep":
            pattern = filler.ident(rng)
            return (
                "grep",
                {"pattern": pattern, "path": "src/"},
                filler.grep_hits(rng, self.project, sub, pattern, rng.randint(0, 25)),
            )
        if kind == "shell":
            command = rng.choice(
                (
                    "git log --oneline -20",
                    "ls src/" + sub,
                    "git diff",
                    f"tail -n 200 logs/{sub}.log",
                )
            )
            if big:
                return "shell", {"command": command}, filler.log_lines(rng, sub, 320)
            return (
                "shell",
                {"command": command},
                filler.shell_output(rng, command, self.project, sub),
            )
        path = rng.choice(self.files) if self.files else filler.module_path(rng, self.project, sub)
        return (
            "edit_file",
            {"path": path, "patch": filler.patch_text(rng)},
            f"Applied patch to {path}.",
        )

    def _wrap_up(self, acknowledged: bool) -> str:
        rng = self.rng
        parts = ["Noted, I'll keep that in mind."] if acknowledged else []
        parts += [filler.sentence(rng) for _ in range(rng.randint(1, 4))]
        parts.append(
            rng.choice(
                (
                    "Tests pass locally now.",
                    "One test still fails; details above.",
                    "I have not run the full suite yet.",
                    "Let me know if you want the same change elsewhere.",
                )
            )
        )
        return " ".join(parts)


def _scrub(messages: list[dict[str, Any]], probes: list[Probe]) -> None:
    """Make each answer appear only where it was planted, by altering chance collisions."""
    for probe in probes:
        for index, message in enumerate(messages):
            if index == probe.message_index or probe.answer not in message_text(message):
                continue
            altered = probe.answer[:-1] + ("x" if probe.answer[-1] != "x" else "y")
            if isinstance(message.get("content"), str):
                message["content"] = message["content"].replace(probe.answer, altered)
            for call in message.get("tool_calls") or ():
                fn = call["function"]
                fn["arguments"] = fn["arguments"].replace(probe.answer, altered)
