"""The ``single-loop`` shape: one user task, then hundreds of tool calls (generator version 2).

The most common shape of coding agents (a SWE-bench style run): the user states
the task once and the agent works through a long loop of tool calls before one
final answer. Every planted fact sits in a tool output (a log or a notes file the
agent read), spread evenly over the loop, so probes ask about the old middle.
The multi-turn shape (version 1) is untouched: this module draws from its own
``random.Random(seed)`` and shares only the builder's tool steps.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from . import filler
from .facts import Fact, draw_facts

if TYPE_CHECKING:
    from . import _Builder

SINGLE_LOOP_VERSION = "2"


def default_single_loop_probes(steps: int) -> int:
    """About one probe per 25 steps, between 1 and 20."""
    return max(1, min(steps // 25, 20))


def build_single_loop(builder: _Builder, steps: int, probe_count: int) -> None:
    """Append the system prompt, the task, ``steps`` tool-call steps and the final answer."""
    rng = builder.rng
    builder.subsystem = rng.choice(filler.SUBSYSTEMS)
    builder.task = rng.choice(filler.TASKS)
    builder.files = [filler.module_path(rng, builder.project, builder.subsystem) for _ in range(6)]
    facts = draw_facts(rng, probe_count, filler.SUBSYSTEMS, builder.project)
    schedule = _schedule(rng, steps, facts)
    builder.system()
    builder.messages.append({"role": "user", "content": _task_text(rng, builder)})
    for step in range(steps):
        fact = schedule.get(step)
        builder._tool_step(1, log_fact=_as_logged(fact) if fact else None)
    builder.messages.append({"role": "assistant", "content": builder._wrap_up(False)})


def _schedule(rng: random.Random, steps: int, facts: list[Fact]) -> dict[int, Fact]:
    """Step -> the fact planted in that step's tool output, one per step, spread evenly."""
    plants: dict[int, Fact] = {}
    span = max(len(facts), int(steps * 0.95))
    for i, fact in enumerate(facts):
        step = min(span - 1, int((i + rng.uniform(0.1, 0.9)) * span / len(facts)))
        while step in plants:
            step += 1
        plants[step] = fact
    return plants


def _as_logged(fact: Fact) -> Fact:
    """A fact stated in a tool output (a single loop has no later user messages)."""
    return Fact(fact.kind, fact.subsystem, fact.answer, fact.statement, fact.question, None, True)


def _task_text(rng: random.Random, builder: _Builder) -> str:
    """An issue-style task: what is wrong, where to start, what done means."""
    sub, files = builder.subsystem, builder.files
    details = " ".join(filler.sentence(rng) for _ in range(rng.randint(4, 8)))
    return (
        f"Issue: please {builder.task} {sub}. {details}\n\n"
        f"Start with {files[0]} and {files[1]}; the failing tests live under tests/{sub}. "
        "Work until the whole test suite passes, keep the diff small, and finish with a "
        "short report of what you changed and why."
    )
