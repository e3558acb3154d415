"""What the engine needs from a history store: records and the ``LcmStore`` protocol.

The SQLite implementation lives in :mod:`ctxengine_lcm.sqlite_store`; a server backend
implements the same protocol. Every method that changes the active context is atomic:
after a crash the context is the old one or the new one, never a mix.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, NamedTuple, Protocol

ItemKind = Literal["message", "summary"]
SummaryKind = Literal["leaf", "condensed"]


class NewMessage(NamedTuple):
    """A message about to be stored: the verbatim dict split into searchable text and the rest.

    A named tuple, in the stores' column order: ingest builds one per message, and a
    frozen dataclass's construction cost a tenth of shaping a row."""

    message_uid: str
    role: str
    content: str
    extra_json: str
    tool_call_id: str | None
    tool_name: str | None
    token_count: int
    #: Tokens the message costs in the active context (a large output costs its stub only).
    context_tokens: int
    externalized: bool
    created_at: float
    #: The version of the message (``ctxengine_host.tokens.message_digest``): a message's
    #: identity is (uid, digest), so a new version under a known uid is stored too.
    digest: str = ""

    def columns(self) -> tuple[Any, ...]:
        """The fields in order, as the stores' message columns take them."""
        return tuple(self)


class StoredMessage(NamedTuple):
    """A stored message row (a named tuple: reads build one per row, in a quarter of a
    frozen dataclass's time)."""

    id: int
    conversation_id: int
    seq: int
    message_uid: str
    role: str
    content: str
    extra_json: str
    tool_call_id: str | None
    tool_name: str | None
    token_count: int
    context_tokens: int
    externalized: bool
    created_at: float
    digest: str = ""


class StoredSummary(NamedTuple):
    """A stored summary row (a named tuple, as :class:`StoredMessage`)."""

    id: int
    conversation_id: int
    kind: SummaryKind
    depth: int
    content: str
    token_count: int
    earliest_at: float
    latest_at: float
    first_seq: int
    last_seq: int
    descendant_messages: int
    descendant_summaries: int
    source_tokens: int
    created_at: float
    summarizer_level: int


class StatementTimedOut(RuntimeError):
    """A read statement was interrupted at its caller's deadline (:meth:`LcmStore.read_deadline`);
    what it read is lost, the store is unchanged."""


@dataclass(frozen=True)
class ContextItem:
    """One entry of a conversation's ordered active context."""

    ordinal: int
    kind: ItemKind
    ref_id: int
    token_count: int
    #: Summary depth (0 leaf) or -1 for a raw message.
    depth: int
    #: The raw message's role ("" for a summary).
    role: str


@dataclass(frozen=True)
class Conversation:
    id: int
    session_id: str
    generation: int
    context_tokens: int
    context_version: int
    message_count: int


@dataclass(frozen=True)
class Appended:
    """What one append stored: the new messages (seq order), their context items, and the
    context version the append made (None: every uid was known, nothing changed).

    Every change of a conversation's context moves its version by one in the same
    transaction, so a caller holding the items of ``version - 1`` can extend them with
    ``items`` instead of reading the whole context again.

    ``messages`` and ``items`` are built from the new rows when first read: a bulk load,
    whose caller holds no context to extend, reads neither and builds none of them.
    """

    version: int | None = None
    conversation_id: int = 0
    first_seq: int = 0
    #: (ordinal, message id) of each new message's context item, in seq order.
    item_rows: tuple[tuple[int, int], ...] = ()
    fresh: tuple[NewMessage, ...] = ()

    @property
    def count(self) -> int:
        """How many messages were new."""
        return len(self.fresh)

    @cached_property
    def items(self) -> tuple[ContextItem, ...]:
        return tuple(
            ContextItem(ordinal, "message", ref, m.context_tokens, -1, m.role)
            for (ordinal, ref), m in zip(self.item_rows, self.fresh, strict=True)
        )

    @cached_property
    def messages(self) -> tuple[StoredMessage, ...]:
        first, conversation = self.first_seq, self.conversation_id
        return tuple(  # positional: a keyword call through vars() costs twice as much per row
            StoredMessage(ref, conversation, first + n, *m.columns())
            for n, ((_, ref), m) in enumerate(zip(self.item_rows, self.fresh, strict=True))
        )


@dataclass(frozen=True)
class NewSummary:
    kind: SummaryKind
    depth: int
    content: str
    token_count: int
    earliest_at: float
    latest_at: float
    first_seq: int
    last_seq: int
    descendant_messages: int
    descendant_summaries: int
    source_tokens: int
    summarizer_level: int
    #: The message ids (leaf) or summary ids (condensed) it covers, in order.
    source_ids: tuple[int, ...]


class SearchHit(NamedTuple):
    """One match of a search (a named tuple: a search builds one per candidate, and a
    frozen dataclass costs three times as much to build and to copy with a change)."""

    kind: ItemKind
    id: int
    conversation_id: int
    created_at: float
    text: str
    role: str = ""
    seq: int = 0
    depth: int = -1
    score: float | None = None
    #: Whether ``covered_by`` was read with the hit (a backend may do it in the same
    #: statement to save a round trip); when False, ask ``parent_summaries_of_messages``.
    lineage: bool = False
    #: The summary covering a message hit (None: none), when ``lineage`` is True.
    covered_by: int | None = None
    #: Whether a message hit is a tool call (None: not read with the hit): only calls
    #: have results to look up.
    tool_call: bool | None = None


class FulltextSearch(NamedTuple):
    """The arguments of one :meth:`LcmStore.search_fulltext` call, to send several at once
    (:meth:`LcmStore.search_fulltext_many`)."""

    conversation_ids: Sequence[int]
    fts_query: str
    target: Literal["messages", "summaries"]
    since: float | None
    until: float | None
    limit: int
    by_relevance: bool
    relevance_window: int | None
    whole_chars: int = 1000
    preview_chars: int | None = None
    all_terms: str | None = None


@dataclass
class Grant:
    id: int
    child_session_id: str
    parent_session_id: str
    max_depth: int
    token_cap: int
    tokens_used: int
    expires_at: float | None
    conversation_ids: list[int] = field(default_factory=list)


#: A session's own conversations and its active grants (``LcmStore.access_scope``).
AccessScope = tuple[list[int], list[Grant]]
#: Each operand's match counts by target (``LcmStore.match_counts_by_target``).
MatchCounts = list[dict[Literal["messages", "summaries"], int]]


class LcmStore(Protocol):
    """The storage operations of the LCM engine (one instance per engine clone)."""

    path: str

    def close(self) -> None: ...

    # Conversations.
    def current_conversation(self, session_id: str) -> Conversation: ...
    def start_new_conversation(self, session_id: str) -> Conversation: ...
    def conversation(self, conversation_id: int) -> Conversation: ...
    def session_conversation_ids(self, session_id: str) -> list[int]: ...
    def newest_message_uid(self, conversation_id: int) -> str | None:
        """The uid of the conversation's last message in history order (None: empty)."""
        ...

    def claim_conversation(self, conversation_id: int, session_key: str) -> None:
        """Move a conversation to another session key (a legacy one to its namespace)."""
        ...

    # Messages.
    def known_version(self, conversation_id: int, message_uid: str, digest: str) -> bool:
        """Whether this version (uid and digest) of a message is stored."""
        ...

    def append_messages(self, conversation_id: int, messages: Sequence[NewMessage]) -> int: ...
    def append(self, conversation_id: int, messages: Sequence[NewMessage]) -> Appended:
        """``append_messages``, telling what was stored and the context version it made."""
        ...

    def insert_messages_after(
        self, conversation_id: int, after_uid: str | None, messages: Sequence[NewMessage]
    ) -> int:
        """Messages the engine missed, stored in their history position: right after the
        stored ``after_uid`` (None: first), later seqs/ordinals moved up; atomic."""
        ...

    def messages_by_id(self, ids: Iterable[int]) -> dict[int, StoredMessage]: ...
    def message(self, message_id: int) -> StoredMessage | None: ...
    def message_by_uid(
        self, conversation_ids: Sequence[int], message_uid: str
    ) -> StoredMessage | None: ...

    # Summaries and lineage.
    def summary(self, summary_id: int) -> StoredSummary | None: ...
    def summaries_by_id(self, ids: Iterable[int]) -> dict[int, StoredSummary]: ...
    def contents_by_id(self, kind: ItemKind, ids: Iterable[int]) -> dict[int, str]: ...
    def beginnings_by_id(self, kind: ItemKind, ids: Iterable[int], chars: int) -> dict[int, str]:
        """The first ``chars`` characters of each text, by id (in one look-up)."""
        ...

    def summary_source_ids(self, summary_id: int) -> tuple[SummaryKind, list[int]]: ...
    def parent_summary_of_message(self, message_id: int) -> int | None: ...
    def parent_summary_of_summary(self, summary_id: int) -> int | None: ...
    def parent_summaries_of_messages(self, message_ids: Iterable[int]) -> dict[int, int]:
        """The summary covering each given message, for those that have one."""
        ...

    # The active context.
    def context_items(self, conversation_id: int) -> list[ContextItem]: ...
    def replace_with_summary(
        self,
        conversation_id: int,
        items: Sequence[ContextItem],
        summary: NewSummary,
        deadline: float | None = None,
    ) -> int | None: ...

    # Search.
    def search_fulltext(
        self,
        conversation_ids: Sequence[int],
        fts_query: str,
        target: Literal["messages", "summaries"],
        since: float | None,
        until: float | None,
        limit: int,
        by_relevance: bool,
        relevance_window: int | None,
        whole_chars: int = 1000,
        preview_chars: int | None = None,
        all_terms: str | None = None,
    ) -> list[SearchHit]: ...
    def search_fulltext_many(self, searches: Sequence[FulltextSearch]) -> list[list[SearchHit]]:
        """Each search's hits, as :meth:`search_fulltext` gives them, in order: a server
        backend sends them together (one round trip instead of one each)."""
        ...

    def match_counts_by_target(
        self, targets: Sequence[Literal["messages", "summaries"]], operands: Sequence[str], cap: int
    ) -> MatchCounts:
        """Each operand's matches in each of ``targets``, counted up to ``cap`` all targets
        together: a target may be left uncounted (0) once the others reach it, so the
        counts are exact where their sum is below ``cap``."""
        ...

    def indexed_texts(self, targets: Sequence[Literal["messages", "summaries"]]) -> int:
        """At least as many as the texts of every session in ``targets`` (their largest
        ids: an index look-up each; deleted rows only make the figure larger)."""
        ...

    def snippets(
        self,
        target: Literal["messages", "summaries"],
        fts_query: str,
        ids: Sequence[int],
        whole_chars: int,
    ) -> dict[int, str]: ...
    def search_within_summaries(
        self, summary_ids: Sequence[int], fts_query: str, limit: int, whole_chars: int
    ) -> dict[int, list[SearchHit]]:
        """The messages of each summary's span (its first to last seq) that match
        ``fts_query``, best first, at most ``limit`` each; a text longer than
        ``whole_chars`` as a snippet. Keyed by summary id (a summary that does not exist
        is left out)."""
        ...

    def scan_recent(
        self,
        conversation_ids: Sequence[int],
        target: Literal["messages", "summaries"],
        since: float | None,
        until: float | None,
        max_rows: int,
    ) -> Iterable[SearchHit]: ...

    def read_deadline(self, deadline: float | None) -> AbstractContextManager[None]:
        """Within the block, a read statement of the calling thread still running at
        ``deadline`` (``time.monotonic()``), or starting after it, raises
        :class:`StatementTimedOut`. A caller checks its time budget between statements;
        this caps the statement in flight, whose cost the caller's arguments (a model's)
        decide. Other threads' statements and every write run as before. A nested block
        replaces the deadline until it ends (None: no deadline)."""
        ...

    # Sub-agent grants.
    def create_grant(self, grant: Grant) -> int: ...
    def revoke_grants(self, child_session_id: str, grant_id: int | None = None) -> int: ...
    def active_grants(self, child_session_id: str, now: float) -> list[Grant]: ...
    def access_scope(self, session_id: str, now: float) -> AccessScope:
        """``session_conversation_ids`` and ``active_grants`` of a session together (one
        round trip on a server backend)."""
        ...

    def access_scope_and_match_counts(
        self,
        session_id: str,
        now: float,
        targets: Sequence[Literal["messages", "summaries"]],
        operands: Sequence[str],
        cap: int,
    ) -> tuple[AccessScope, MatchCounts]:
        """``access_scope`` and ``match_counts_by_target`` together (one round trip on a
        server backend: a grep's first read, whose scope it needs before searching)."""
        ...

    def charge_grant(self, grant_id: int, tokens: int) -> None: ...

    # Upkeep.
    def tidy_search_index(self) -> None:
        """A bounded step of search-index upkeep, run after a compaction: an index that
        grows by small appends (one per turn) otherwise costs every search more lookups."""
        ...

    # Health.
    def size_bytes(self) -> int: ...
    def integrity_check(self) -> str: ...
    def stats(self, conversation_id: int) -> dict[str, Any]: ...
