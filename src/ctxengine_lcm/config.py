"""The ``[engines.lcm]`` block: validated settings and where the database lives."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ctxengine_host.contract.messages import key_problem

DEFAULT_DATABASE_NAME = "lcm.db"
#: A leaf pass over fewer tokens than this would not shrink the context (a summary with its
#: header costs about as much); also the smallest allowed ``leaf_chunk_tokens``.
MIN_LEAF_SOURCE_TOKENS = 256


class LcmConfig(BaseModel):
    """Settings of the LCM engine; every key has a default that works out of the box."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    #: A file path, ``sqlite:///path``, or empty for ``<data dir>/lcm.db``.
    database: str | None = None
    #: Whose conversations the database holds: by default the host's transcript store id
    #: (so two applications sharing one database never share a session's history); set
    #: it to name the owner yourself (letters, digits and ``._:/@-``).
    namespace: str | None = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,199}$")
    #: Raw messages at the end of the context that compaction never touches. With the
    #: summaries at their budget, the tail must leave a sweep room to reach its target:
    #: otherwise every sweep stops above it, the next one comes a few turns later with a
    #: small chunk, and the extra leaves are condensed more levels deep (each level drops
    #: facts). 64 messages of a typical agent turn filled the tail's token cap (issue #16).
    fresh_tail_messages: int = Field(24, ge=1)
    #: The fresh tail stops growing at this share of the threshold (the newest user turn is
    #: always kept whole).
    fresh_tail_max_fraction: float = Field(0.5, gt=0, le=1)
    #: Largest raw chunk one leaf summary covers (a chunk still grows past it, by one
    #: message, when it would otherwise stay under MIN_LEAF_SOURCE_TOKENS).
    leaf_chunk_tokens: int = Field(20_000, ge=MIN_LEAF_SOURCE_TOKENS)
    leaf_target_tokens: int = Field(1_000, ge=32)
    condensed_target_tokens: int = Field(1_200, ge=32)
    #: Same-depth summaries that are condensed into one summary of the next depth, once the
    #: summaries pass their budget (condensing sooner would lose detail for nothing).
    condense_fanin: int = Field(4, ge=2)
    #: Summaries may use at most this share of the threshold; beyond it the oldest ones are
    #: condensed whatever their depth, so the whole history stays represented.
    summary_budget_fraction: float = Field(0.25, gt=0, le=1)
    #: A sweep stops once the active context is under this share of the threshold.
    compact_target_fraction: float = Field(0.6, gt=0, le=1)
    max_passes_per_sweep: int = Field(24, ge=1)
    #: Tool results above this size are kept outside the active context, referenced by id.
    large_output_tokens: int = Field(25_000, ge=64)
    large_output_preview_chars: int = Field(600, ge=0)
    #: Role of the one message that carries the summaries in an assembled request ("system"
    #: only for hosts that keep several leading system messages).
    summary_role: str = Field("user", pattern="^(system|user)$")
    grep_default_limit: int = Field(20, ge=1)
    grep_max_limit: int = Field(100, ge=1)
    grep_max_rows_scanned: int = Field(20_000, ge=1)
    grep_regex_timeout_seconds: float = Field(2.0, gt=0)
    grep_max_pattern_chars: int = Field(1_000, ge=1)
    #: Time one lcm_grep call may take; past it the call returns what it found, marked
    #: partial. Keep it below [compression] hook_timeout_seconds.
    grep_time_budget_seconds: float = Field(3.0, gt=0)
    #: Distinct full-text terms searched per call (the rest are dropped, marked partial).
    grep_max_terms: int = Field(64, ge=1)
    #: Store statements one lcm_grep call may run (searches, snippets, inner hits).
    grep_max_statements: int = Field(2_000, ge=10)
    #: Hits on texts up to this size are returned whole, longer ones as a snippet.
    grep_whole_text_chars: int = Field(600, ge=0)
    #: Relevance ranking looks at this many of the newest full-text matches at most.
    grep_relevance_window: int = Field(20_000, ge=100)
    #: Relevance sort reranks this many of the store's best matches (exact words first,
    #: near-duplicates folded) before cutting to the limit.
    grep_rerank_pool: int = Field(400, ge=1)
    #: Word-set (Jaccard) similarity at which a lower-ranked hit is folded under a better
    #: one in relevance results; above 1 folds nothing.
    grep_fold_similarity: float = Field(0.5, gt=0)
    #: The optional semantic index (docs/lcm.md, "Semantic index"): relevance searches
    #: of plain words also take the messages nearest in meaning as candidates. Needs
    #: ``pip install "ctxengine-lcm[semantic]"`` and the SQLite store.
    semantic_index: bool = False
    #: Messages nearest in meaning that join a search's candidates.
    semantic_candidates: int = Field(20, ge=1)
    #: Newest messages per search whose vectors are compared (and embedded when missing).
    semantic_max_vectors: int = Field(20_000, ge=1)
    #: Default cap when expanding a summary; a single message defaults to expand_max_tokens
    #: so that most messages come back whole in one call (larger ones are paged).
    expand_default_tokens: int = Field(4_000, ge=64)
    expand_max_tokens: int = Field(16_000, ge=64)
    tool_output_max_chars: int = Field(64_000, ge=1_000)
    subagent_max_depth: int = Field(2, ge=0)
    subagent_token_cap: int = Field(20_000, ge=0)
    busy_timeout_seconds: float = Field(30.0, gt=0)

    @model_validator(mode="after")
    def _limits_consistent(self) -> LcmConfig:
        if self.grep_default_limit > self.grep_max_limit:
            raise ValueError("grep_default_limit must not exceed grep_max_limit")
        if self.expand_default_tokens > self.expand_max_tokens:
            raise ValueError("expand_default_tokens must not exceed expand_max_tokens")
        return self


def resolve_database_path(database: str | None, data_dir: Path) -> Path:
    """The SQLite file for ``database`` (``data_dir/lcm.db`` when unset).

    ``postgresql://`` URLs never get here (:mod:`ctxengine_lcm.backend`); other schemes are
    refused with the fix.
    """
    if not database:
        return Path(data_dir) / DEFAULT_DATABASE_NAME
    if database.startswith("sqlite:///"):
        return Path(database[len("sqlite:///") :]).expanduser()
    if "://" in database:
        scheme = database.split("://", 1)[0]
        raise ValueError(
            f"[engines.lcm] database: the '{scheme}' backend is not supported by this version; "
            "use a file path, sqlite:///path or postgresql://HOST/DATABASE"
        )
    return Path(database).expanduser()


def namespace_for(settings: LcmConfig, store_id: str | None) -> str:
    """Whose conversations an engine reads and writes: the configured namespace, else the
    host's transcript store id, else "" (an engine without a host: unscoped keys)."""
    if settings.namespace:
        return settings.namespace
    return f"store:{store_id}" if store_id else ""


#: The longest session id the engine takes: every row of a session is keyed by it, and
#: PostgreSQL's index refuses an entry over ~2,700 bytes (four UTF-8 bytes a character).
MAX_SESSION_ID_CHARS = 512


def checked_session_id(session_id: object) -> str:
    """``session_id`` as the store keys it, or the reason it cannot be one.

    An engine driven without a host takes its ids as a framework or gateway writes them,
    so every backend must keep any id it takes as given: PostgreSQL text holds no NUL and
    its index no entry past ~2,700 bytes, where SQLite takes both. Such an id is refused
    before any statement, alike on both backends (mapping it to a storable one could merge
    two sessions' histories)."""
    if not isinstance(session_id, str):
        raise TypeError(f"session id must be a str, got {type(session_id).__name__}")
    problem = key_problem(session_id, MAX_SESSION_ID_CHARS)
    if problem is not None:
        raise ValueError(
            f"session id {session_id[:40]!r} {problem}; use an id of 1-{MAX_SESSION_ID_CHARS} "
            "characters without NUL, e.g. the framework's own session id"
        )
    return session_id


def session_key(namespace: str, session_id: str) -> str:
    """A session's key in the LCM store, ``<namespace>#<session id>``, or the bare id
    without a namespace (and for histories stored before namespaces existed). A namespace
    never holds ``#`` (a configured one is checked by its pattern, a host's store id is
    hex), so a key splits at its first ``#`` whatever the id holds."""
    session_id = checked_session_id(session_id)
    return f"{namespace}#{session_id}" if namespace else session_id
