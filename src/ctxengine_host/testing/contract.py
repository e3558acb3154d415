"""``ContextEngineContract``: the contract test kit as a base test class.

An author's test file is an import, a subclass and an ``engine`` fixture::

    from ctxengine_host.testing import ContextEngineContract

    class TestMyEngine(ContextEngineContract):
        @pytest.fixture
        def engine(self, engine_context):
            return MyEngine(context=engine_context)

Each test checks one rule of the contract (``rules.RULES``) and fails with a
message starting ``[contract: <rule>]``. Capability flags (class attributes)
skip what an engine deliberately does not do.
"""

from __future__ import annotations

import copy
import importlib.metadata
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest

from ..contract.hookspecs import REQUIRED_METHODS
from ..contract.models import (
    HOST_CAPABILITIES,
    AssembleResult,
    BootstrapResult,
    CompactResult,
    HostRequirement,
    IngestResult,
    MaintenanceResult,
    RuntimeSettings,
)
from ..contract.signatures import (
    call_declared,
    check_parameters,
    implemented_methods,
    is_implemented,
    missing_required,
)
from ..runtime.coroutines import CoroutineRunner
from ..runtime.validity import sequence_problems
from ..tokens import TokenCounter
from . import samples
from .concurrency import HostSessions, run_sessions_concurrently
from .context import kit_engine_context
from .rules import require, violation
from .schemas import tool_schema_problems

ENTRY_POINT_GROUP = "ctxengine.engines"
RESERVED_NAMES = frozenset({"", "none", "compressor"})
STATUS_KEYS = (
    "last_prompt_tokens",
    "threshold_tokens",
    "context_length",
    "usage_percent",
    "compression_count",
)
BUDGET_ATTRIBUTES = (
    "last_prompt_tokens",
    "last_completion_tokens",
    "last_total_tokens",
    "threshold_tokens",
    "context_length",
    "compression_count",
)
UNKNOWN_TOOL = "ctxengine_kit_no_such_tool"
KIT_SESSION = "kit-session"

Message = dict[str, Any]


class ContextEngineContract:
    """Base class of an engine's contract tests; override the ``engine`` fixture."""

    # Capability flags: set to False in a subclass to skip what the engine does not do.
    supports_compress_shrink: ClassVar[bool] = True
    supports_select_context: ClassVar[bool] = True
    supports_tools: ClassVar[bool] = True
    supports_cloning: ClassVar[bool] = True
    supports_concurrent_sessions: ClassVar[bool] = True
    honours_model_thresholds: ClassVar[bool] = True
    #: False for an engine written for the framework's ABC, whose ``budget_tokens`` covers
    #: the whole request, system prompt included (``select-context-head`` is then skipped).
    budget_excludes_system_prompt: ClassVar[bool] = True

    # Settings of the checks.
    #: The engine's entry point name, when it is not ``engine.name``.
    entry_point_name: ClassVar[str | None] = None
    model: ClassVar[str] = "gpt-4"
    #: A window small enough that the sample conversation is well over it.
    pressure_context_length: ClassVar[int] = 2048
    conversation_turns: ClassVar[int] = 24
    #: Tool calls of the single-task loop of ``compress-long-tool-loop``.
    long_loop_tool_calls: ClassVar[int] = 100
    concurrent_sessions: ClassVar[int] = 4
    turns_per_session: ClassVar[int] = 6

    # Fixtures.

    @pytest.fixture
    def engine(self) -> Any:
        """Override: return a fresh engine instance (request ``engine_context`` if needed)."""
        pytest.fail(
            "override the `engine` fixture in your ContextEngineContract subclass:\n"
            "    @pytest.fixture\n"
            "    def engine(self, engine_context):\n"
            "        return MyEngine(context=engine_context)"
        )

    @pytest.fixture
    def token_counter(self) -> TokenCounter:
        return TokenCounter(self.model)

    @pytest.fixture
    def engine_data_dir(self, tmp_path: Path) -> Path:
        return tmp_path / "engine-data"

    @pytest.fixture
    def engine_context(self, engine_data_dir: Path, token_counter: TokenCounter):
        """An ``EngineContext`` with the host's real token counter and summarizer."""
        return kit_engine_context("kit", engine_data_dir, token_counter)

    @pytest.fixture
    def conversation(self) -> list[Message]:
        """A sample history with a system prompt and tool-call groups."""
        return samples.conversation(self.conversation_turns)

    @pytest.fixture
    def pressured_engine(self, engine: Any) -> Any:
        """The engine told about a window the sample conversation overflows."""
        _invoke(
            engine.update_model,
            {"model": self.model, "context_length": self.pressure_context_length},
        )
        return engine

    # Info attributes and names.

    def test_name(self, engine: Any) -> None:
        try:
            name = engine.name
        except Exception as exc:
            raise violation("name", f"reading engine.name raised {exc!r}") from exc
        if not isinstance(name, str) or not name.strip():
            raise violation("name", f"engine.name is {name!r}; it must be a non-empty string")
        problems = []
        if name != name.strip() or any(ch.isspace() for ch in name):
            problems.append(f"engine.name {name!r} contains whitespace")
        if name.lower() in RESERVED_NAMES:
            problems.append(f"engine.name {name!r} is reserved: the slot reads it as the default")
        require("name", problems)

    def test_info_attributes(self, engine: Any) -> None:
        problems = []
        version = getattr(engine, "version", None)
        if not isinstance(version, str) or not version:
            problems.append(f"version is {version!r}; expected a non-empty string")
        if not isinstance(getattr(engine, "display_name", ""), str):
            problems.append("display_name must be a string")
        if not isinstance(getattr(engine, "owns_compaction", False), bool):
            problems.append("owns_compaction must be a bool")
        mode = getattr(engine, "turn_maintenance_mode", "foreground")
        if mode not in ("foreground", "background"):
            problems.append(f"turn_maintenance_mode is {mode!r}; expected foreground|background")
        problems.extend(_config_model_problems(getattr(engine, "config_model", None)))
        for attr in BUDGET_ATTRIBUTES:
            value = getattr(engine, attr, None)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                problems.append(f"{attr} is {value!r}; expected an int >= 0")
        percent = getattr(engine, "threshold_percent", None)
        if not isinstance(percent, int | float) or not 0 < percent <= 1:
            problems.append(f"threshold_percent is {percent!r}; expected a number in (0, 1]")
        if not isinstance(getattr(engine, "model_thresholds", {}), dict):
            problems.append("model_thresholds must be a dict")
        require("info-attributes", problems)

    def test_required_methods(self, engine: Any) -> None:
        missing = [m for m in missing_required(engine) if m != "name"]
        not_own = [m for m in sorted(REQUIRED_METHODS) if m not in implemented_methods(engine)]
        require(
            "required-methods",
            [f"{m} is missing" for m in missing]
            + [f"{m} is not implemented by the engine" for m in not_own if m not in missing],
        )

    def test_parameter_names(self, engine: Any) -> None:
        require("parameter-names", check_parameters(engine))

    def test_host_requirements(self, engine: Any) -> None:
        require("host-requirements", host_requirement_problems(engine))

    # Defaults' semantics where overridden.

    def test_update_from_response(self, engine: Any) -> None:
        usage = {"prompt_tokens": 1234, "completion_tokens": 56, "total_tokens": 1290}
        _call("update-from-response", engine.update_from_response, {"usage": usage})
        seen = {a: getattr(engine, a, None) for a in BUDGET_ATTRIBUTES[:3]}
        expected = {
            "last_prompt_tokens": 1234,
            "last_completion_tokens": 56,
            "last_total_tokens": 1290,
        }
        require(
            "update-from-response",
            [
                f"{k} is {seen[k]!r} after usage {usage}, expected {v}"
                for k, v in expected.items()
                if seen[k] != v
            ],
        )

    def test_should_compress(self, pressured_engine: Any) -> None:
        problems = []
        for tokens in (0, self.pressure_context_length * 2, None):
            result = _call(
                "should-compress", pressured_engine.should_compress, {"prompt_tokens": tokens}
            )
            if not isinstance(result, bool):
                problems.append(f"should_compress(prompt_tokens={tokens}) returned {result!r}")
        require("should-compress", problems)

    def test_get_status(self, pressured_engine: Any) -> None:
        usage = {
            "prompt_tokens": self.pressure_context_length * 3,
            "completion_tokens": 10,
            "total_tokens": self.pressure_context_length * 3 + 10,
        }
        _invoke(pressured_engine.update_from_response, {"usage": usage})
        status = _call("get-status", pressured_engine.get_status, {})
        require("get-status", status_problems(status))

    def test_session_reset(self, pressured_engine: Any, conversation: list[Message]) -> None:
        engine = pressured_engine
        _invoke(
            engine.update_from_response,
            {"usage": {"prompt_tokens": 5000, "completion_tokens": 20, "total_tokens": 5020}},
        )
        _compress(engine, conversation, "session-reset")
        engine.compression_count = max(1, engine.compression_count)
        _call("session-reset", engine.on_session_reset, {})
        left = {a: getattr(engine, a) for a in (*BUDGET_ATTRIBUTES[:3], "compression_count")}
        require(
            "session-reset",
            [f"{a} is {v!r} after on_session_reset(), expected 0" for a, v in left.items() if v],
        )

    def test_unknown_tool_error(self, engine: Any) -> None:
        raw = _call(
            "unknown-tool-error",
            engine.handle_tool_call,
            {"name": UNKNOWN_TOOL, "args": {}},
        )
        try:
            payload = json.loads(raw)
        except (TypeError, ValueError) as exc:
            raise violation(
                "unknown-tool-error",
                f"handle_tool_call({UNKNOWN_TOOL!r}, {{}}) returned {raw!r}, not a JSON string",
            ) from exc
        if not isinstance(payload, dict) or not isinstance(payload.get("error"), str):
            raise violation(
                "unknown-tool-error",
                f"handle_tool_call({UNKNOWN_TOOL!r}, {{}}) returned {raw!r}; "
                'expected a JSON object with an "error" string',
            )

    def test_tool_schemas(self, engine: Any) -> None:
        if not self.supports_tools:
            pytest.skip("supports_tools = False")
        schemas = _call("tool-schemas", engine.get_tool_schemas, {})
        require("tool-schemas", tool_schema_problems(schemas))

    # compress.

    def test_compress_valid_sequence(self, pressured_engine: Any, conversation: list[Message]):
        rule = "compress-valid-sequence"
        result = _compress(pressured_engine, conversation, rule)
        messages = self._compacted_view(pressured_engine, result, conversation, rule)
        require(rule, sequence_problems(messages), "compress() output")

    def test_compress_long_tool_loop(self, pressured_engine: Any, token_counter: TokenCounter):
        """One task, then a long tool loop, compacted whenever it passes the threshold.

        The commonest agent shape: a compaction that keeps "the newest turn" keeps
        everything, and one that trims from the front can leave a lone tool result.
        """
        rule = "compress-long-tool-loop"
        threshold = pressured_engine.threshold_tokens or self.pressure_context_length // 2
        history: list[Message] = []
        for block in samples.long_tool_loop(self.long_loop_tool_calls):
            history.extend(block)
            if token_counter.count_messages(history) <= threshold:
                continue
            result = _compress(pressured_engine, history, rule)
            compacted = _compacted_messages(result, rule)
            if compacted is None:
                pytest.skip("compress() keeps the history itself; see select-context rules")
            require(rule, sequence_problems(compacted), f"compress() of {len(history)} messages")
            history = list(compacted)

    def test_compress_shrinks(
        self, pressured_engine: Any, conversation: list[Message], token_counter: TokenCounter
    ) -> None:
        if not self.supports_compress_shrink:
            pytest.skip("supports_compress_shrink = False")
        rule = "compress-shrinks"
        before = token_counter.count_messages(conversation)
        result = _compress(pressured_engine, conversation, rule)
        reported = _reported_tokens(result)
        if reported and reported[1] > reported[0]:
            raise violation(
                rule,
                f"CompactResult reports tokens_after={reported[1]} > tokens_before={reported[0]}",
            )
        messages = self._compacted_view(pressured_engine, result, conversation, rule)
        after = token_counter.count_messages(messages)
        if after > before:
            raise violation(
                rule,
                f"compress() left {after} tokens of an input of {before} tokens "
                f"(window {self.pressure_context_length})",
            )

    def _compacted_view(
        self, engine: Any, result: Any, conversation: list[Message], rule: str
    ) -> list[Message]:
        """What the next request holds after ``compress``: its list, or else the engine's
        selection (an engine keeping the history itself returns no messages)."""
        messages = _compacted_messages(result, rule)
        if messages is not None:
            return messages
        if not is_implemented(engine, "select_context"):
            pytest.skip("compress() kept the history itself and there is no select_context")
        counter = TokenCounter(self.model)
        args = self._select_args(conversation, counter)
        args["budget_tokens"] = engine.threshold_tokens or args["budget_tokens"]
        selected = _selected(_call(rule, engine.select_context, args), quiet=True)
        if not selected:
            pytest.skip("compress() kept the history itself and select_context made no change")
        return selected

    # select_context.

    def test_select_context_valid(
        self, pressured_engine: Any, conversation: list[Message], token_counter: TokenCounter
    ) -> None:
        if not self.supports_select_context:
            pytest.skip("supports_select_context = False")
        args = self._select_args(conversation, token_counter)
        _start_session(pressured_engine, args["request_messages"], "select-context-valid")
        pristine = copy.deepcopy(args)
        result = _call("select-context-valid", pressured_engine.select_context, args)
        if args != pristine:
            raise violation(
                "select-context-valid",
                "select_context() modified its arguments; the request and history are read-only",
            )
        _selected(result)

    def test_select_context_budget(
        self, pressured_engine: Any, conversation: list[Message], token_counter: TokenCounter
    ) -> None:
        if not self.supports_select_context:
            pytest.skip("supports_select_context = False")
        args = self._select_args(conversation, token_counter)
        _start_session(pressured_engine, args["request_messages"], "select-context-budget")
        selected = _selected(
            _call("select-context-budget", pressured_engine.select_context, args), quiet=True
        )
        if not selected:
            pytest.skip("select_context() made no change (None or [])")
        used = token_counter.count_messages(selected)
        if used > args["budget_tokens"]:
            raise violation(
                "select-context-budget",
                f"select_context() returned {used} tokens for budget_tokens="
                f"{args['budget_tokens']}",
            )

    def test_select_context_stable(
        self, pressured_engine: Any, conversation: list[Message], token_counter: TokenCounter
    ) -> None:
        if not self.supports_select_context:
            pytest.skip("supports_select_context = False")
        args = self._select_args(conversation, token_counter)
        _start_session(pressured_engine, args["request_messages"], "select-context-stable")
        first = _select(pressured_engine, args, "select-context-stable")
        second = _select(pressured_engine, args, "select-context-stable")
        if (first or None) != (second or None):
            raise violation(
                "select-context-stable",
                "two select_context() calls with the same inputs returned different selections "
                f"({len(first or [])} vs {len(second or [])} messages); unstable selections "
                "forfeit the provider's prompt cache",
            )

    def test_select_context_head(
        self, pressured_engine: Any, conversation: list[Message], token_counter: TokenCounter
    ) -> None:
        if not self.supports_select_context or not self.budget_excludes_system_prompt:
            pytest.skip("supports_select_context or budget_excludes_system_prompt = False")
        args = self._select_args(conversation, token_counter)
        _start_session(pressured_engine, args["request_messages"], "select-context-head")
        plain = _select(pressured_engine, args, "select-context-head")
        if not plain or not all(isinstance(m, dict) for m in plain):
            pytest.skip("select_context() made no change, or no valid one (select-context-valid)")
        # About half the budget: an engine counting it again must leave messages out.
        house_style = "Follow the house style. " * (args["budget_tokens"] // 10)
        system = {"role": "system", "content": house_style}
        headed = {**copy.deepcopy(args), "request_messages": [system, *args["request_messages"]]}
        selected = (
            _selected(
                _call("select-context-head", pressured_engine.select_context, headed), quiet=True
            )
            or []
        )
        body = selected[1:] if selected and selected[0] == system else selected
        if body != plain:
            raise violation(
                "select-context-head",
                f"with a system prompt of {token_counter.count_messages([system])} tokens in "
                f"request_messages, select_context() selected {len(body)} other messages "
                f"instead of {len(plain)}: budget_tokens is the conversation's, the system "
                "prompt is off it already (docs/runtime.md); do not count it again",
            )

    def test_select_context_covers(
        self, pressured_engine: Any, conversation: list[Message], token_counter: TokenCounter
    ) -> None:
        if not self.supports_select_context:
            pytest.skip("supports_select_context = False")
        args = self._select_args(conversation, token_counter)
        history = [
            {**m, "message_uid": f"kit-{n:04d}"} for n, m in enumerate(args["request_messages"])
        ]
        args["request_messages"] = history
        args["conversation_messages"] = history
        args["incoming_message"] = history[-1]
        _start_session(pressured_engine, history, "select-context-covers")
        result = _call("select-context-covers", pressured_engine.select_context, args)
        if not isinstance(result, AssembleResult) or not result.covers:
            pytest.skip("select_context() declared no covers")
        require("select-context-covers", cover_problems(result, history), "covers")

    def _select_args(self, conversation: list[Message], counter: TokenCounter) -> dict[str, Any]:
        history = [m for m in conversation if m.get("role") != "system"]
        incoming = samples.user_message("kit", len(history) + 1)
        request = [*history, incoming]
        budget = max(256, counter.count_messages(request) // 3)
        return {
            "request_messages": request,
            "conversation_messages": history,
            "incoming_message": incoming,
            "budget_tokens": budget,
            "runtime_settings": RuntimeSettings(),
        }

    # Clones, threads, thresholds.

    def test_clone_independence(self, engine: Any) -> None:
        if not self.supports_cloning:
            pytest.skip("supports_cloning = False")
        _invoke(engine.update_model, {"model": self.model, "context_length": 100_000})
        _invoke(
            engine.update_from_response,
            {"usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}},
        )
        before = {a: getattr(engine, a) for a in BUDGET_ATTRIBUTES}
        thresholds = dict(engine.model_thresholds)
        clone = _call("clone-independence", engine.clone_for_agent, {})
        problems = []
        if clone is engine:
            problems.append("clone_for_agent() returned the engine itself")
        elif getattr(clone, "name", None) != engine.name:
            problems.append(f"the clone's name {getattr(clone, 'name', None)!r} != {engine.name!r}")
        else:
            _invoke(clone.update_model, {"model": "kit-other-model", "context_length": 1234})
            _invoke(
                clone.update_from_response,
                {"usage": {"prompt_tokens": 999, "completion_tokens": 9, "total_tokens": 1008}},
            )
            after = {a: getattr(engine, a) for a in BUDGET_ATTRIBUTES}
            problems.extend(
                f"{a} of the original changed from {before[a]!r} to {after[a]!r} when the "
                "clone was updated"
                for a in BUDGET_ATTRIBUTES
                if before[a] != after[a]
            )
            own_dict = "model_thresholds" in vars(engine)
            if own_dict and clone.model_thresholds is engine.model_thresholds:
                problems.append("the clone shares its model_thresholds dict with the original")
            if engine.model_thresholds != thresholds:
                problems.append("updating the clone changed the original's model_thresholds")
        require("clone-independence", problems)

    def test_model_thresholds(self, engine: Any) -> None:
        if not self.honours_model_thresholds:
            pytest.skip("honours_model_thresholds = False")
        configured = engine.threshold_percent
        engine.model_thresholds = {"kit-model": 0.5, "kit-model-large": 0.6, "kitprov:kit": 0.25}
        cases = [
            ({"model": "kit-model-large-2"}, 0.6),
            ({"model": "kit-model-x"}, 0.5),
            ({"model": "kit-model-x", "provider": "kitprov"}, 0.5),
            ({"model": "kit-mini", "provider": "kitprov"}, 0.25),
            ({"model": "unrelated-model"}, configured),
        ]
        problems = []
        for args, percent in cases:
            _invoke(engine.update_model, {"context_length": 10_000, **args})
            expected = int(10_000 * percent)
            if engine.threshold_tokens != expected:
                problems.append(
                    f"update_model({args}, context_length=10000) set threshold_tokens="
                    f"{engine.threshold_tokens}, expected {expected}"
                )
        require("model-thresholds", problems, f"model_thresholds={engine.model_thresholds}")

    def test_concurrent_sessions(
        self, engine: Any, tmp_path: Path, request: pytest.FixtureRequest
    ) -> None:
        if not self.supports_concurrent_sessions:
            pytest.skip("supports_concurrent_sessions = False")
        option = request.config.getoption
        sessions = option("ctxengine_sessions", default=None) or self.concurrent_sessions
        turns = option("ctxengine_turns", default=None) or self.turns_per_session
        host = HostSessions(engine, self.model, self.pressure_context_length * 2, tmp_path)
        errors = run_sessions_concurrently(host, sessions, turns)
        require("concurrent-sessions", errors)

    # Discovery and lifecycle.

    def test_entry_point_discovery(self, engine: Any, engine_context: Any) -> None:
        name = self.entry_point_name or engine.name
        found = [
            ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP) if ep.name == name
        ]
        if not found:
            pytest.skip(f"no `{ENTRY_POINT_GROUP}` entry point named {name!r} is installed")
        require("entry-point-discovery", entry_point_problems(name, found, engine, engine_context))

    def test_lifecycle_results(self, pressured_engine: Any, conversation: list[Message]) -> None:
        require("lifecycle-results", lifecycle_problems(pressured_engine, conversation))


# Helpers shared by the tests (plain functions so other tools can reuse them).


#: Runs the coroutines of ``async def`` contract methods, as the sync host does.
_COROUTINES = CoroutineRunner()


def _invoke(method: Callable[..., Any], available: dict[str, Any]) -> Any:
    """``method`` called with the arguments it declares; a coroutine is run to completion."""
    return _COROUTINES.settle(call_declared(method, available), None)


def _call(rule: str, method: Callable[..., Any], available: dict[str, Any]) -> Any:
    """Call a contract method as the host does; an exception is a violation of ``rule``."""
    try:
        return _invoke(method, available)
    except Exception as exc:
        name = getattr(method, "__name__", "method")
        raise violation(rule, f"{name}() raised {type(exc).__name__}: {exc}") from exc


def _start_session(engine: Any, messages: list[Message], rule: str) -> None:
    """Start the kit's session and ingest ``messages``, as the host does before other calls."""
    _call(rule, engine.on_session_start, {"session_id": KIT_SESSION})
    _call(rule, engine.ingest, {"session_id": KIT_SESSION, "messages": copy.deepcopy(messages)})


def _compress(engine: Any, conversation: list[Message], rule: str) -> Any:
    """Start a session, ingest the conversation, then ``compress`` it."""
    _start_session(engine, conversation, rule)
    counter_hint = sum(len(str(m.get("content") or "")) for m in conversation) // 4
    return _call(
        rule,
        engine.compress,
        {
            "messages": copy.deepcopy(conversation),
            "current_tokens": counter_hint,
            "focus_topic": None,
            "force": True,
            "runtime_settings": RuntimeSettings(),
            "deadline": None,
        },
    )


def _reported_tokens(result: Any) -> tuple[int, int] | None:
    """(tokens_before, tokens_after) when a CompactResult reports both."""
    if not isinstance(result, CompactResult):
        return None
    if result.tokens_before is None or result.tokens_after is None:
        return None
    return result.tokens_before, result.tokens_after


def _compacted_messages(result: Any, rule: str) -> list[Message] | None:
    if isinstance(result, CompactResult):
        return result.messages
    if isinstance(result, list):
        return result
    raise violation(
        rule, f"compress() returned a {type(result).__name__}, not a list or a CompactResult"
    )


def _select(engine: Any, args: dict[str, Any], rule: str) -> list[Message] | None:
    """What ``select_context`` selects from a copy of ``args`` (validity unchecked: that
    is ``select-context-valid``'s business)."""
    return _selected(_call(rule, engine.select_context, copy.deepcopy(args)), quiet=True)


def _selected(result: Any, quiet: bool = False) -> list[Message] | None:
    """The messages a ``select_context`` result asks for, or None for "no change"."""
    if result is None:
        return None
    if isinstance(result, AssembleResult):
        messages = result.messages
    elif isinstance(result, list):
        messages = result
    else:
        raise violation(
            "select-context-valid",
            f"select_context() returned a {type(result).__name__}; expected None, a list or "
            "an AssembleResult",
        )
    if not quiet:
        require("select-context-valid", sequence_problems(messages), "select_context() output")
    return messages or None


def cover_problems(result: AssembleResult, history: list[Message]) -> list[str]:
    """What is wrong with the covers ``result`` declares over ``history`` (uids in order)."""
    position = {m.get("message_uid"): i for i, m in enumerate(history)}
    sent = {m.get("message_uid") for m in result.messages if m.get("message_uid")}
    problems = []
    for cover in result.covers:
        first, last = (cover, cover) if isinstance(cover, str) else tuple(cover)[:2]
        if first not in position or last not in position:
            problems.append(f"cover {cover!r} names a uid that is not in conversation_messages")
        elif position[first] > position[last]:
            problems.append(f"cover {cover!r}: the first uid comes after the last one")
        elif any(
            history[i].get("message_uid") in sent
            for i in range(position[first], position[last] + 1)
        ):
            problems.append(f"cover {cover!r} includes a message the selection also sends")
    return problems


def _config_model_problems(model: Any) -> list[str]:
    if model is None:
        return []
    from pydantic import BaseModel

    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        return [f"config_model is {model!r}; expected a pydantic model class or None"]
    try:
        model.model_validate({})
    except Exception as exc:
        return [f"config_model cannot be built from an empty [engines.<name>] block: {exc}"]
    return []


def host_requirement_problems(engine: Any) -> list[str]:
    """What is malformed in ``engine.host_requirements``."""
    requirements = getattr(engine, "host_requirements", {})
    if not isinstance(requirements, dict):
        return [f"host_requirements is a {type(requirements).__name__}, expected a dict"]
    problems = []
    for operation, requirement in requirements.items():
        if not isinstance(operation, str) or not operation:
            problems.append(f"operation {operation!r} must be a non-empty string")
            continue
        try:
            parsed = HostRequirement.model_validate(requirement)
        except Exception as exc:
            problems.append(f"{operation}: {exc}".splitlines()[0])
            continue
        if not parsed.capabilities:
            problems.append(f"{operation}: capabilities is empty; drop the entry instead")
        unknown = sorted(set(parsed.capabilities) - HOST_CAPABILITIES)
        if unknown:
            problems.append(
                f"{operation}: unknown capabilities {unknown} (known: {sorted(HOST_CAPABILITIES)})"
            )
    return problems


def status_problems(status: Any) -> list[str]:
    """What is wrong with a ``get_status()`` result."""
    if not isinstance(status, dict):
        return [f"get_status() returned a {type(status).__name__}, expected a dict"]
    problems = [f"key {k!r} is missing" for k in STATUS_KEYS if k not in status]
    for key in ("last_prompt_tokens", "threshold_tokens", "context_length", "compression_count"):
        value = status.get(key, 0)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            problems.append(f"{key} is {value!r}; expected an int >= 0")
    percent = status.get("usage_percent", 0)
    if not isinstance(percent, int | float) or isinstance(percent, bool) or not 0 <= percent <= 100:
        problems.append(f"usage_percent is {percent!r}; expected a number in 0..100")
    try:
        json.dumps(status)
    except (TypeError, ValueError) as exc:
        problems.append(f"not JSON-serializable: {exc}")
    return problems


def entry_point_problems(name: str, found: list[Any], engine: Any, context: Any) -> list[str]:
    """What goes wrong building ``name`` through its entry point(s)."""
    dists = sorted({getattr(ep.dist, "name", "?") for ep in found})
    if len(found) > 1:
        return [f"{len(found)} entry points claim {name!r} (distributions: {', '.join(dists)})"]
    try:
        factory = found[0].load()
    except Exception as exc:
        return [f"loading entry point {found[0].value!r} raised {type(exc).__name__}: {exc}"]
    config_model = getattr(factory, "config_model", None)
    config = config_model.model_validate({}) if config_model is not None else None
    try:
        built = call_declared(factory, {"config": config, "context": context})
    except Exception as exc:
        return [f"calling entry point {found[0].value!r} raised {type(exc).__name__}: {exc}"]
    problems = []
    if getattr(built, "name", None) != name:
        problems.append(
            f"entry point {name!r} ({found[0].value}) builds an engine named "
            f"{getattr(built, 'name', None)!r}; the entry point name must equal engine.name"
        )
    problems.extend(_listing_problems(name))
    return problems


def _listing_problems(name: str) -> list[str]:
    try:
        from ..discovery.engines import list_engines
    except ImportError:
        return []
    entries = [e for e in list_engines() if e.name == name]
    if not entries:
        return [f"`ctxengine engines` does not list {name!r}"]
    return [f"listing {name!r} warns: {w}" for e in entries for w in e.warnings]


_RESULT_MODELS: dict[str, type[Any]] = {
    "bootstrap": BootstrapResult,
    "ingest": IngestResult,
    "maintain": MaintenanceResult,
}


def lifecycle_problems(engine: Any, conversation: list[Message]) -> list[str]:
    """Call each optional lifecycle method as the host does and check what it returns."""
    session = "kit-lifecycle"
    history = copy.deepcopy(conversation)
    available = {
        "session_id": session,
        "messages": history,
        "runtime_settings": RuntimeSettings(),
        "transcript": history,
        "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
        "parent_session_id": session,
        "child_session_id": session + "-child",
        "context_mode": "isolated",
        "ttl_s": None,
        "reason": "completed",
    }
    order = (
        "on_session_start",
        "bootstrap",
        "ingest",
        "should_compress_preflight",
        "on_turn_complete",
        "maintain",
        "prepare_subagent_spawn",
        "on_subagent_ended",
        "on_session_end",
        "dispose",
    )
    problems = []
    for method in order:
        try:
            result = _invoke(getattr(engine, method), available)
        except Exception as exc:
            problems.append(f"{method}() raised {type(exc).__name__}: {exc}")
            continue
        if method in _RESULT_MODELS and result is not None:
            model = _RESULT_MODELS[method]
            if not isinstance(result, model | dict):
                problems.append(f"{method}() returned a {type(result).__name__}")
            elif isinstance(result, dict):
                try:
                    model.model_validate(result)
                except Exception as exc:
                    problems.append(f"{method}() returned an invalid {model.__name__}: {exc}")
        elif method == "should_compress_preflight" and not isinstance(result, bool):
            problems.append(f"should_compress_preflight() returned {result!r}, not a bool")
        elif method == "prepare_subagent_spawn" and result is not None and not callable(result):
            problems.append(f"prepare_subagent_spawn() returned {result!r}, not a callable")
    return problems
