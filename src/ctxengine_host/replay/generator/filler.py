"""The bulk of a generated session: source files, test runs, logs, grep hits, shell output.

Everything here is drawn from one ``random.Random`` so a seed fixes every byte.
Numbers in filler stay short (at most four digits, mostly fewer) so they rarely
look like the planted answers; the generator scrubs any collision afterwards.
"""

from __future__ import annotations

import random

SUBSYSTEMS = (
    "billing",
    "scheduler",
    "auth",
    "storage",
    "ingest",
    "reports",
    "notifications",
    "search",
    "cache",
    "gateway",
    "exports",
    "webhooks",
)
NOUNS = (
    "account", "invoice", "ledger", "batch", "cursor", "token", "session", "record", "queue",
    "window", "bucket", "shard", "tenant", "policy", "plan", "event", "payload", "snapshot",
    "segment", "index", "worker", "lease", "quota", "route", "handler", "schema", "row",
    "entry", "digest", "manifest", "job", "task", "retry", "limit", "stream", "buffer",
)  # fmt: skip
VERBS = (
    "load", "parse", "build", "apply", "merge", "flush", "resolve", "validate", "compute",
    "render", "fetch", "store", "encode", "decode", "collect", "prune", "sync", "refresh",
    "emit", "check", "normalize", "split", "schedule", "release", "acquire", "reconcile",
)  # fmt: skip
ADJECTIVES = (
    "pending", "stale", "active", "partial", "raw", "cached", "signed", "expired", "nested",
    "default", "remote", "local", "batched", "ordered", "sparse", "dirty", "frozen", "shared",
)  # fmt: skip
LEVELS = ("DEBUG", "INFO", "INFO", "INFO", "WARNING", "ERROR")
TASKS = (
    "fix the flaky test in",
    "add pagination to",
    "refactor the retry logic in",
    "track down the slowdown in",
    "clean up the error handling in",
    "add metrics to",
    "fix the off-by-one in",
    "write tests for",
    "migrate the config loading of",
    "fix the timezone bug in",
)


def ident(rng: random.Random) -> str:
    """A snake_case function name such as ``flush_stale_ledger``."""
    return f"{rng.choice(VERBS)}_{rng.choice(ADJECTIVES)}_{rng.choice(NOUNS)}"


def class_name(rng: random.Random) -> str:
    return (
        rng.choice(ADJECTIVES).title()
        + rng.choice(NOUNS).title()
        + rng.choice(("Manager", "Service", "Store", "Client", "Builder", "Policy"))
    )


def module_path(rng: random.Random, project: str, subsystem: str) -> str:
    return f"src/{project}/{subsystem}/{rng.choice(NOUNS)}_{rng.choice(('ops', 'core', 'io', 'models', 'api', 'utils'))}.py"  # noqa: E501


def test_path(rng: random.Random, subsystem: str) -> str:
    return f"tests/{subsystem}/test_{rng.choice(NOUNS)}_{rng.choice(VERBS)}.py"


def sentence(rng: random.Random) -> str:
    """A plausible engineering sentence for comments, commits and chat."""
    return rng.choice(
        (
            f"{rng.choice(VERBS).title()} the {rng.choice(ADJECTIVES)} {rng.choice(NOUNS)} "
            f"before we {rng.choice(VERBS)} the {rng.choice(NOUNS)}.",
            f"The {rng.choice(NOUNS)} {rng.choice(NOUNS)} is {rng.choice(ADJECTIVES)} when "
            f"the {rng.choice(NOUNS)} is {rng.choice(ADJECTIVES)}.",
            f"Only {rng.choice(VERBS)} {rng.choice(ADJECTIVES)} {rng.choice(NOUNS)}s here; "
            f"the rest go through {ident(rng)}.",
            f"Keep the {rng.choice(NOUNS)} {rng.choice(ADJECTIVES)} until {ident(rng)} returns.",
        )
    )


def source_file(rng: random.Random, functions: int) -> str:
    """A Python module with a class and ``functions`` functions."""
    lines = [f'"""{sentence(rng)}"""', "", "from __future__ import annotations", ""]
    lines += [f"import {m}" for m in rng.sample(("json", "time", "logging", "typing", "os"), 3)]
    lines += ["", "", f"class {class_name(rng)}:", f'    """{sentence(rng)}"""', ""]
    lines += [f"    {rng.choice(NOUNS)}_limit = {rng.randint(2, 99)}", ""]
    for _ in range(functions):
        name = ident(rng)
        args = ", ".join(rng.sample(NOUNS, rng.randint(1, 3)))
        lines.append(f"def {name}({args}):")
        lines.append(f'    """{sentence(rng)}"""')
        for _ in range(rng.randint(2, 9)):
            lines.append("    " + _statement(rng))
        lines.append(f"    return {rng.choice(NOUNS)}")
        lines.append("")
    return "\n".join(lines)


def _statement(rng: random.Random) -> str:
    a, b = rng.choice(NOUNS), rng.choice(NOUNS)
    return rng.choice(
        (
            f"{a} = {ident(rng)}({b})",
            f"if {a} is None:\n        raise ValueError('{a} is {rng.choice(ADJECTIVES)}')",
            f"for {a} in {b}s:\n        {ident(rng)}({a})",
            f"{a}.{rng.choice(VERBS)}({b}, limit={rng.randint(1, 64)})",
            f"# {sentence(rng)}",
            f"logger.{rng.choice(('debug', 'info', 'warning'))}('{rng.choice(VERBS)} %s', {a})",
        )
    )


def test_run(rng: random.Random, subsystem: str, tests: int, failures: int) -> str:
    """pytest-style output with ``failures`` failing tests and their tracebacks."""
    files = [test_path(rng, subsystem) for _ in range(max(1, tests // 12))]
    lines = ["============================= test session starts ============================="]
    lines.append(f"collected {tests} items")
    lines.append("")
    failed: list[tuple[str, str]] = []
    remaining = tests
    for i, path in enumerate(files):
        count = remaining if i == len(files) - 1 else min(remaining, rng.randint(4, 20))
        remaining -= count
        marks = ["."] * count
        for j in rng.sample(range(count), min(count, failures - len(failed))) if count else []:
            marks[j] = "F"
            failed.append((path, f"test_{ident(rng)}"))
        lines.append(f"{path} {''.join(marks)}")
        if remaining <= 0:
            break
    lines.append("")
    for path, test in failed:
        lines.append(f"_________________________________ {test} _________________________________")
        for _ in range(rng.randint(6, 16)):
            lines.append(f"    {_statement(rng).splitlines()[0]}")
        expected = rng.randint(0, 99)
        lines.append(f">       assert {rng.choice(NOUNS)}.{rng.choice(NOUNS)} == {expected}")
        lines.append(f"E       AssertionError: {sentence(rng)}")
        lines.append(f"{path}:{rng.randint(10, 400)}: AssertionError")
        lines.append("")
    passed = tests - len(failed)
    seconds = f"{rng.randint(1, 90)}.{rng.randint(10, 99)}"
    summary = f"{len(failed)} failed, {passed} passed" if failed else f"{passed} passed"
    lines.append(f"========================= {summary} in {seconds}s =========================")
    return "\n".join(lines)


def log_lines(rng: random.Random, subsystem: str, count: int) -> str:
    """Timestamped service log lines."""
    hour, minute, second = rng.randint(0, 23), rng.randint(0, 59), 0
    out = []
    for _ in range(count):
        second += rng.randint(0, 7)
        minute, second = minute + second // 60, second % 60
        hour, minute = (hour + minute // 60) % 24, minute % 60
        level = rng.choice(LEVELS)
        out.append(
            f"{hour:02d}:{minute:02d}:{second:02d} {level:<7} {subsystem}.{rng.choice(NOUNS)} "
            f"{ident(rng)} {rng.choice(NOUNS)}={rng.randint(0, 999)} {sentence(rng)}"
        )
    return "\n".join(out)


def grep_hits(rng: random.Random, project: str, subsystem: str, pattern: str, hits: int) -> str:
    out = []
    for _ in range(hits):
        path = module_path(rng, project, rng.choice((subsystem, rng.choice(SUBSYSTEMS))))
        out.append(f"{path}:{rng.randint(1, 400)}:    {pattern}({rng.choice(NOUNS)})")
    return "\n".join(out) if out else "(no matches)"


def shell_output(rng: random.Random, command: str, project: str, subsystem: str) -> str:
    if command.startswith("git log"):
        return "\n".join(
            f"{rng.getrandbits(28):07x} {rng.choice(VERBS)} {rng.choice(NOUNS)} {sentence(rng)}"
            for _ in range(rng.randint(5, 25))
        )
    if command.startswith("ls"):
        return "\n".join(
            f"{rng.choice(NOUNS)}_{rng.choice(('ops', 'core', 'io', 'models'))}.py"
            for _ in range(rng.randint(4, 18))
        )
    if command.startswith("git diff"):
        lines = [f"--- a/{module_path(rng, project, subsystem)}"]
        for _ in range(rng.randint(6, 30)):
            lines.append(rng.choice("+- ") + _statement(rng).splitlines()[0])
        return "\n".join(lines)
    return log_lines(rng, subsystem, rng.randint(8, 40))


def patch_text(rng: random.Random) -> str:
    """A small unified diff body for an edit tool call."""
    lines = ["@@"]
    for _ in range(rng.randint(3, 14)):
        lines.append(rng.choice("+- ") + _statement(rng).splitlines()[0])
    return "\n".join(lines)
