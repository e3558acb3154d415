"""Moving LCM histories between stores (``ctxengine export`` / ``ctxengine import``).

Registered under the entry point group ``ctxengine.archivers``, so the host's CLI
moves this engine's data without importing it by name. A session's history is
exported as its conversations (oldest generation first), each with its messages in
sequence order and its summaries in creation order; import replays them through the
:class:`~ctxengine_lcm.store.LcmStore` protocol (append the messages, then apply each
summary to the run of context items it replaced), so any backend can be the target
and the DAG, uids and active context come out the same. Sub-agent grants are
short-lived and not moved.

Histories are keyed by the transcript store they serve (``store_id``, see
:func:`ctxengine_lcm.config.namespace_for`): export reads the source store's, import
writes them under the target store's, so a history always follows its transcript.
Each message keeps its version digest.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ctxengine_host.contract.messages import uid_problem

from .backend import open_lcm_store
from .config import LcmConfig, namespace_for, resolve_database_path, session_key
from .render import storable_columns, storable_text, stored_digest
from .store import ContextItem, LcmStore, NewMessage, NewSummary, StoredMessage, StoredSummary

_MESSAGE_FIELDS = (
    "message_uid",
    "role",
    "content",
    "extra_json",
    "tool_call_id",
    "tool_name",
    "token_count",
    "context_tokens",
    "externalized",
    "created_at",
    "digest",
)
_SUMMARY_FIELDS = (
    "kind",
    "depth",
    "content",
    "token_count",
    "earliest_at",
    "latest_at",
    "first_seq",
    "last_seq",
    "descendant_messages",
    "descendant_summaries",
    "source_tokens",
    "summarizer_level",
)


class LcmArchiver:
    """Export and import one session's LCM history at a time."""

    def __init__(self, config: dict[str, Any] | None, data_dir: Path) -> None:
        self.settings = LcmConfig.model_validate(config or {})
        self.data_dir = Path(data_dir)
        self._store: LcmStore | None = None

    @property
    def location(self) -> str:
        database = self.settings.database
        if database and "://" in database and not database.startswith("sqlite:///"):
            return database
        return str(resolve_database_path(database, self.data_dir))

    def exists(self) -> bool:
        """False for a SQLite file that was never created (nothing to export)."""
        return "://" in self.location or Path(self.location).exists()

    @property
    def store(self) -> LcmStore:
        if self._store is None:
            self._store = open_lcm_store(self.settings, self.data_dir)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    def _key(self, session_id: str, store_id: str | None) -> str:
        return session_key(namespace_for(self.settings, store_id), session_id)

    def _conversation_ids(
        self,
        session_id: str,
        store_id: str | None,
        holds: Callable[[str, str], bool] | None = None,
    ) -> list[int]:
        """The session's conversations in the store's namespace, and, when ``holds`` can
        tell, the unclaimed ones from before namespaces whose newest message it holds."""
        key = self._key(session_id, store_id)
        ids = self.store.session_conversation_ids(key)
        if key != session_id and holds is not None:
            for conversation_id in self.store.session_conversation_ids(session_id):
                newest = self.store.newest_message_uid(conversation_id)
                if newest is not None and holds(session_id, newest):
                    ids.append(conversation_id)
        return sorted(ids)

    def export_session(
        self,
        session_id: str,
        store_id: str | None = None,
        holds: Callable[[str, str], bool] | None = None,
    ) -> dict[str, Any] | None:
        """The conversations of the session of transcript store ``store_id``, or None when
        it has no LCM history."""
        ids = self._conversation_ids(session_id, store_id, holds)
        if not ids:
            return None
        return {"conversations": [self._export_conversation(i) for i in ids]}

    def _export_conversation(self, conversation_id: int) -> dict[str, Any]:
        store = self.store
        messages: dict[int, StoredMessage] = {}
        summaries: dict[int, StoredSummary] = {}
        sources: dict[int, list[int]] = {}
        pending = [(i.kind, i.ref_id) for i in store.context_items(conversation_id)]
        while pending:
            kind, ref = pending.pop()
            if kind == "message":
                messages[ref] = store.message(ref)  # type: ignore[assignment]
                continue
            summaries[ref] = store.summary(ref)  # type: ignore[assignment]
            source_kind, refs = store.summary_source_ids(ref)
            sources[ref] = refs
            pending.extend(("message" if source_kind == "leaf" else "summary", r) for r in refs)
        return {
            "messages": [
                {"id": m.id, **{f: getattr(m, f) for f in _MESSAGE_FIELDS}}
                for m in sorted(messages.values(), key=lambda m: m.seq)
            ],
            "summaries": [
                {
                    "id": s.id,
                    "sources": sources[s.id],
                    **{f: getattr(s, f) for f in _SUMMARY_FIELDS},
                }
                for s in sorted(summaries.values(), key=lambda s: s.id)
            ],
            "context": [
                asdict(i) for i in store.context_items(conversation_id)
            ],  # for verification
        }

    def import_session(
        self, session_id: str, data: dict[str, Any], store_id: str | None = None
    ) -> bool:
        """Replay the history into this store for the session of transcript store
        ``store_id``; False (nothing written) if that session has one already."""
        key = self._key(session_id, store_id)
        if self.store.session_conversation_ids(key):
            return False
        for n, conversation in enumerate(data["conversations"]):
            target = (
                self.store.current_conversation(key)
                if n == 0
                else self.store.start_new_conversation(key)
            )
            self._import_conversation(target.id, conversation)
        return True

    @staticmethod
    def problem(data: Any) -> str | None:
        """What keeps an exported history from being imported, or None. The host asks
        before it writes anything, so a damaged archive leaves no half session behind:
        the shape :meth:`import_session` reads, and ids no store keeps as given (texts
        are made storable as they are written)."""
        conversations = data.get("conversations") if isinstance(data, dict) else None
        if not isinstance(conversations, list):
            return "has no 'conversations' list"
        for n, conversation in enumerate(conversations, start=1):
            if not isinstance(conversation, dict) or not all(
                isinstance(conversation.get(key), list) for key in ("messages", "summaries")
            ):
                return f"has a conversation ({n}) without 'messages' and 'summaries' lists"
            for message in conversation["messages"]:
                problem = _fields_problem(message, _MESSAGE_TYPES)
                if problem is None and (uid := uid_problem(message["message_uid"])):
                    problem = f"message_uid {message['message_uid'][:40]!r} {uid}"
                if problem is not None:
                    return f"has a message in conversation {n} whose {problem}"
            for summary in conversation["summaries"]:
                problem = _fields_problem(summary, _SUMMARY_TYPES)
                if problem is None and summary["kind"] not in ("leaf", "condensed"):
                    problem = f"kind {str(summary['kind'])[:20]!r} is not leaf or condensed"
                if problem is not None:
                    return f"has a summary in conversation {n} whose {problem}"
            try:
                summary_runs(conversation)
            except ValueError as exc:
                return f"has in conversation {n} {exc}"
        return None

    def _import_conversation(self, conversation_id: int, data: dict[str, Any]) -> None:
        """Append the messages, then apply each summary to the run of context items it
        replaced (planned first: a damaged archive fails before anything is written)."""
        store = self.store
        runs = summary_runs(data)
        store.append_messages(conversation_id, [_new_message(m) for m in data["messages"]])
        items = store.context_items(conversation_id)
        for summary, (start, length) in zip(data["summaries"], runs, strict=True):
            run = items[start : start + length]
            fields = {f: summary[f] for f in _SUMMARY_FIELDS}
            fields["content"] = storable_text(fields["content"])
            draft = NewSummary(**fields, source_ids=tuple(item.ref_id for item in run))
            created = store.replace_with_summary(conversation_id, run, draft)
            if created is None:
                raise RuntimeError(f"summary {summary['id']}: the context changed during import")
            replacement = ContextItem(
                run[0].ordinal, "summary", created, summary["token_count"], summary["depth"], ""
            )
            items[start : start + length] = [replacement]

    @staticmethod
    def counts_in(data: dict[str, Any]) -> dict[str, int]:
        """The counts :meth:`counts` gives, read from an exported history."""
        conversations = data["conversations"]
        return {
            "conversations": len(conversations),
            "messages": sum(len(c["messages"]) for c in conversations),
            "summaries": sum(len(c["summaries"]) for c in conversations),
            "context_items": sum(len(c["context"]) for c in conversations),
        }

    def counts(self, session_id: str, store_id: str | None = None) -> dict[str, int]:
        """What verification compares: conversations, messages, summaries, context items."""
        out = {"conversations": 0, "messages": 0, "summaries": 0, "context_items": 0}
        for conversation_id in self._conversation_ids(session_id, store_id):
            stats = self.store.stats(conversation_id)
            out["conversations"] += 1
            out["messages"] += stats["stored_messages"]
            out["context_items"] += stats["context_items"]
            out["summaries"] += len(self._export_conversation(conversation_id)["summaries"])
        return out


_NUMBER = (int, float)
_OPTIONAL_TEXT = (str, type(None))
#: The type of each field :meth:`LcmArchiver.import_session` reads (``digest`` may be
#: missing: an archive from before digests were kept).
_MESSAGE_TYPES: dict[str, Any] = {
    "id": int, "message_uid": str, "role": str, "content": str, "extra_json": str,
    "tool_call_id": _OPTIONAL_TEXT, "tool_name": _OPTIONAL_TEXT, "token_count": int,
    "context_tokens": int, "externalized": (bool, int), "created_at": _NUMBER,
}  # fmt: skip
_SUMMARY_TYPES: dict[str, Any] = {
    "id": int, "sources": list, "kind": str, "depth": int, "content": str,
    "token_count": int, "earliest_at": _NUMBER, "latest_at": _NUMBER, "first_seq": int,
    "last_seq": int, "descendant_messages": int, "descendant_summaries": int,
    "source_tokens": int, "summarizer_level": int,
}  # fmt: skip


def _fields_problem(row: Any, types: dict[str, Any]) -> str | None:
    """Which field of ``row`` is missing or of another type than ``types`` says, or None."""
    if not isinstance(row, dict):
        return "entry is not an object"
    for field, kind in types.items():
        kinds = kind if isinstance(kind, tuple) else (kind,)
        value = row.get(field)
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            names = " or ".join("null" if k is type(None) else k.__name__ for k in kinds)
            return f"'{field}' is missing or not {names}"
    return None


def summary_runs(conversation: dict[str, Any]) -> list[tuple[int, int]]:
    """Where each summary of an exported conversation goes, in order: the start and length
    of the run of context items it replaces, its messages appended in order and the
    summaries before it applied. ``ValueError`` names a summary whose sources are not one
    run (nothing is written for such an archive)."""
    items: list[tuple[str, Any]] = [("message", m["id"]) for m in conversation["messages"]]
    runs: list[tuple[int, int]] = []
    for summary in conversation["summaries"]:
        kind = "message" if summary["kind"] == "leaf" else "summary"
        refs = [(kind, source) for source in summary["sources"]]
        start = next((i for i, item in enumerate(items) if refs and item == refs[0]), None)
        if start is None or items[start : start + len(refs)] != refs:
            raise ValueError(
                f"summary {str(summary['id'])[:20]}: its sources are not one run of the "
                "context; the archive is damaged"
            )
        items[start : start + len(refs)] = [("summary", summary["id"])]
        runs.append((start, len(refs)))
    return runs


def _new_message(row: dict[str, Any]) -> NewMessage:
    """An archived message; an archive written before digests were kept gets its digest
    computed from what the message says."""
    fields = {f: row[f] for f in _MESSAGE_FIELDS if f in row}
    if not fields.get("digest"):
        fields["digest"] = stored_digest(row["message_uid"], row["content"], row["extra_json"])
    fields["content"], fields["extra_json"] = storable_columns(row["content"], row["extra_json"])
    for column in ("tool_name", "tool_call_id"):
        if fields.get(column):
            fields[column] = storable_text(fields[column])
    return NewMessage(**fields)
