"""Drive a recorded session through the real runtime, turn by turn.

Each user message is added to a ``Session``; before each recorded assistant
message the request is built, and the recorded message plays the provider's
answer with usage computed from that request (prompt tokens = the request's
estimate, completion tokens = the assistant message counted). A request larger
than the window is rejected the way a provider would: the runtime's overflow
handling compacts and rebuilds it.
"""

from __future__ import annotations

import gc
import logging
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .model import CallRow, ReplayReport, TurnRow
from .one_core import on_one_core
from .probes import Probe, load_probes
from .probing import evaluate_probes
from .sessionfile import ParsedSession, SessionFileError, Turn, load_session, probes_path_for

if TYPE_CHECKING:
    from ..runtime.host import ContextHost
    from ..runtime.session import ProviderRequest, Session, TurnReport

log = logging.getLogger("ctxengine.replay")
#: Warnings of the session file shown before a replay (``validate`` lists them all).
WARNINGS_SHOWN = 10

DEFAULT_MODEL = "gpt-4"
DEFAULT_CONTEXT_LENGTH = 32_768
MAX_OVERFLOW_RETRIES = 2

Progress = Callable[[int, int], None]


class ReplayInputError(ValueError):
    """Bad input for a replay (file, engine, settings): exit code 2, message names the fix."""


@dataclass
class ReplayOptions:
    """What to replay and how; None leaves the choice to the config file and defaults."""

    engine: str | None = None
    model: str | None = None
    context_length: int | None = None
    config_path: str | None = None
    probes_path: str | None = None
    out_dir: str | None = None
    #: Read the file with this importer (``ctxengine convert --from`` formats) first.
    source_format: str | None = None
    #: Pin the process to one CPU core for the replay (one_core.py says why). The CLI
    #: does by default; a library caller opts in, since it pins the caller's threads too.
    one_core: bool = False


def replay_file(
    path: str | Path, options: ReplayOptions, progress: Progress | None = None
) -> ReplayReport:
    """Replay the session at ``path``; raises ReplayInputError on bad input."""
    try:
        session = _load(path, options.source_format)
        probes = _load_probes(path, session, options.probes_path)
    except SessionFileError as exc:
        raise ReplayInputError(str(exc)) from exc
    _log_warnings(session, str(path))
    with on_one_core(options.one_core):
        if options.out_dir:
            store_dir = Path(options.out_dir)
            store_dir.mkdir(parents=True, exist_ok=True)
            return _replay(session, probes, options, store_dir / "transcripts.db", progress)
        with tempfile.TemporaryDirectory(prefix="ctxengine-replay-") as tmp:
            return _replay(session, probes, options, Path(tmp) / "transcripts.db", progress)


def _log_warnings(session: ParsedSession, source: str) -> None:
    """The session file's warnings (a repaired text among them: the replay sends what
    the file holds only after that repair), the first ``WARNINGS_SHOWN`` of them."""
    warnings = session.warnings
    for problem in warnings[:WARNINGS_SHOWN]:
        where = f"{source}:{problem.line}" if problem.line else source
        log.warning("%s: %s", where, problem.message)
    if len(warnings) > WARNINGS_SHOWN:
        log.warning(
            "%s: %d more warnings (run `ctxengine validate %s`)",
            source, len(warnings) - WARNINGS_SHOWN, source,
        )  # fmt: skip


def _load(path: str | Path, source_format: str | None) -> ParsedSession:
    """The session file, or another tool's transcript through its importer."""
    if source_format is None:
        return load_session(path)
    from .importers import TranscriptError, import_file
    from .sessionfile import parse_session

    try:
        imported = import_file(path, source_format)
    except TranscriptError as exc:
        raise ReplayInputError(str(exc)) from exc
    parsed = parse_session(imported.to_jsonl(Path(path).name), str(path))
    if parsed.errors:
        shown = "\n".join(p.render(str(path)) for p in parsed.errors[:10])
        raise ReplayInputError(
            f"{path} (as {source_format}) converts to an invalid session:\n{shown}"
        )
    return parsed


def _load_probes(path: str | Path, session: ParsedSession, explicit: str | None) -> list[Probe]:

    probe_file = Path(explicit) if explicit else probes_path_for(path)
    if explicit is None and not probe_file.is_file():
        return []
    return load_probes(probe_file, session)


def _open_host(options: ReplayOptions, store_path: Path) -> ContextHost:
    from ..config import ConfigError, load_config
    from ..discovery.engines import list_engines
    from ..discovery.slot import EngineSelectionError, check_slot_known, choose_slot
    from ..runtime.host import ContextHost
    from ..stores.quarantine import QuarantineLog

    try:
        loaded = load_config(options.config_path)
        # An unknown engine from any source (flag, environment, config) is bad input.
        choice = choose_slot(options.engine, loaded)
        entries = list_engines(plugins_directory=loaded.config.plugins.directory)
        check_slot_known(choice, entries, loaded.path)
        return ContextHost(
            options.engine,
            model=options.model or loaded.config.context.model or DEFAULT_MODEL,
            context_length=options.context_length
            or loaded.config.context.context_length
            or DEFAULT_CONTEXT_LENGTH,
            config=loaded,
            store_path=store_path,
            # Engine files (e.g. the LCM database) and quarantine records stay with
            # this replay's store, not in the user's data directory.
            data_dir=store_path.parent,
            quarantine=QuarantineLog(store_path.parent / "quarantine.jsonl"),
        )
    except (ConfigError, EngineSelectionError) as exc:
        raise ReplayInputError(str(exc)) from exc


def check_engine_installed(
    name: str | None, plugins_directory: str | None = None, option: str = "--engines"
) -> None:
    """Refuse an engine named by ``option`` that no distribution or directory provides."""
    from ..discovery.engines import list_engines
    from ..discovery.slot import canonical_engine_name, slot_may_exist, unknown_engine_message

    name = canonical_engine_name(name)
    entries = list_engines(plugins_directory=plugins_directory)
    if not slot_may_exist(name, entries):
        raise ReplayInputError(
            f"{unknown_engine_message(name, entries)} (selected by the {option} option; "
            f"to fix: pass available names to {option})"
        )


def _replay(
    parsed: ParsedSession,
    probes: list[Probe],
    options: ReplayOptions,
    store_path: Path,
    progress: Progress | None,
) -> ReplayReport:
    started = time.perf_counter()
    host = _open_host(options, store_path)
    try:
        report = ReplayReport(
            session_file=parsed.source,
            engine=host.engine_name,
            engine_requested=host.resolved.choice.name,  # from any source
            engine_fallback=host.resolved.fallback,
            engine_reason=host.resolved.reason,
            model=host.counter.model,
            context_length=host.context_length,
            messages=len(parsed.messages),
            store_path=str(store_path) if options.out_dir else None,
        )
        _check_fits(host, parsed)
        turns = parsed.turns()
        with _open_session(host, parsed) as session, _setup_frozen():
            runner = _Runner(host, session, parsed)
            runner.calls = report.calls
            for turn in turns:
                report.turns.append(runner.play(turn))
                if progress:
                    progress(turn.index, len(turns))
            _note_session_fallback(report, session)
            final = runner.final_request()
            report.final_messages = list(final.messages) if final is not None else []
            tools = runner.engine_tools()
            report.engine_tools = [t["function"]["name"] for t in tools]
            report.probes = evaluate_probes(probes, parsed, final, session, tools)
        if options.probes_path or probes:
            report.probes_file = str(options.probes_path or probes_path_for(parsed.source))
    finally:
        host.close()
    report.wall_seconds = time.perf_counter() - started
    return report


@contextmanager
def _setup_frozen() -> Iterator[None]:
    """The parsed session, the open host and the modules loaded so far live as long as the
    replay: frozen (``gc.freeze``), the full collections that the growing history triggers
    do not walk them every time (about half of those collections' time in the 2,000-turn
    sample). They are collectable again when the replay ends."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _note_session_fallback(report: ReplayReport, session: Session) -> None:
    """An engine quarantined at session open or during the run: the report says so."""
    failed = session.guard.quarantined_from
    if failed is None or report.engine_fallback:
        return
    report.engine_fallback = True
    report.engine = session.guard.handle.name
    reason = f"engine '{failed}' was quarantined during the session; the default engine ran"
    report.engine_reason = reason if report.engine_reason is None else report.engine_reason


def _open_session(host: ContextHost, parsed: ParsedSession) -> Session:
    """A fresh runtime session for the replay; a window with no room for it is bad input."""
    from ..runtime.session import BudgetError

    try:
        return host.open_session(
            f"replay-{Path(parsed.source).name}-{uuid.uuid4().hex[:8]}",
            system_prompt=parsed.system_prompt,
            tools=parsed.tools or None,
            shape=parsed.shape,
        )
    except BudgetError as exc:
        raise ReplayInputError(f"{exc} (--context-length)") from exc


def _base_tokens(host: ContextHost, parsed: ParsedSession) -> int:
    """Tokens of the session's system prompt and tool schemas."""
    base = []
    if parsed.system_prompt:
        base.append({"role": "system", "content": parsed.system_prompt})
    return host.counter.count_messages(base) + host.counter.count_tools(parsed.tools)


def _check_fits(host: ContextHost, parsed: ParsedSession) -> None:
    """A window smaller than the system prompt and tools can never work: say so."""
    base = _base_tokens(host, parsed)
    if base >= host.context_length:
        raise ReplayInputError(
            f"the context length ({host.context_length} tokens) is smaller than the "
            f"session's system prompt and tool schemas ({base} tokens); "
            "pass a larger --context-length"
        )


class _Runner:
    """Plays turns into one runtime session and measures each one."""

    def __init__(self, host: ContextHost, session: Session, parsed: ParsedSession) -> None:
        self.session = session
        self.parsed = parsed
        self.counter = host.counter
        self.context_length = host.context_length
        self.last_request: ProviderRequest | None = None
        self.was_quarantined = False
        self.raw_tokens = _base_tokens(host, parsed)
        self.calls: list[CallRow] = []

    def play(self, turn: Turn) -> TurnRow:
        started = time.perf_counter()
        row = TurnRow(turn=turn.index)
        self.session.add_messages(turn.user)
        self._grow(turn.user)
        pending_tools: list[dict[str, Any]] = []
        for message in turn.replies:
            if message["role"] == "tool":
                pending_tools.append(message)
                continue
            self._flush_tools(pending_tools)
            pending_tools = []
            request = self._request(row)
            completion = self.counter.count_message(message)
            usage = {
                "prompt_tokens": request.estimated_tokens,
                "completion_tokens": completion,
                "total_tokens": request.estimated_tokens + completion,
            }
            self.session.record_response(message, usage)
            self._grow([message])
        self._flush_tools(pending_tools)
        report = self.session.finish_turn()
        _fill_from_turn_report(row, report)
        row.quarantine_started = row.quarantined and not self.was_quarantined
        self.was_quarantined = row.quarantined
        row.raw_tokens = self.raw_tokens
        row.turn_ms = round((time.perf_counter() - started) * 1000, 2)
        return row

    def _flush_tools(self, tools: list[dict[str, Any]]) -> None:
        if tools:
            self.session.record_tool_results(tools)
            self._grow(tools)

    def _grow(self, messages: list[dict[str, Any]]) -> None:
        self.raw_tokens += sum(self.counter.count_message(m) for m in messages)

    def _request(self, row: TurnRow) -> ProviderRequest:
        request = self.session.build_request()
        retries = 0
        while request.estimated_tokens > self.context_length and retries < MAX_OVERFLOW_RETRIES:
            retries += 1
            request = self.session.handle_context_overflow(
                error=f"context_length_exceeded: {request.estimated_tokens} tokens"
            )
        row.overflow_retries += retries
        tokens = int(request.estimated_tokens)
        row.provider_calls += 1
        row.host_substitutions += int(request.substituted)
        row.omitted_messages += request.omitted
        row.requests_with_omissions += int(request.omitted > 0)
        row.sent_messages = len(request.messages)
        row.request_tokens = max(row.request_tokens, tokens)
        row.sent_tokens += tokens
        row.budget_tokens = int(request.budget_tokens)
        row.raw_capped_tokens += min(self.raw_tokens, self.context_length)
        if tokens > self.context_length or request.conversation_tokens > request.budget_tokens:
            row.within_budget = False
        self._record_call(row, request, retries)
        self.last_request = request
        return request

    def _record_call(self, row: TurnRow, request: ProviderRequest, retries: int) -> None:
        tokens = int(request.estimated_tokens)
        before = self.calls[-1].cumulative_sent_tokens if self.calls else 0
        self.calls.append(
            CallRow(
                call=len(self.calls) + 1,
                turn=row.turn,
                request_tokens=tokens,
                conversation_tokens=int(request.conversation_tokens),
                budget_tokens=int(request.budget_tokens),
                messages_sent=len(request.messages),
                cumulative_sent_tokens=before + tokens,
                compacted=bool(request.compacted),
                selected=bool(request.selected),
                substituted=bool(request.substituted),
                overflow_retries=retries,
                within_window=tokens <= self.context_length,
            )
        )

    def final_request(self) -> ProviderRequest | None:
        """The context the next provider call would see, for the probe checks."""
        try:
            return self.session.build_request()
        except ValueError:
            return self.last_request

    def engine_tools(self) -> list[dict[str, Any]]:
        """The tools the engine adds to requests (the session's own tools left out)."""
        own = {t["function"]["name"] for t in self.parsed.tools}
        return [t for t in self.session.tools if t.get("function", {}).get("name") not in own]


def _fill_from_turn_report(row: TurnRow, report: TurnReport) -> None:
    row.live_messages = report.live_messages
    row.budget_tokens = row.budget_tokens or report.budget_tokens
    row.stored_messages = report.stored_messages
    row.select_ms = round(report.select_ms, 2)
    row.compress_ms = round(report.compress_ms, 2)
    row.engine_ms = round(report.engine_ms, 2)
    row.quarantined = report.quarantined
    row.mode = report.mode
    for event in report.compactions:
        row.compress_calls += 1
        if not event.ok:
            row.compaction_failures += 1
            continue
        if not event.compacted:
            continue
        row.compactions += 1
        row.compaction_reasons.append(event.reason)
        row.summary_levels.extend(int(level) for level in event.summary_levels)
        row.summary_tokens += event.summary_tokens
        row.compaction_ms += event.latency_ms
        if row.tokens_before is None:
            row.tokens_before = event.tokens_before
        row.tokens_after = event.tokens_after
    row.compaction_ms = round(row.compaction_ms, 2)
