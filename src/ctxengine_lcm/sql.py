"""The SQL dialects of the two LCM stores: table names, placeholder and row locking.

The SQLite and PostgreSQL stores share their statements wherever only these differ; a
statement is written once in :mod:`ctxengine_lcm.store_common` and spelled for a
backend through its :class:`Dialect`.
"""

from __future__ import annotations

from dataclasses import dataclass

MESSAGE_COLUMNS = (
    "id, conversation_id, seq, message_uid, role, content, extra_json, tool_call_id, "
    "tool_name, token_count, context_tokens, externalized, created_at, digest"
)
SUMMARY_COLUMNS = (
    "id, conversation_id, kind, depth, content, token_count, earliest_at, latest_at, "
    "first_seq, last_seq, descendant_messages, descendant_summaries, source_tokens, "
    "created_at, summarizer_level"
)
CONVERSATION_COLUMNS = "id, session_id, generation, context_tokens, context_version, message_count"
GRANT_COLUMNS = (
    "id, child_session_id, parent_session_id, max_depth, token_cap, tokens_used, expires_at"
)


@dataclass(frozen=True)
class Dialect:
    """How one backend names the LCM tables and marks a parameter."""

    #: The parameter placeholder.
    p: str
    #: Before every table name: the PostgreSQL tables share a schema with the host's.
    prefix: str
    #: Appended to a read that must lock its rows until commit ("" where the write
    #: transaction holds the whole database already).
    row_lock: str

    @property
    def conversations(self) -> str:
        return self.prefix + "conversations"

    @property
    def messages(self) -> str:
        return self.prefix + "messages"

    @property
    def summaries(self) -> str:
        return self.prefix + "summaries"

    @property
    def summary_messages(self) -> str:
        return self.prefix + "summary_messages"

    @property
    def summary_sources(self) -> str:
        return self.prefix + "summary_sources"

    @property
    def context_items(self) -> str:
        return self.prefix + "context_items"

    @property
    def grants(self) -> str:
        return self.prefix + "grants"

    def marks(self, n: int) -> str:
        """``n`` comma-separated placeholders."""
        return ",".join([self.p] * n)


SQLITE = Dialect(p="?", prefix="", row_lock="")
POSTGRES = Dialect(p="%s", prefix="lcm_", row_lock=" FOR UPDATE")
