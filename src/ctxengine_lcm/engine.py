"""The ``lcm`` engine: Lossless Context Management.

Every message is stored verbatim in the LCM store; older spans of the active context are
replaced by summaries that form a DAG (leaf summaries over messages, condensed summaries
over summaries); each request is assembled from the active context; the agent gets tools
to search the history and expand any summary back to the originals.

One engine clone serves one session (the host calls ``clone_for_agent`` per agent), so
the current session id is remembered on the instance.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxengine_host.contract.context import EngineContext
from ctxengine_host.contract.engine import ContextEngine, ttl_problem
from ctxengine_host.contract.messages import MAX_UID_CHARS, leading_system, uid_problem
from ctxengine_host.contract.models import (
    AssembleResult,
    BootstrapResult,
    CompactResult,
    IngestResult,
    SummaryResult,
)
from ctxengine_host.contract.tasktext import shorten_task, summarize_with, task_limit
from ctxengine_host.limits import loads_json
from ctxengine_host.shapes import message_time
from ctxengine_host.tokens import message_digest

from ._version import __version__
from .assembly import (
    SYSTEM_PROMPT_ADDITION,
    Fit,
    SummaryJoiner,
    expand_summaries,
    extend_fit,
    fit_to_budget,
    merge_leading,
    system_prompt_addition,
)
from .backend import open_lcm_store
from .compaction import Compactor, pinned_task
from .config import (
    LcmConfig,
    checked_session_id,
    namespace_for,
    resolve_database_path,
    session_key,
)
from .render import context_message, derived_uid, large_output_stub, summary_message, to_new_message
from .store import (
    Appended,
    ContextItem,
    Conversation,
    Grant,
    LcmStore,
    NewMessage,
    StoredMessage,
)
from .tools import TOOL_NAMES, TOOL_SCHEMAS, CallerAccess, ToolRunner, result_json

Message = dict[str, Any]

#: Session id used when the host never named one.
DEFAULT_SESSION_ID = "default"
#: Messages per ingest transaction: a bulk load pays each transaction's fixed statements
#: (counters, id read-back, FTS5 insert, commit) once per this many messages.
INGEST_BATCH = 1_000
#: At most this many uids of a request's live view are looked up when the engine has no
#: mark of what it checked before (a new process or a rewritten view).
CATCH_UP_LIMIT = 5_000
#: Rendered summaries kept, with their counts, after they leave the request: opening a
#: condensed summary at assembly closes it again as the room changes, and each return was a
#: read, a render and a count (the 2,000-turn replay rendered 5,745 summaries for 221 made).
RENDERED_SUMMARIES_KEPT = 256

_INTEGRITY: dict[str, str] = {}
_log = logging.getLogger("ctxengine.engine.lcm")


class LcmEngine(ContextEngine):
    """Lossless Context Management: a verbatim store, a summary DAG and recall tools."""

    name = "lcm"
    version = __version__
    display_name = "Lossless Context Management"
    owns_compaction = True
    config_model = LcmConfig
    #: Always set: the constructor makes a standalone context when none is given.
    context: EngineContext

    def __init__(
        self, config: LcmConfig | dict | None = None, context: EngineContext | None = None
    ):
        if not isinstance(config, LcmConfig):
            config = LcmConfig.model_validate(config or {})
        super().__init__(config=config, context=context or _standalone_context())
        self.settings: LcmConfig = config
        self._store: LcmStore | None = None
        self._open_lock = threading.Lock()
        self._session_id: str | None = None
        self._conversation_id: int | None = None
        #: (index, uid) of the newest live-view message known to be stored with everything
        #: before it: the next check starts after it.
        self._checked: tuple[int, str | None] | None = None
        self._warned_no_insert = False
        self._last_assembly: tuple[tuple, list[Message], AssembleResult] | None = None
        #: What the last request was assembled from, for extending it with appended messages.
        self._selection: _Selection | None = None
        #: (conversation id, context version, items): the active context as last read or
        #: extended by this engine's own appends; trusted only while the store's version
        #: is the same (another process may have changed the context).
        self._items: tuple[int, int, list[ContextItem]] | None = None
        #: Versions (uid, digest) this engine stored since its last catch-up (a few thousand
        #: at most): known without asking the store (messages are never deleted).
        self._stored_uids: set[tuple[str, str]] = set()
        self._rendered: dict[tuple[str, int], Message] = {}
        #: (uid, limit) -> the shortened copy of an oversized task message (the newest one).
        self._shortened: dict[tuple[Any, int], Message] = {}
        #: Summary id -> (first uid, last uid) of the messages it covers.
        self._spans: dict[int, tuple[str, str] | None] = {}
        #: The summaries opened at assembly: (summary ids, replacements, extra tokens).
        self._expansion: tuple[tuple[int, ...], dict[int, list[ContextItem]], int] | None = None
        #: Condensed summary id -> its source summaries as context items (never change).
        self._sources: dict[int, list[ContextItem]] = {}
        #: Exact token counts of the rendered messages, by object id (they live in _rendered).
        self._rendered_tokens: dict[int, int] = {}
        #: Exact token counts of the rendered summaries in _rendered, by summary id.
        self._summary_tokens: dict[int, int] = {}
        #: Token counts of other messages (system prompt, merged summaries), by role and text.
        self._text_tokens: dict[tuple[Any, str], int] = {}
        self._join_summaries = SummaryJoiner()
        self._list_overhead: int | bool | None = False  # False: not measured yet
        self._addition_tokens: int | None = None
        #: The room the last request had for the conversation (0: no request yet).
        self._room = 0

    # Store and session plumbing.

    @property
    def database_path(self) -> Path:
        return resolve_database_path(self.settings.database, self.context.data_dir)

    @property
    def store(self) -> LcmStore:
        """The store, opened on first use (constructing an engine creates no files)."""
        if self._store is None:
            with self._open_lock:
                if self._store is None:
                    self._store = open_lcm_store(self.settings, self.context.data_dir)
        return self._store

    @property
    def namespace(self) -> str:
        """Whose conversations these are (:func:`~ctxengine_lcm.config.namespace_for`)."""
        return namespace_for(self.settings, getattr(self.context, "store_id", None))

    def session_key(self, session_id: str) -> str:
        """The key of a session's rows in the LCM store."""
        return session_key(self.namespace, session_id)

    def _use_session(self, session_id: str | None) -> None:
        """Make ``session_id`` current (None or "": the current one goes on); an id the
        store cannot key is refused before the engine switches to it."""
        if session_id and session_id != self._session_id:
            checked_session_id(session_id)
            self._session_id = session_id
            self._conversation_id = None
            self._forget_caches()

    def _conversation(self) -> int:
        if self._conversation_id is None:
            self._conversation_id = self._resolve_conversation(
                self._session_id or DEFAULT_SESSION_ID
            )
        return self._conversation_id

    def _resolve_conversation(self, session_id: str) -> int:
        """The session's current conversation in this namespace, after claiming the legacy
        (unscoped) history the host's transcript proves is its own. A conversation whose
        newest message the transcript does not hold is another history: it is left as it
        is and a new generation starts (never merged with the live view)."""
        store = self.store
        key = self.session_key(session_id)
        holds = getattr(self.context, "transcript_holds", None)
        if key != session_id and holds is not None and not store.session_conversation_ids(key):
            self._claim_legacy(session_id, key, holds)
        conversation = store.current_conversation(key)
        if holds is not None and conversation.message_count:
            newest = store.newest_message_uid(conversation.id)
            if newest is not None and not holds(session_id, newest):
                _log.warning(
                    "lcm: session %s: the stored conversation %d is not this transcript's "
                    "history (its newest message %s is not in the transcript); starting a "
                    "new conversation, the old one stays stored",
                    session_id,
                    conversation.id,
                    newest,
                )
                conversation = store.start_new_conversation(key)
        return conversation.id

    def _claim_legacy(self, session_id: str, key: str, holds: Callable[[str, str], bool]) -> None:
        """Move the conversations stored under the bare session id (before namespaces) whose
        newest message this host's transcript holds into this namespace; others stay."""
        store = self.store
        for conversation_id in store.session_conversation_ids(session_id):
            newest = store.newest_message_uid(conversation_id)
            if newest is not None and holds(session_id, newest):
                store.claim_conversation(conversation_id, key)
                _log.info("lcm: session %s: claimed conversation %d", session_id, conversation_id)

    def _forget_caches(self) -> None:
        self._checked = None
        self._last_assembly = None
        self._selection = None
        self._expansion = None
        self._items = None
        self._stored_uids = set()
        self._rendered = {}
        self._rendered_tokens = {}
        self._summary_tokens = {}

    # Lifecycle.

    def on_session_start(self, session_id: str, **kwargs: Any) -> None:
        self._use_session(session_id)
        self._conversation()

    def bootstrap(
        self, session_id: str, messages: list[Message], runtime_settings: Any = None
    ) -> BootstrapResult:
        self._use_session(session_id)
        conversation_id = self._conversation()
        stored = self.store.conversation(conversation_id).message_count
        if stored and not self._shares_history(conversation_id, messages):
            _log.warning(
                "lcm: session %s: the history to bootstrap does not hold the stored "
                "conversation's newest message; starting a new conversation for it",
                session_id,
            )
            conversation_id = self.store.start_new_conversation(self.session_key(session_id)).id
            self._conversation_id = conversation_id
            self._forget_caches()
            stored = 0
        if stored == 0:
            imported = self._store_messages(messages, whole_history=True)
        else:  # a history we hold part of: fill the gaps in place
            stamped = [
                m
                if not isinstance(m, dict) or m.get("message_uid")
                else {**m, "message_uid": derived_uid(conversation_id, n, m)}
                for n, m in enumerate(messages)
            ]
            imported = self._catch_up(stamped, limit=None)
        return BootstrapResult(bootstrapped=True, imported_messages=imported)

    def _shares_history(self, conversation_id: int, messages: Sequence[Any]) -> bool:
        """Whether ``messages`` holds the conversation's newest stored message (a history
        without uids cannot be told apart: it is taken as the same one)."""
        uids = {u for m in messages if (u := _uid(m))}
        newest = self.store.newest_message_uid(conversation_id)
        return not uids or newest is None or newest in uids

    def ingest(self, session_id: str, messages: list[Message]) -> IngestResult:
        self._use_session(session_id)
        return IngestResult(ingested=True, count=self._store_messages(messages))

    def on_session_reset(self) -> None:
        """A new conversation generation; idempotent (a current conversation that holds no
        message is kept), so the host may repeat it when a crash cut a reset short."""
        super().on_session_reset()
        key = self.session_key(self._session_id or DEFAULT_SESSION_ID)
        current = self.store.current_conversation(key)
        if current.message_count:
            current = self.store.start_new_conversation(key)
        self._conversation_id = current.id
        self._forget_caches()

    def prepare_subagent_spawn(
        self, parent_session_id: str, child_session_id: str, context_mode: str, ttl_s: float | None
    ) -> Callable[[], None] | None:
        """Let the child read the parent's history (and, depth permitting, its ancestors')."""
        cfg = self.settings
        if (problem := ttl_problem(ttl_s)) is not None:
            raise ValueError(f"ttl_s {problem}")
        if cfg.subagent_max_depth <= 0:
            return None
        now = time.time()
        expires = now + ttl_s if ttl_s else None
        parent_key, child_key = (
            self.session_key(parent_session_id),
            self.session_key(child_session_id),
        )
        plans = [(parent_key, cfg.subagent_max_depth, cfg.subagent_token_cap)]
        for inherited in self.store.active_grants(parent_key, now):
            if inherited.max_depth > 1:
                left = max(0, inherited.token_cap - inherited.tokens_used)
                plans.append(
                    (
                        inherited.parent_session_id,
                        inherited.max_depth - 1,
                        min(left, cfg.subagent_token_cap),
                    )
                )
        ids = [
            self.store.create_grant(Grant(0, child_key, parent, depth, cap, 0, expires))
            for parent, depth, cap in plans
        ]

        def rollback() -> None:
            for grant_id in ids:
                self.store.revoke_grants(child_key, grant_id)

        return rollback

    def on_subagent_ended(self, child_session_id: str, reason: str) -> None:
        self.store.revoke_grants(self.session_key(child_session_id))

    def clone_for_agent(self) -> LcmEngine:
        """A fresh engine on the same database, with its own connection and budget figures."""
        clone = type(self)(config=self.settings, context=self.context)
        clone.model_thresholds = dict(self.model_thresholds)
        for attr in ("threshold_percent", "context_length", "threshold_tokens"):
            setattr(clone, attr, getattr(self, attr))
        if "_configured_threshold_percent" in self.__dict__:
            clone._configured_threshold_percent = self._configured_threshold_percent
        return clone

    def __deepcopy__(self, memo: dict[int, Any]) -> LcmEngine:
        return self.clone_for_agent()

    def dispose(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
        self._conversation_id = None
        self._forget_caches()

    # Budget.

    def update_from_response(self, usage: dict[str, Any]) -> None:
        def figure(key: str) -> int:
            value = usage.get(key) if isinstance(usage, dict) else None
            return max(0, int(value)) if isinstance(value, int | float) else 0

        self.last_prompt_tokens = figure("prompt_tokens")
        self.last_completion_tokens = figure("completion_tokens")
        self.last_total_tokens = figure("total_tokens") or (
            self.last_prompt_tokens + self.last_completion_tokens
        )

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        limit = self._compaction_threshold()
        if not limit:
            return False
        tokens = self.last_prompt_tokens if prompt_tokens is None else prompt_tokens
        return (
            bool(self.threshold_tokens) and tokens >= self.threshold_tokens
        ) or self._context_tokens() >= limit

    def should_compress_preflight(self, messages: Sequence[Message]) -> bool:
        limit = self._compaction_threshold()
        return bool(limit) and self._context_tokens() >= limit

    def _compaction_threshold(self) -> int:
        """The threshold, lowered to the conversation's room in a request when that is smaller
        (system prompt and tool schemas take their share of the window first)."""
        candidates = [t for t in (self.threshold_tokens, self._room) if t > 0]
        return min(candidates) if candidates else 0

    def _context_tokens(self) -> int:
        return self.store.conversation(self._conversation()).context_tokens

    # Compaction.

    def compress(
        self,
        messages: list[Message],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
        runtime_settings: Any = None,
        deadline: float | None = None,
    ) -> CompactResult:
        """Run one bounded sweep; the history stays the engine's (``messages`` is None)."""
        self._catch_up(messages)
        compactor = Compactor(self.store, self.settings, self.context)
        report = compactor.sweep(
            self._conversation(), self._compaction_threshold(), force, focus_topic, deadline
        )
        if report.passes:
            self.compression_count += 1
            self.store.tidy_search_index()
        reason = report.error or (
            f"{report.leaf_passes} leaf and {report.condensed_passes} condensed passes; "
            f"stopped: {report.stopped}"
        )
        return CompactResult(
            ok=report.error is None,
            compacted=report.passes > 0,
            reason=reason,
            tokens_before=report.tokens_before,
            tokens_after=report.tokens_after,
            messages=None,
        )

    # Assembly.

    def select_context(
        self,
        request_messages: list[Message],
        *,
        conversation_messages: Sequence[Message] | None = None,
        incoming_message: Message | None = None,
        budget_tokens: int = 0,
        runtime_settings: Any = None,
    ) -> AssembleResult | None:
        """Summaries then the fresh tail, within the budget; None when nothing is stored."""
        self._catch_up(conversation_messages or request_messages)
        conversation = self.store.conversation(self._conversation())
        head = leading_system(request_messages)
        budget = self._budget(budget_tokens, runtime_settings, head)
        key = (conversation.id, conversation.context_version, budget)
        cached = self._last_assembly
        if cached is not None and cached[0] == key and cached[1] == head:
            return _fresh_copy(cached[2])
        items = self._context_items(conversation)
        if not items:
            return None
        selection = self._extended_selection(conversation.id, head, budget, items)
        if selection is None:
            selection = self._full_selection(conversation.id, head, budget, items)
        self._selection = selection
        self._last_assembly = (key, head, selection.result)
        return _fresh_copy(selection.result)

    def _full_selection(
        self, conversation_id: int, head: list[Message], budget: int, items: list[ContextItem]
    ) -> _Selection:
        """Expand, render, shorten the task and fit the budget from scratch."""
        if budget < 1 << 61:
            self._room = max(1, budget - self._addition_cost() - _count_head(head, self.context))
            expanded = self._expanded(items, budget)
        else:
            expanded = items
        rendered = self._render(expanded)
        shortened = self._shorten_task(expanded, rendered, budget)
        summaries = {
            id(m): i.ref_id for m, i in zip(rendered, expanded, strict=True) if i.kind == "summary"
        }
        role = self.settings.summary_role
        sent_summaries: list[int] = []

        def finalize(kept: list[Message]) -> list[Message]:
            sent_summaries[:] = [summaries[id(m)] for m in kept if id(m) in summaries]
            return merge_leading(kept, lambda m: id(m) in summaries, role, self._join_summaries)

        task = pinned_task(expanded)
        fit = fit_to_budget(
            head,
            rendered,
            [self._rendered_tokens[id(m)] for m in rendered],
            budget - self._addition_cost(),
            self._exact_count,
            finalize,
            task=task,
        )
        covers: list[str | tuple[str, str]] = [
            span for s in sent_summaries if (span := self._summary_span(s)) is not None
        ]
        return _Selection(
            conversation_id,
            budget,
            head,
            items,
            sum(i.token_count for i in items),
            self._expansion,
            rendered,
            task,
            shortened,
            fit,
            _result(fit, covers),
        )

    def _extended_selection(
        self, conversation_id: int, head: list[Message], budget: int, items: list[ContextItem]
    ) -> _Selection | None:
        """The last selection plus the messages appended since, when that is what the full
        path would give (see :func:`extend_fit`): the same request head and budget, the held
        items extended by appends only, the same summaries opened, the task unchanged or a
        new one that needs no shortening, an additive counter; None otherwise."""
        last = self._selection
        if (
            last is None
            or last.conversation_id != conversation_id
            or last.budget != budget
            or budget >= 1 << 61
            or len(items) <= len(last.items)
            or last.head != head
            or not self._additive()
            or items[: len(last.items)] != last.items
        ):
            return None
        new_items = items[len(last.items) :]
        if any(i.kind != "message" for i in new_items):
            return None
        item_tokens = last.item_tokens + sum(i.token_count for i in new_items)
        if not self._expansion_holds(last.expansion, item_tokens, budget):
            return None
        task = pinned_task(new_items)
        task = last.task if task is None else len(last.rendered) + task
        if task != last.task and last.shortened:
            return None
        appended = self._render_appended(new_items)
        rendered = last.rendered + appended
        if (
            task is not None
            and task != last.task
            and self._needs_shortening(rendered[task], budget)
        ):
            return None
        fit = extend_fit(
            last.fit,
            head,
            appended,
            sum(self._rendered_tokens[id(m)] for m in appended),
            budget - self._addition_cost(),
        )
        if fit is None:
            return None
        result = _result(fit, list(last.result.covers))
        return _Selection(
            conversation_id,
            budget,
            head,
            items,
            item_tokens,
            last.expansion,
            rendered,
            task,
            last.shortened,
            fit,
            result,
        )

    def _expansion_holds(
        self,
        expansion: tuple[tuple[int, ...], dict[int, list[ContextItem]], int] | None,
        item_tokens: int,
        budget: int,
    ) -> bool:
        """Whether :meth:`_expanded` keeps ``expansion`` for items of ``item_tokens`` whose
        summaries it was chosen for (the same test, on the sum it would take)."""
        if expansion is None or expansion is not self._expansion:
            return False
        return expansion[2] <= max(self._expansion_room(item_tokens, budget), 0)

    def _expanded(self, items: list[ContextItem], budget: int) -> list[ContextItem]:
        """The items with condensed summaries opened into their sources as far as the
        request stays under the compaction threshold (a request past it would start a
        compaction each turn), up to ``summary_budget_fraction`` of the budget; a margin
        of ``EXPAND_MARGIN`` of the budget is left for what the count here does not see
        (tool schemas, the stored counts' placeholder ids)."""
        room = self._expansion_room(sum(i.token_count for i in items), budget)
        summaries = [i for i in items if i.kind == "summary"]
        key = tuple(i.ref_id for i in summaries)
        held = self._expansion
        # The choice is kept while it still fits: it changes when a compaction changes the
        # summaries or the context outgrows it, not with every message (each change is a
        # new summary message to count).
        if held is None or held[0] != key or held[2] > max(room, 0):
            opened, extra = expand_summaries(summaries, room, self._summary_sources)
            held = self._expansion = (key, opened, extra)
        if not held[1]:
            return items
        opened = held[1]
        return [
            shown
            for i in items
            for shown in (opened.get(i.ref_id, [i]) if i.kind == "summary" else [i])
        ]

    def _expansion_room(self, item_tokens: int, budget: int) -> int:
        """The extra tokens opened summaries may take next to items of ``item_tokens``."""
        ceiling = min(self._compaction_threshold() or self._room, self._room)
        spare = ceiling - item_tokens - int(budget * EXPAND_MARGIN)
        return min(spare, int(budget * self.settings.summary_budget_fraction))

    def _summary_sources(self, item: ContextItem) -> list[ContextItem]:
        """A condensed summary's source summaries as context items (cached: never change)."""
        if item.ref_id not in self._sources:
            if len(self._sources) > 4_096:
                self._sources.clear()
            kind, ids = self.store.summary_source_ids(item.ref_id)
            found = self.store.summaries_by_id(ids) if kind == "condensed" else {}
            self._sources[item.ref_id] = [
                ContextItem(item.ordinal, "summary", s.id, s.token_count, s.depth, "")
                for s in (found[i] for i in ids if i in found)
            ]
        return self._sources[item.ref_id]

    def _shorten_task(self, items: list[ContextItem], rendered: list[Message], budget: int) -> bool:
        """Swap in a shortened copy of the task (the newest user message) when it takes more
        than a quarter of the budget: head and tail verbatim, a marked summary between.
        Returns whether it did."""
        if budget >= 1 << 61:
            return False
        index = pinned_task(items)
        if index is None:
            return False
        message = rendered[index]
        if not self._needs_shortening(message, budget):
            return False
        limit = task_limit(budget - self._addition_cost())
        key = (message.get("message_uid"), limit)
        if key not in self._shortened:
            summarize = summarize_with(self.context.summarize)
            self._shortened = {
                key: shorten_task(message, limit, self.context.count_tokens, summarize)
            }
        shortened = self._shortened[key]
        rendered[index] = shortened
        self._rendered_tokens[id(shortened)] = self.context.count_tokens(shortened)
        return True

    def _needs_shortening(self, task: Message, budget: int) -> bool:
        """Whether the rendered task message takes more than its share of ``budget``."""
        limit = task_limit(budget - self._addition_cost())
        return self._rendered_tokens[id(task)] > limit

    def _summary_span(self, summary_id: int) -> tuple[str, str] | None:
        """The uids of the first and last message a summary covers (cached: spans never change)."""
        if summary_id in self._spans:
            return self._spans[summary_id]
        kind, source_ids = self.store.summary_source_ids(summary_id)
        span: tuple[str, str] | None = None
        if source_ids and kind == "leaf":
            found = self.store.messages_by_id({source_ids[0], source_ids[-1]})
            first, last = found.get(source_ids[0]), found.get(source_ids[-1])
            if first is not None and last is not None:
                span = (first.message_uid, last.message_uid)
        elif source_ids:
            first_span = self._summary_span(source_ids[0])
            last_span = self._summary_span(source_ids[-1])
            if first_span is not None and last_span is not None:
                span = (first_span[0], last_span[1])
        self._spans[summary_id] = span
        return span

    def _context_items(self, conversation: Conversation) -> list[ContextItem]:
        """The active context: the held items while the conversation row still shows their
        version, else read whole. (Items read after the row may be newer than its version,
        never older: a later version check or append then finds a mismatch and reads again.)
        """
        held = self._items
        if held is not None and held[:2] == (conversation.id, conversation.context_version):
            return held[2]
        items = self.store.context_items(conversation.id)
        self._items = (conversation.id, conversation.context_version, items)
        return items

    def _note_appended(self, conversation_id: int, appended: Appended) -> None:
        """Extend the held context with this engine's own append when the held items are
        the version the append started from (their messages rendered from what was stored,
        so assembly need not read them back); otherwise drop the held items."""
        if appended.version is None:
            return
        held = self._items
        if held is None or held[:2] != (conversation_id, appended.version - 1):
            self._items = None
            return
        self._keep_rendered(appended.messages)
        self._items = (conversation_id, appended.version, held[2] + list(appended.items))

    def _budget(self, budget_tokens: int, runtime_settings: Any, head: list[Message]) -> int:
        """What the whole request, ``head`` (its system messages) included, may hold. A
        host's budget (``budget_tokens``, or the runtime settings' limit) is the
        conversation's: the system prompt and the tools are off the window already
        (docs/runtime.md), so ``head`` comes on top of it; without one, the window."""
        given = budget_tokens if budget_tokens and budget_tokens > 0 else None
        limits = getattr(runtime_settings, "limits", None)
        if given is None and limits is not None and getattr(limits, "budget_tokens", None):
            given = limits.budget_tokens
        if given is not None:
            return int(given) + _count_head(head, self.context)
        return self.context_length or 1 << 62

    def _render(self, items: Sequence[Any]) -> list[Message]:
        """The messages of the context items; rendered ones come from a cache of the context."""
        keys = [(i.kind, i.ref_id) for i in items]
        cache = self._rendered
        missing_messages = [k[1] for k in keys if k not in cache and k[0] == "message"]
        missing_summaries = [k[1] for k in keys if k not in cache and k[0] == "summary"]
        self._render_messages(missing_messages)
        role = self.settings.summary_role
        for summary_id, summary in self.store.summaries_by_id(missing_summaries).items():
            cache[("summary", summary_id)] = summary_message(summary, role)
        self._forget_rendered(set(keys))
        counts = {id(cache[k]): i.token_count for k, i in zip(keys, items, strict=True)}
        for kind, ref_id in keys:
            if kind == "summary":  # stored counts used a placeholder id; count the real text
                message = cache[(kind, ref_id)]
                known = self._summary_tokens.get(ref_id)
                if known is None:
                    known = self._summary_tokens[ref_id] = self._message_tokens(message)
                counts[id(message)] = known
        self._rendered_tokens = counts
        return [cache[k] for k in keys]

    def _render_appended(self, items: list[ContextItem]) -> list[Message]:
        """The messages of context items appended after the last request (messages only),
        their counts added to the current ones: :meth:`_render` for a tail whose summaries
        and earlier messages are rendered and counted already."""
        cache = self._rendered
        self._render_messages([i.ref_id for i in items if ("message", i.ref_id) not in cache])
        rendered = [cache[("message", i.ref_id)] for i in items]
        for message, item in zip(rendered, items, strict=True):
            self._rendered_tokens[id(message)] = item.token_count
        return rendered

    def _render_messages(self, message_ids: list[int]) -> None:
        """Read the stored messages ``message_ids`` and cache them as the context shows them."""
        self._keep_rendered(self.store.messages_by_id(message_ids).values())

    def _keep_rendered(self, stored_messages: Iterable[StoredMessage]) -> None:
        """Cache stored messages as the context shows them (a stub for a large output)."""
        preview = self.settings.large_output_preview_chars
        for stored in stored_messages:
            self._rendered[("message", stored.id)] = context_message(stored, preview)

    def _forget_rendered(self, current: set[tuple[str, int]]) -> None:
        """Drop the rendered messages that left the context (a message that did never comes
        back: it is under a summary now) and the summaries past ``RENDERED_SUMMARIES_KEPT``
        that did, oldest first (an opened condensed summary may close again). Only once
        that many have left: a look at every entry on each request cost more than it saved."""
        cache = self._rendered
        if len(cache) <= len(current) + RENDERED_SUMMARIES_KEPT:
            return
        summaries = [k for k in cache if k[0] == "summary" and k not in current]
        excess = max(0, len(summaries) - RENDERED_SUMMARIES_KEPT)
        gone = {k for k in cache if k[0] != "summary" and k not in current}
        gone.update(summaries[:excess])
        for key in gone:
            del cache[key]
            if key[0] == "summary":
                self._summary_tokens.pop(key[1], None)

    def _message_tokens(self, message: Message) -> int:
        known = self._rendered_tokens.get(id(message))
        if known is not None:
            return known
        content = message.get("content")
        if set(message) <= {"role", "content"} and isinstance(content, str):
            key = (message.get("role"), content)
            if key not in self._text_tokens:
                if len(self._text_tokens) > 64:
                    self._text_tokens.clear()
                self._text_tokens[key] = self.context.count_tokens(message)
            return self._text_tokens[key]
        return self.context.count_tokens(message)

    def _exact_count(self, messages: list[Message]) -> int:
        """``context.count_tokens(messages)``, from per-message counts when the counter is
        additive (checked once), so unchanged messages are not tokenized again."""
        overhead = self._count_overhead()
        if overhead is None:
            return self.context.count_tokens(messages)
        return sum(self._message_tokens(m) for m in messages) + overhead

    def _additive(self) -> bool:
        """Whether a list's count is its messages' counts plus a constant (measured once)."""
        return self._count_overhead() is not None

    def _count_overhead(self) -> int | None:
        """The constant a list's count adds to its messages' counts; None when the counter is
        not additive (measured once)."""
        if self._list_overhead is False:
            self._list_overhead = _measure_list_overhead(self.context.count_tokens)
        overhead = self._list_overhead
        return None if overhead is None or isinstance(overhead, bool) else overhead

    def _addition_cost(self) -> int:
        """Tokens of the longer system prompt addition (counted once): what a request keeps
        free for it."""
        if self._addition_tokens is None:
            self._addition_tokens = self.context.count_tokens(SYSTEM_PROMPT_ADDITION)
        return self._addition_tokens

    # Storing messages.

    def _store_messages(self, messages: Sequence[Any], whole_history: bool = False) -> int:
        """Store messages (known uids skipped). Uid-less messages get uids derived from their
        position: in the whole history for a bootstrap, after the stored ones otherwise."""
        conversation_id = self._conversation()
        valid = [m for m in messages if isinstance(m, dict)]
        if len(valid) != len(messages):
            _log.warning(
                "lcm: skipped %d entries that are not message dicts", len(messages) - len(valid)
            )
        if not valid:
            return 0
        position = None
        if any(not m.get("message_uid") for m in valid):
            position = (
                0 if whole_history else self.store.conversation(conversation_id).message_count
            )
        count = self.context.count_tokens
        added = 0
        for start in range(0, len(valid), INGEST_BATCH):
            batch = valid[start : start + INGEST_BATCH]
            # Counted here, on the calling thread: handing batches to counting threads cost
            # more in hand-offs and GIL switches than the overlap with the writes saved.
            records = [
                self._record(
                    m,
                    conversation_id,
                    None if position is None else position + start + n,
                    count(m),
                )
                for n, m in enumerate(batch)
            ]
            appended = self.store.append(conversation_id, records)
            self._note_appended(conversation_id, appended)
            if len(self._stored_uids) > CATCH_UP_LIMIT:  # a bulk load: not worth holding
                self._stored_uids = set()
            self._stored_uids.update((r.message_uid, r.digest) for r in records)
            added += appended.count
        return added

    def _record(
        self, message: Message, conversation_id: int, position: int | None, tokens: int
    ) -> NewMessage:
        uid = message.get("message_uid")
        if not isinstance(uid, str) or not uid:
            uid = derived_uid(conversation_id, position or 0, message)
        elif (problem := uid_problem(uid)) is not None:
            raise ValueError(
                f"message_uid {uid[:40]!r} {problem}: no store keeps it as given; give ids of "
                f"at most {MAX_UID_CHARS} characters without NUL, or none (one is derived)"
            )
        stub_tokens = None
        if message.get("role") == "tool" and tokens > self._large_output_limit():
            stub = large_output_stub(message, uid, tokens, self.settings.large_output_preview_chars)
            stub_tokens = self.context.count_tokens(stub)
        written = message_time(message)  # the conversation's own clock when it has one
        created = time.time() if written is None else written
        return to_new_message(message, uid, tokens, created, stub_tokens)

    def _large_output_limit(self) -> int:
        """The configured threshold, or half the conversation's room in a request when that is
        smaller: a tool output that cannot fit next to its turn is useless inline."""
        limit = self.settings.large_output_tokens
        return min(limit, max(256, self._room // 2)) if self._room else limit

    def _catch_up(self, messages: Sequence[Any], limit: int | None = CATCH_UP_LIMIT) -> int:
        """Store the live view's messages the engine lacks, each in its history position;
        returns how many. A kill between the host's commit and our ingest leaves such a gap,
        and on resume the next message is ingested before it.

        After one check only the messages past the checked mark are looked up (one index
        look-up per uid: O(new messages)). Without a mark (a new process, a rewritten view)
        the view is walked back from the newest message until a known uid was met and as
        many unknown ones were found as the view holds more uids than the store.
        """
        if not messages:
            return 0
        conversation_id = self._conversation()
        start = self._checked_through(messages)
        if start is not None:
            missing = [
                i
                for i in range(start, len(messages))
                if _uid(messages[i]) and not self._known(conversation_id, messages[i])
            ]
        else:
            missing = self._walk_back(messages, conversation_id, limit)
        self._stored_uids = set()  # the mark set below covers them from now on
        added = self._insert_missing(messages, missing, conversation_id) if missing else 0
        newest = next((i for i in range(len(messages) - 1, -1, -1) if _uid(messages[i])), None)
        self._checked = None if newest is None else (newest, _uid(messages[newest]))
        return added

    def _checked_through(self, messages: Sequence[Any]) -> int | None:
        """Index after the checked mark, when the view still holds it there."""
        if self._checked is None:
            return None
        index, uid = self._checked
        if index < len(messages) and _uid(messages[index]) == uid:
            return index + 1
        return None

    def _walk_back(
        self, messages: Sequence[Any], conversation_id: int, limit: int | None
    ) -> list[int]:
        """Indexes (oldest first) of the view's messages whose versions are not stored."""
        versions = _version_count(messages)
        if not versions:  # nothing the store could lack: no need to read the message count
            return []
        expected = versions - self.store.conversation(conversation_id).message_count
        missing: list[int] = []
        seen: set[tuple[str, str]] = set()
        met_known = False
        for i in range(len(messages) - 1, -1, -1):
            uid = _uid(messages[i])
            if not uid:
                continue
            version = (uid, message_digest(messages[i]))
            if version in seen:
                continue
            seen.add(version)
            if self._known(conversation_id, messages[i]):
                met_known = True
            else:
                missing.append(i)
            if met_known and len(missing) >= expected:
                break
            if limit is not None and len(seen) >= limit:
                break
        missing.reverse()
        return missing

    def _known(self, conversation_id: int, message: Message) -> bool:
        """Whether this version of ``message`` (its uid and what it says) is stored."""
        version = (message["message_uid"], message_digest(message))
        return version in self._stored_uids or self.store.known_version(conversation_id, *version)

    def _insert_missing(
        self, messages: Sequence[Any], missing: list[int], conversation_id: int
    ) -> int:
        """Store runs of missing messages, each right after its stored predecessor."""
        insert = getattr(self.store, "insert_messages_after", None)
        if insert is None and not self._warned_no_insert:
            self._warned_no_insert = True
            _log.warning("lcm: this store cannot insert in place; missed messages are appended")
        wanted = set(missing)
        added = 0
        run: list[int] = []
        for i in missing:
            if run and any(_uid(messages[j]) and j not in wanted for j in range(run[-1] + 1, i)):
                added += self._insert_run(messages, run, conversation_id, insert)
                run = []
            run.append(i)
        added += self._insert_run(messages, run, conversation_id, insert)
        return added

    def _insert_run(
        self,
        messages: Sequence[Any],
        run: list[int],
        conversation_id: int,
        insert: Callable[..., int] | None,
    ) -> int:
        before = next((u for j in range(run[0] - 1, -1, -1) if (u := _uid(messages[j]))), None)
        records = [
            self._record(messages[i], conversation_id, None, self.context.count_tokens(messages[i]))
            for i in run
        ]
        if insert is None:
            return self.store.append_messages(conversation_id, records)
        return insert(conversation_id, before, records)

    # Tools.

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return json.loads(json.dumps(TOOL_SCHEMAS))

    def handle_tool_call(self, name: str, args: dict[str, Any], **kwargs: Any) -> str:
        """Run a recall tool; bad arguments are a JSON error naming the argument."""
        if not isinstance(name, str) or name not in TOOL_NAMES:
            return json.dumps({"error": f"Unknown context engine tool: {str(name)[:80]}"})
        if isinstance(args, str):
            try:
                args = loads_json(args, what="the arguments") if args.strip() else {}
            except ValueError as exc:  # invalid JSON, or nested/sized past the limits
                return json.dumps({"error": f"{name}: arguments are not valid JSON: {exc}"})
        # Bad arguments, a spent budget and no match answer as JSON (ToolRunner.run); any
        # other exception is a fault of the engine and goes to the host's fault table
        # (docs/reliability.md, rule (a)).
        runner = ToolRunner(self.store, self.settings, self.context.count_tokens)
        return result_json(runner.run(name, args, self._caller()))

    def _caller(self) -> CallerAccess:
        """What the calling session may read, read when the tool first needs it."""
        session = self.session_key(self._session_id or DEFAULT_SESSION_ID)
        self._conversation()
        return CallerAccess(self.store, session, time.time())

    # Status.

    def get_status(self) -> dict[str, Any]:
        status = super().get_status()
        store = self.store
        path = store.path
        if path not in _INTEGRITY:
            _INTEGRITY[path] = store.integrity_check()
        status.update(
            store_path=path,
            store_bytes=store.size_bytes(),
            integrity=_INTEGRITY[path],
            session_id=self._session_id,
            **store.stats(self._conversation()),
        )
        return status


def _uid(message: Any) -> str | None:
    """The message's uid, or None (not a message dict, or never stored by the host)."""
    if not isinstance(message, dict):
        return None
    uid = message.get("message_uid")
    return uid if isinstance(uid, str) and uid else None


def _version_count(messages: Sequence[Any]) -> int:
    """Distinct (uid, digest) versions among ``messages``; only messages whose uid occurs
    more than once are hashed (a whole view is walked once per new process)."""
    by_uid: dict[str, list[Message]] = {}
    for message in messages:
        if uid := _uid(message):
            by_uid.setdefault(uid, []).append(message)
    return sum(
        1 if len(group) == 1 else len({message_digest(m) for m in group})
        for group in by_uid.values()
    )


def _measure_list_overhead(count: Callable[[Any], int]) -> int | None:
    """The constant a list count adds to the sum of its messages, or None if there is none."""
    a = {"role": "user", "content": "alpha beta"}
    b = {"role": "assistant", "content": "gamma"}
    overhead = count([a]) - count(a)
    if count([a, b]) != count(a) + count(b) + overhead or count([]) != overhead:
        return None
    return overhead


#: Share of the budget left free when condensed summaries are opened at assembly.
EXPAND_MARGIN = 0.05


def _count_head(head: list[Message], context: EngineContext) -> int:
    return context.count_tokens(head) if head else 0


def _fresh_copy(result: AssembleResult) -> AssembleResult:
    """An equal result whose lists and dicts the host may modify freely (``map``: a third
    cheaper than a comprehension, for the ~75 messages of every request)."""
    return result.model_copy(
        update={"messages": list(map(dict, result.messages)), "covers": list(result.covers)}
    )


def _result(fit: Fit, covers: list[str | tuple[str, str]]) -> AssembleResult:
    """The result of a fit. Built from our own rendered messages and counts: validating them
    again (every message dict of every request) was a sixth of ``select_context``; the host
    checks the selection it gets in any case."""
    return AssembleResult.model_construct(
        messages=fit.messages,
        estimated_tokens=fit.tokens,
        system_prompt_addition=system_prompt_addition(bool(covers)),
        covers=covers,
    )


@dataclass(slots=True)
class _Selection:
    """One request's assembly and what it was made from: the next request extends it when
    only messages were appended in between (:meth:`LcmEngine._extended_selection`)."""

    conversation_id: int
    budget: int
    head: list[Message]
    #: The active context as held (before summaries were opened), and their stored counts.
    items: list[ContextItem]
    item_tokens: int
    #: The engine's expansion choice when it was made (``LcmEngine._expansion``).
    expansion: tuple[tuple[int, ...], dict[int, list[ContextItem]], int] | None
    #: The rendered messages of the items as opened, the task shortened if it was.
    rendered: list[Message]
    task: int | None
    shortened: bool
    fit: Fit
    result: AssembleResult


def _standalone_context() -> EngineContext:
    """Services for an engine built without a host: tiktoken counting, truncating summaries."""
    from ctxengine_host.paths import user_data_dir
    from ctxengine_host.tokens import TokenCounter

    counter = TokenCounter()

    def truncate(content: Any, target_tokens: int, **_: Any) -> SummaryResult:
        text = (
            content
            if isinstance(content, str)
            else "\n".join(f"{m.get('role')}: {m.get('content') or ''}" for m in content)
        )
        cut = text[: max(1, target_tokens) * 4]
        return SummaryResult(
            text=cut, level=2, output_tokens=counter.count_text(cut), backend="truncate"
        )

    return EngineContext(
        engine_name="lcm",
        data_dir=user_data_dir() / "engines" / "lcm",
        count_tokens=counter.count_any,
        summarize=truncate,
    )
