"""The live view of a session and the caches that keep a turn O(new messages).

Each live message keeps its provider-ready copy, token count and version
digest (:class:`LiveEntry`); the view keeps the provider copies as one list
extended in step, the running token total, a uid index, the incremental
validity state and the tool-call pairing. Nothing here talks to the store or
the engine: the session does that and hands the results over.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..contract.messages import strip_persistence_fields, well_formed
from ..shapes import provider_copy
from ..stores.transcript import StoredMessage, ToolCallPairing
from ..tokens import TokenCounter, message_digest
from . import coverage
from .coverage import Cover
from .validity import SequenceState
from .views import ATOMS, CopyOnWriteMessages, MessagesView, copy_message

Message = dict[str, Any]

#: Messages outside the view whose counts are remembered by what they say (see
#: :meth:`LiveView._count_version`: a request carries a few, so a few hundred hold the
#: current ones); past this many the memory starts over.
OUTSIDE_COUNTS_LIMIT = 256


@dataclass
class LiveEntry:
    """A message of the live view with its cached provider copy, token count and version."""

    row_id: int
    message: Message
    wire: Message
    tokens: int
    digest: str


@dataclass(slots=True)
class _Resolution:
    """What :meth:`LiveView.resolve` found for the leading messages of the last selection.

    ``sources`` are private copies of those messages (:func:`_private_copy`: an engine that
    changes its own dicts later cannot change them), ``epoch`` the view's
    :attr:`LiveView.epoch` then; the other fields are parallel to ``sources``.
    """

    epoch: int
    sources: list[Message]
    counts: list[int]
    wire: list[Message]
    positions: list[int | None]


def _private_copy(message: Message, stored: Message | None) -> Message:
    """``message`` as it is now, out of reach of later changes to the engine's own dicts
    and lists: a new dict, strings and numbers shared; a list or dict value that ``stored``
    (the host's version, never changed) holds equally is taken from it, any other copied."""
    out = dict(message)
    for key, value in out.items():
        if type(value) not in ATOMS:
            held = stored.get(key) if stored is not None else None
            out[key] = held if held is not None and held == value else copy_message(value)
    return out


def _stored_message(entry: LiveEntry) -> Message:
    return entry.message


def _says_the_same(message: Message, entry: LiveEntry) -> bool:
    """True when ``message`` is ``entry``'s version, persistence fields aside.

    Equal as a whole is equal without the persistence fields: the common case costs
    one comparison and no stripped copies. A message stored well-formed (its lone
    surrogates made U+FFFD) is the version of the caller's copy that still holds them.
    """
    stored = entry.message
    if message == stored:
        return True
    bare = strip_persistence_fields(stored)
    if strip_persistence_fields(message) == bare:
        return True
    repaired, count = well_formed(message)
    return count > 0 and strip_persistence_fields(repaired) == bare


class LiveView:
    """The messages the next request is built from, with per-version caches.

    ``entries`` is only ever extended in place or replaced by a new list, which
    is what lets a :class:`MessagesView` snapshot it in O(1).
    """

    def __init__(
        self, counter: TokenCounter, *, strict_alternation: bool, send_unknown_fields: bool = False
    ) -> None:
        self.counter = counter
        self.strict_alternation = strict_alternation
        self.send_unknown_fields = send_unknown_fields
        self.entries: list[LiveEntry] = []
        self.wire: list[Message] = []  # provider copies of the entries, kept in step
        self.tokens = 0
        self.state = SequenceState(strict_alternation=strict_alternation)
        self.pairing = ToolCallPairing()
        self._by_uid: dict[str, LiveEntry] = {}  # the newest entry of each uid
        self._position: dict[str, int] = {}  # the index of that entry
        self._outside_counts: dict[tuple[tuple[str, str], ...], int] = {}
        #: Bumped whenever a uid's entry or position changes (a replaced view, a new version
        #: of a live uid): what :meth:`resolve` found before is stale then.
        self.epoch = 0
        self._resolved: _Resolution | None = None
        self._declared: tuple[int, tuple[Cover, ...], list[tuple[int, int]]] | None = None

    def __len__(self) -> int:
        return len(self.entries)

    def load(self, rows: Iterable[StoredMessage]) -> list[str]:
        """Fill the view from stored rows; returns the rule problems found (rows kept anyway)."""
        problems = []
        entries: list[LiveEntry] = []
        for row in rows:
            problem = self.state.problem(row.message, len(entries))
            if problem:
                problems.append(problem)
            else:
                self.state.feed(row.message)
            entries.append(self.entry(row.row_id, row.message, row.digest))
            self.pairing.observe(row.message)
        self.extend(entries)
        return problems

    def entry(self, row_id: int, message: Message, digest: str) -> LiveEntry:
        """A live entry for a stored row: its provider copy and cached token count."""
        wire = self.provider_copy(message)
        key = message.get("message_uid") or f"row:{row_id}"
        tokens = self.counter.count_message_version(wire, key, digest)
        return LiveEntry(row_id, message, wire, tokens, digest)

    def provider_copy(self, message: Message) -> Message:
        """What a provider receives of ``message`` (``shapes.provider_copy``, this session's
        choice about unknown fields)."""
        return provider_copy(message, send_unknown=self.send_unknown_fields)

    def extend(self, entries: list[LiveEntry]) -> None:
        """Append entries already stored (state and pairing are the caller's to advance)."""
        self.entries.extend(entries)
        self.wire.extend(e.wire for e in entries)
        self.tokens += sum(e.tokens for e in entries)
        self._index(entries, len(self.entries) - len(entries))

    def replace(self, entries: list[LiveEntry], state: SequenceState) -> None:
        """Point the view at ``entries`` (a compaction result) whose validity state is ``state``."""
        self.entries = entries
        self.wire = [e.wire for e in entries]
        self.tokens = sum(e.tokens for e in entries)
        self.state = state
        self.pairing = ToolCallPairing()
        for entry in entries:
            self.pairing.observe(entry.message)
        self._by_uid = {}
        self._position = {}
        self.epoch += 1
        self._index(entries, 0)

    def clear(self) -> None:
        self.replace([], SequenceState(strict_alternation=self.strict_alternation))

    def messages(self) -> list[Message]:
        """Deep copies of the live messages, uids included."""
        return [copy_message(e.message) for e in self.entries]

    def view(self) -> MessagesView:
        """The live messages for per-request hooks: O(1) now, a private copy per item read."""
        return MessagesView(self.entries, len(self.entries), _stored_message)

    def copy_on_write(self) -> CopyOnWriteMessages:
        """The live messages for ``compress`` of an engine that keeps its own history."""
        return CopyOnWriteMessages(self.entries, len(self.entries), _stored_message)

    def last_user_message(self) -> Message | None:
        return next(
            (e.message for e in reversed(self.entries) if e.message.get("role") == "user"), None
        )

    def by_version(self) -> dict[tuple[Any, str], LiveEntry]:
        """Entries keyed by (uid, digest): what a compaction result may reuse."""
        return {(e.message.get("message_uid"), e.digest): e for e in self.entries}

    def matching_entry(self, message: Message) -> LiveEntry | None:
        """The newest live entry of ``message``'s uid if it says exactly the same thing.

        A dict comparison: no serializing, no hashing. A caller retrying a turn
        re-sends messages it already gave us (same ``message_uid``, same content);
        an edited message under a known uid is a new version and matches nothing.
        """
        uid = message.get("message_uid")
        entry = self._by_uid.get(uid) if isinstance(uid, str) else None
        return entry if entry is not None and _says_the_same(message, entry) else None

    def count(self, messages: Iterable[Message]) -> int:
        """Tokens of messages: a live message's count when the uid and content match, else
        the counter's cache per version (uid, or none, and content digest)."""
        total = 0
        for m in messages:
            entry = self.matching_entry(m)
            total += entry.tokens if entry is not None else self._count_version(m)
        return total

    def resolve(self, messages: list[Message]) -> tuple[int, list[Message], list[int | None]]:
        """Tokens, provider copies and live positions of a selection, one uid look-up each.

        A live message's cached count and copy when the uid and content match (what a
        provider receives of it is then the same), else counted per version and copied.
        The positions are :meth:`position` of each message's uid, matching or not: what
        the coverage check needs, found while the uid is at hand.

        An engine's next selection usually repeats a run of the last one (all of it, or
        all but its oldest messages) and appends a few: when that run equals the remembered
        messages (one comparison of lists, mostly of shared strings) and no entry changed
        since, its resolution is reused and only the rest is resolved.
        """
        memo = self._resolved if self._resolved and self._resolved.epoch == self.epoch else None
        at, start, length = self._repeated_run(messages, memo) if memo else (0, 0, 0)
        before = self._resolve_each(messages[:at])
        after = self._resolve_each(messages[at + length :])
        run = slice(start, start + length)
        reused = memo or _Resolution(self.epoch, [], [], [], [])
        counts = [*before[0], *reused.counts[run], *after[0]]
        wire = [*before[1], *reused.wire[run], *after[1]]
        positions = [*before[2], *reused.positions[run], *after[2]]
        self._remember(messages, counts, wire, positions, (at, start, length), reused)
        return sum(counts), wire, positions

    def _repeated_run(self, messages: list[Message], memo: _Resolution) -> tuple[int, int, int]:
        """(at, start, length): ``messages[at:at + length]`` equals the remembered
        ``memo.sources[start:start + length]``, the whole rest of them; (0, 0, 0) if none.

        Tried: the remembered messages leading ``messages``; then the run from the first
        message with a live uid (an engine that dropped its oldest messages or rewrote its
        summary)."""
        sources = memo.sources
        if len(sources) <= len(messages) and messages[: len(sources)] == sources:
            return 0, 0, len(sources)
        live = (self.position(m.get("message_uid")) for m in messages)
        at, live_at = next(((n, p) for n, p in enumerate(live) if p is not None), (0, None))
        if live_at is None or live_at not in memo.positions:
            return 0, 0, 0
        start = memo.positions.index(live_at)
        length = min(len(messages) - at, len(sources) - start)
        if messages[at : at + length] != sources[start : start + length]:
            return 0, 0, 0
        return at, start, length

    def _resolve_each(
        self, messages: list[Message]
    ) -> tuple[list[int], list[Message], list[int | None]]:
        """:meth:`resolve` of each message (its count, copy and position), nothing reused."""
        counts: list[int] = []
        wire: list[Message] = []
        positions: list[int | None] = []
        by_uid, position = self._by_uid, self._position
        for m in messages:
            uid = m.get("message_uid")
            entry = by_uid.get(uid) if isinstance(uid, str) else None
            if entry is None or not isinstance(uid, str):
                positions.append(None)
            else:
                positions.append(position[uid])
                if _says_the_same(m, entry):
                    counts.append(entry.tokens)
                    wire.append(entry.wire)
                    continue
            counts.append(self._count_version(m))
            wire.append(self.provider_copy(m))
        return counts, wire, positions

    def _remember(
        self,
        messages: list[Message],
        counts: list[int],
        wire: list[Message],
        positions: list[int | None],
        run: tuple[int, int, int],
        memo: _Resolution,
    ) -> None:
        """Remember the resolution of ``messages``' leading run that a later one may reuse.

        ``run`` is :meth:`_repeated_run`'s in ``memo`` (those copies are kept as they are).
        The run remembered stops before a message whose resolution could change while its
        content does not: its uid may yet become live, or its provider copy shares a list
        or dict with the engine (which may change it in place).
        """
        at, start, length = run
        end = self._reusable_until(messages, wire, positions, 0, at)
        if end == at:
            end = self._reusable_until(messages, wire, positions, at + length, len(messages))
        if run == (0, 0, end):
            return  # the same run as remembered: nothing new to keep
        kept = memo.sources[start : start + max(0, min(length, end - at))]
        sources = [
            *self._private_copies(messages, positions, 0, min(at, end)),
            *kept,
            *self._private_copies(messages, positions, at + length, end),
        ]
        self._resolved = _Resolution(self.epoch, sources, counts[:end], wire[:end], positions[:end])

    def _reusable_until(
        self,
        messages: list[Message],
        wire: list[Message],
        positions: list[int | None],
        start: int,
        stop: int,
    ) -> int:
        """The first index from ``start`` whose resolution is not :meth:`_reusable`, or ``stop``."""
        end = start
        while end < stop and self._reusable(messages[end], wire[end], positions[end]):
            end += 1
        return end

    def _private_copies(
        self, messages: list[Message], positions: list[int | None], start: int, stop: int
    ) -> list[Message]:
        """:func:`_private_copy` of ``messages[start:stop]``, live ones beside their entry."""
        return [
            _private_copy(messages[n], None if at is None else self.entries[at].message)
            for n, at in zip(range(start, stop), positions[start:stop], strict=True)
        ]

    def _reusable(self, message: Message, wire: Message, at: int | None) -> bool:
        """Whether ``message``'s resolution holds, for any message equal to it, while the
        view's epoch does: a live entry's own copy (only its uid and the verdict matter),
        or a message of strings only (equal strings give the same copy and count) whose
        uid cannot become live."""
        if at is not None:
            return self.entries[at].wire is wire
        uid = message.get("message_uid")
        return not isinstance(uid, str) and all(type(v) is str for v in message.values())

    def _count_version(self, message: Message) -> int:
        """The count of a message that is not a live entry (an engine's summary, say).

        An engine sends its summaries again with every request, rebuilt but saying the
        same. A message whose fields are all strings is remembered by those strings (its
        whole version: hashing them costs a quarter of the JSON a digest encodes, and an
        unchanged string object hashes once); any other is counted per version digest."""
        items = tuple(sorted(message.items()))
        if all(isinstance(value, str) for _, value in items):
            known = self._outside_counts.get(items)
            if known is None:
                if len(self._outside_counts) >= OUTSIDE_COUNTS_LIMIT:
                    self._outside_counts.clear()
                known = self._outside_counts[items] = self.counter.count_message(message)
            return known
        uid = message.get("message_uid")
        key = uid if isinstance(uid, str) else ""
        return self.counter.count_message_version(message, key, message_digest(message))

    def declared_spans(self, covers: list[Cover]) -> list[tuple[int, int]]:
        """:func:`coverage.declared_spans` of ``covers`` (do not change the list returned).

        An engine declares the same covers request after request: the last ones are
        remembered while the epoch holds, when they cannot change (strings and tuples) and
        all their ends are live (an end that is not may become live).
        """
        key = tuple(covers)
        memo = self._declared
        if memo is not None and memo[0] == self.epoch and memo[1] == key:
            return memo[2]
        spans = coverage.declared_spans(key, self.position)
        if all(self._settled(cover) for cover in key):
            self._declared = (self.epoch, key, spans)
        return spans

    def _settled(self, cover: Cover) -> bool:
        """Whether ``cover``'s span can change only with the epoch: immutable, ends live."""
        ends = (cover,) if type(cover) is str else cover[:2] if type(cover) is tuple else ()
        return bool(ends) and all(self.position(end) is not None for end in ends)

    def position(self, uid: Any) -> int | None:
        """The live index of the message with ``uid`` (its newest entry), or None."""
        return self._position.get(uid) if isinstance(uid, str) else None

    def _index(self, entries: list[LiveEntry], start: int) -> None:
        for offset, entry in enumerate(entries):
            uid = entry.message.get("message_uid")
            if isinstance(uid, str):
                if uid in self._by_uid:
                    self.epoch += 1  # a new version: the uid's entry and position move
                self._by_uid[uid] = entry
                self._position[uid] = start + offset
