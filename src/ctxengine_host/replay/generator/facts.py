"""Planted facts and the probe questions that ask for them.

Each kind has several ways to state the fact and a question worded differently:
the question shares only the natural subject (the subsystem and the thing asked
about) with the fact, never the answer. Some facts are revised once: an earlier
message states an old value and the probe asks for the current one.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable
from dataclasses import dataclass

FIRST_NAMES = (
    "Marisol", "Tobias", "Ingrid", "Kwame", "Yuki", "Anouk", "Dmitri", "Leilani", "Oskar",
    "Priyanka", "Soren", "Nadia", "Emeka", "Hollis", "Zofia", "Rafael", "Thandiwe", "Casimir",
)  # fmt: skip
LAST_NAMES = (
    "Okafor", "Lindqvist", "Haddad", "Brannigan", "Nakashima", "Verhoeven", "Castellanos",
    "Adeyemi", "Kowalczyk", "Thorsen", "Albescu", "Mbeki", "Fairweather", "Quintero",
)  # fmt: skip
QUEUES = ("RabbitMQ", "NATS JetStream", "Redis Streams", "Amazon SQS", "Kafka", "Beanstalkd")
STORES = ("DuckDB", "ClickHouse", "TimescaleDB", "SQLite", "Cassandra", "CockroachDB")
LIBRARIES = ("msgspec", "orjson", "httpx", "sqlalchemy", "pyarrow", "protobuf", "cryptography")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December")  # fmt: skip
SLUG_WORDS = ("failover", "rollback", "drain", "rotate", "restore", "cutover", "reindex")


@dataclass(frozen=True)
class Fact:
    """A fact to plant: its text, the probe question, and an optional superseded version."""

    kind: str
    subsystem: str
    answer: str
    statement: str
    question: str
    old_statement: str | None = None
    in_tool_output: bool = False


def _port(rng: random.Random, sub: str, project: str) -> Fact:
    port, old = str(rng.randint(41000, 48999)), str(rng.randint(41000, 48999))
    statement = rng.choice(
        (
            f"Heads-up from ops: the {sub} metrics exporter was rebound, it now answers on "
            f":{port} in staging. Update any scrape config you touch.",
            f"For the record, staging's {sub} metrics exporter sits on {port} after "
            "yesterday's network change.",
        )
    )
    question = rng.choice(
        (
            f"Which port does the staging metrics exporter for {sub} listen on now?",
            f"If I want to scrape {sub} metrics in staging, what port do I hit?",
        )
    )
    old_statement = (
        f"The {sub} metrics exporter in staging is on {old} for now; ops may move it."
        if rng.random() < 0.3 and old != port
        else None
    )
    return Fact("port", sub, port, statement, question, old_statement)


def _config(rng: random.Random, sub: str, project: str) -> Fact:
    value, old = str(rng.randint(1100, 9899)), str(rng.randint(1100, 9899))
    key = f"{sub.upper()}_LEASE_TIMEOUT_MS"
    statement = rng.choice(
        (
            f"We agreed on the lease timeout for {sub} workers: set {key}={value} in the "
            "deploy values and don't go lower.",
            f"Config decision: {key} becomes {value}; below that the {sub} workers thrash.",
        )
    )
    question = rng.choice(
        (
            f"How many milliseconds should each {sub} worker hold its lease before it expires?",
            f"What value did we settle on for the {sub} worker lease duration?",
        )
    )
    old_statement = (
        f"Current {key} is {old}, but we'll probably revisit it." if rng.random() < 0.3 else None
    )
    return Fact("config", sub, value, statement, question, old_statement)


def _path(rng: random.Random, sub: str, project: str) -> Fact:
    word = rng.choice(("golden", "snapshot", "baseline", "canonical"))
    path = f"tests/fixtures/{sub}/{word}_{rng.choice(('ledger', 'batches', 'frames'))}_v{rng.randint(2, 9)}.parquet"  # noqa: E501
    statement = (
        f"Note that the reference data the {sub} regression suite compares against is "
        f"regenerated into {path} by `make fixtures`."
    )
    question = f"Where on disk does the {sub} regression suite keep its reference data?"
    return Fact("path", sub, path, statement, question)


def _decision(rng: random.Random, sub: str, project: str) -> Fact:
    choice, other = rng.sample(QUEUES, 2)
    old = rng.choice([q for q in QUEUES if q not in (choice, other)])
    statement = rng.choice(
        (
            f"Decision after the design review: {sub} background jobs will run on {choice}; "
            f"{other} was rejected because of the operational cost.",
            f"We're going with {choice} as the broker behind {sub}'s async jobs, not {other}.",
        )
    )
    question = rng.choice(
        (
            f"What message broker did the team choose for the asynchronous {sub} work?",
            f"Which queueing system ended up backing the background jobs of {sub}?",
        )
    )
    old_statement = (
        f"Tentatively {sub} async jobs go on {old}, pending the design review."
        if rng.random() < 0.3
        else None
    )
    return Fact("decision", sub, choice, statement, question, old_statement)


def _store(rng: random.Random, sub: str, project: str) -> Fact:
    choice = rng.choice(STORES)
    statement = (
        f"Analytics for {sub} will be kept in {choice}; the warehouse team signed off on it."
    )
    question = f"Which database holds the analytical data for {sub}?"
    return Fact("database", sub, choice, statement, question)


def _owner(rng: random.Random, sub: str, project: str) -> Fact:
    name = f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"
    statement = rng.choice(
        (
            f"{name} owns the {sub} deploy pipeline now, so releases there need their approval.",
            f"Ownership change: {name} took over the {sub} release pipeline this week.",
        )
    )
    question = rng.choice(
        (
            f"Who do I ask to sign off on a release of {sub}?",
            f"Who is responsible for shipping {sub} to production these days?",
        )
    )
    return Fact("name", sub, name, statement, question)


def _error_code(rng: random.Random, sub: str, project: str) -> Fact:
    code = f"{rng.choice(string.ascii_uppercase)}{rng.choice(string.ascii_uppercase)}-{rng.randint(1000, 9999)}"  # noqa: E501
    statement = (
        f"ERROR {sub}.export deadline exceeded after {rng.randint(30, 90)}s "
        f"code={code} (customer-facing) request aborted"
    )
    question = f"Which code do customers get back when an export from {sub} runs out of time?"
    return Fact("error_code", sub, code, statement, question, in_tool_output=True)


def _url(rng: random.Random, sub: str, project: str) -> Fact:
    slug = f"{sub}-{rng.choice(SLUG_WORDS)}-{rng.choice(('playbook', 'procedure', 'steps'))}"
    url = f"https://wiki.{project}.internal/ops/{slug}-{rng.randint(10, 99)}"
    statement = f"If {sub} has to be failed over at night, follow {url} step by step."
    question = f"Where is the document that explains how to fail over {sub}?"
    return Fact("url", sub, url, statement, question)


def _env_var(rng: random.Random, sub: str, project: str) -> Fact:
    var = f"{project.upper()}_{sub.upper()}_{rng.choice(('FASTPATH', 'V2_PIPELINE', 'NEWPLANNER'))}_ON"  # noqa: E501
    statement = (
        f"The rewritten {sub} code path ships dark; flip {var}=1 in the environment to try it."
    )
    question = f"What environment switch enables the rewritten {sub} code path?"
    return Fact("env_var", sub, var, statement, question)


def _version(rng: random.Random, sub: str, project: str) -> Fact:
    lib = rng.choice(LIBRARIES)
    version = f"{rng.randint(0, 3)}.{rng.randint(10, 39)}.{rng.randint(1, 9)}"
    statement = (
        f"Pin {lib}=={version} in the {sub} requirements; later releases change the wire "
        "format and the contract tests fail."
    )
    question = f"Which exact release of {lib} must {sub} stay on?"
    return Fact("version", sub, version, statement, question)


def _branch(rng: random.Random, sub: str, project: str) -> Fact:
    name = f"wip/{sub}-{rng.choice(('schema', 'backfill', 'split'))}-{rng.choice(string.ascii_lowercase)}{rng.randint(10, 99)}"  # noqa: E501
    statement = f"I pushed my unfinished {sub} migration work to {name}; pick it up from there."
    question = f"On which git branch is the half-done {sub} migration?"
    return Fact("branch", sub, name, statement, question)


def _date(rng: random.Random, sub: str, project: str) -> Fact:
    when = f"{rng.choice(MONTHS)} {rng.randint(2, 28)}"
    statement = f"Release management says the {sub} API freeze begins {when}; plan around it."
    question = f"From what day is the {sub} API frozen?"
    return Fact("date", sub, when, statement, question)


def _commit(rng: random.Random, sub: str, project: str) -> Fact:
    sha = f"{rng.getrandbits(40):010x}"
    statement = f"Bisect result: the {sub} latency regression first shows up at commit {sha}."
    question = f"Which revision introduced the {sub} latency regression, according to bisect?"
    return Fact("commit", sub, sha, statement, question)


FACT_KINDS: tuple[Callable[[random.Random, str, str], Fact], ...] = (
    _port,
    _config,
    _path,
    _decision,
    _store,
    _owner,
    _error_code,
    _url,
    _env_var,
    _version,
    _branch,
    _date,
    _commit,
)


def draw_facts(
    rng: random.Random, count: int, subsystems: tuple[str, ...], project: str
) -> list[Fact]:
    """``count`` facts, each kind/subsystem pair at most once, so every question is unambiguous."""
    pairs = [(k, s) for k in range(len(FACT_KINDS)) for s in subsystems]
    rng.shuffle(pairs)
    if count > len(pairs):
        raise ValueError(f"at most {len(pairs)} probes per session; asked for {count}")
    facts: list[Fact] = []
    for kind, sub in pairs:
        if len(facts) == count:
            break
        fact = FACT_KINDS[kind](rng, sub, project)
        if any(_entangled(fact, other) for other in facts):
            continue
        facts.append(fact)
    return facts


def _entangled(a: Fact, b: Fact) -> bool:
    """Whether either fact's answer shows up in the other's text (or answers overlap)."""
    if a.answer in b.answer or b.answer in a.answer:
        return True
    texts_a = f"{a.statement}\n{a.old_statement or ''}"
    texts_b = f"{b.statement}\n{b.old_statement or ''}"
    return a.answer in texts_b or b.answer in texts_a
