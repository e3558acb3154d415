"""The recall tools: ``lcm_grep``, ``lcm_describe`` and ``lcm_expand``.

Every tool validates its arguments (a bad one is a JSON error naming the fix, never an
exception), limits its output, and sees only the caller's own history plus what a
sub-agent grant lets it read (charged against the grant's token cap).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Literal, cast

import regex

from ctxengine_host.json_text import json_dumper

from .attached import KEYS as ATTACHED_KEYS
from .attached import attachments, shown_once
from .calls import decoded_calls
from .config import LcmConfig
from .differences import folded_differences
from .query import Expansion, expand_query, merge_candidates
from .ranking import fold_similar, query_terms, rerank
from .render import iso_time, message_ref, summary_ref, verbatim_message
from .search import (
    FtsQuery,
    QuerySyntaxError,
    WorkBudget,
    fts_query,
    parse_time,
    regex_cost_problem,
    regex_scan,
)
from .seeds import SEED_SHARE, Seeds, capped_totals, choose_seeds, holding_targets
from .semantic import SEMANTIC_FACTOR, VectorStore, nearest_messages
from .snippets import term_snippet
from .store import (
    FulltextSearch,
    Grant,
    ItemKind,
    LcmStore,
    MatchCounts,
    SearchHit,
    StoredMessage,
    StoredSummary,
)

_ID = re.compile(r"^(sum|msg)_(\d{1,18})$")
_UID = re.compile(r"^[0-9a-fA-F]{32}$")
_CHARS_PER_TOKEN_GUESS = 4
#: An integer argument written as text: ASCII digits, an optional sign, at most 18 digits
#: (a longer number has no meaning here and would overflow the stores' integers).
_INT_TEXT = re.compile(r"^\s*[+-]?[0-9]{1,18}\s*\Z")
SearchTarget = Literal["messages", "summaries"]
#: Builds the read of the targets' searches for an expression (``_fulltext``'s ``searches``).
_Searches = Callable[..., Callable[[], dict[SearchTarget, list[SearchHit]]]]
_MAX_INT = 10**18
#: What a regex may expand to when compiled (see search.regex_cost_problem): 100,000
#: elements compile in about 40 ms; group nesting past 32 levels is refused too.
_MAX_REGEX_WEIGHT = 100_000
_MAX_REGEX_NESTING = 32
#: Ancestors listed by lcm_describe (the covering context item is always named).
_LINEAGE_SHOWN = 32
#: Matching messages listed under a summary hit, and up to what size they are shown whole.
_INNER_HITS = 5
_INNER_WHOLE_CHARS = 300
#: Summary hits that list their matching messages: the best ones (each costs a search of
#: the summary's span, one index pass per query operand; a condensed summary spans
#: thousands of messages, and an agent expands the first few hits it reads).
INNER_SUMMARY_HITS = 3
#: Source ids listed by lcm_describe.
_DESCRIBE_SOURCES = 50
#: Ids of folded near-duplicates listed under a relevance hit.
_SIMILAR_IDS_SHOWN = 5
#: Tokens reserved around a page of content for the keys and offsets of the result.
_PAGE_ENVELOPE_TOKENS = 40
#: The smallest whole result: ids, continuation offsets and the truncation mark fit.
MIN_RESULT_TOKENS = 128
#: lcm_describe's metadata always fits (its lineage and source ids are capped).
MIN_DESCRIBE_TOKENS = 512
#: Relevance reads a long text's first (this times grep_whole_text_chars) characters with
#: the candidates' search (cheap: most texts are shorter)...
_PREVIEW_FACTOR = 4
#: ... and the candidates cut there whose beginning lacks a query word on to this many
#: characters (in the pool's order, this many characters in all): a query's words anywhere
#: in a file dump or a test log count in its ranking, and the work stays bounded whatever
#: the texts' sizes.
_RANKED_CHARS = 32_000
_RANKED_CHARS_TOTAL = 512_000
#: A result's JSON text, as the model reads it: ``json.dumps(..., ensure_ascii=False)``'s
#: text for the JSON values results hold, with the encoder built once (each grep measures
#: every item it returns).
_json_text = json_dumper()
#: The text a tool's result is written as: ``json.dumps(..., ensure_ascii=False)``'s,
#: raising json's ``TypeError`` for a value JSON has no type for (an engine fault) where
#: :data:`_json_text` would write its ``str``. A grep's items are measured in it too,
#: since those texts are the ones written.
_result_text = json_dumper(strict=True)


class EncodedItems(list[dict[str, Any]]):
    """A grep's result items with the JSON text of each, encoded once: to measure them
    against the output cap, then as they are written (:func:`result_json`)."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []


def result_json(result: dict[str, Any]) -> str:
    """``json.dumps(result, ensure_ascii=False)``, character for character, with the items
    of an :class:`EncodedItems` value written from their texts (a grep's items are most
    of its result: encoding them again was ~3% of a keyword query)."""
    fields = (
        f"{_result_text(key)}: "
        + (
            f"[{', '.join(value.texts)}]"
            if isinstance(value, EncodedItems)
            else _result_text(value)
        )
        for key, value in result.items()
    )
    return "{" + ", ".join(fields) + "}"


TOOL_SCHEMAS: list[dict[str, Any]] = [
    {
        "name": "lcm_grep",
        "description": (
            "Search the whole stored conversation history (every message verbatim, and the "
            "summaries). Full-text by default: any of the words may match, best matches first "
            "(more and rarer words, stemmed: 'releases' finds 'release'); \"quoted phrase\", "
            "word* (prefix) and uppercase AND / OR / NOT between terms work as in FTS5. "
            "Regex on request. The best summary hits list their best-matching verbatim messages; "
            "near-duplicate hits are folded under the best one ('similar' lists their ids and "
            "the lines each differs by). "
            "Returns ids to pass to lcm_expand or lcm_describe."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Words to find, or a regex."},
                "mode": {"type": "string", "enum": ["full_text", "regex"]},
                "scope": {"type": "string", "enum": ["messages", "summaries", "both"]},
                "sort": {
                    "type": "string",
                    "enum": ["recency", "relevance"],
                    "description": "Default: relevance for full text, recency for regex.",
                },
                "since": {"type": "string", "description": "ISO 8601 time or epoch seconds."},
                "until": {"type": "string", "description": "ISO 8601 time or epoch seconds."},
                "limit": {"type": "integer", "minimum": 1},
                "ignore_case": {"type": "boolean", "description": "Regex only; default true."},
            },
            "required": ["pattern"],
        },
    },
    {
        "name": "lcm_expand",
        "description": (
            "Expand a summary (sum_N) to its sources in order: the verbatim messages of a "
            "leaf summary or the summaries a condensed one covers; or return a message "
            "verbatim. Output is capped by max_tokens; continue with start (next source) or "
            "offset (next page of a large message) as the result says."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "max_tokens": {"type": "integer", "minimum": 1},
                "start": {"type": "integer", "minimum": 0},
                "offset": {"type": "integer", "minimum": 0},
            },
            "required": ["id"],
        },
    },
    {
        "name": "lcm_describe",
        "description": (
            "Metadata and lineage of a summary (sum_N) or message (msg_N or its uid): time "
            "range, sizes, sources, the summaries above it. include_content=true also returns "
            "the text (paged for large tool outputs)."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "include_content": {"type": "boolean"},
                "offset": {"type": "integer", "minimum": 0},
                "max_tokens": {"type": "integer", "minimum": 1},
            },
            "required": ["id"],
        },
    },
]

TOOL_NAMES = frozenset(s["name"] for s in TOOL_SCHEMAS)


class ToolArgumentError(ValueError):
    """An argument is missing, of the wrong type or out of range; the message names the fix."""


@dataclass
class Access:
    """What the calling session may read: its own conversations and granted ones."""

    own: list[int]
    grants: dict[int, Grant] = field(default_factory=dict)

    @property
    def conversation_ids(self) -> list[int]:
        return [*self.own, *self.grants]

    def grant_for(self, conversation_id: int) -> Grant | None:
        return self.grants.get(conversation_id)

    @classmethod
    def of(cls, own: list[int], grants: list[Grant]) -> Access:
        """The access of a session owning ``own`` and holding ``grants`` (a conversation
        it owns is read as its own, whatever grant also names it)."""
        access = cls(own=own)
        for grant in grants:
            for conversation_id in grant.conversation_ids:
                if conversation_id not in own:
                    access.grants.setdefault(conversation_id, grant)
        return access


class CallerAccess:
    """The calling session's :class:`Access`, read once per tool call: by a grep in the
    statement of its first match counts (one round trip less on a server backend), else
    on its own, outside any grep's deadline, as before the call."""

    def __init__(self, store: LcmStore, session_id: str, now: float) -> None:
        self._store = store
        self._session_id, self._now = session_id, now
        self._access: Access | None = None

    def get(self) -> Access:
        """The access, read now if no statement brought it yet."""
        if self._access is None:
            with self._store.read_deadline(None):
                self._access = Access.of(*self._store.access_scope(self._session_id, self._now))
        return self._access

    def with_counts(
        self, targets: Sequence[SearchTarget], operands: Sequence[str], cap: int
    ) -> MatchCounts:
        """``match_counts_by_target``, with the access read in the same statement when it
        is not read yet."""
        if self._access is not None:
            return self._store.match_counts_by_target(targets, operands, cap)
        scope, counts = self._store.access_scope_and_match_counts(
            self._session_id, self._now, targets, operands, cap
        )
        self._access = Access.of(*scope)
        return counts


def _get(
    args: dict[str, Any],
    name: str,
    kind: type | tuple[type, ...],
    default: Any = None,
    choices: tuple[str, ...] | None = None,
    minimum: int | None = None,
) -> Any:
    value: Any = args.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) and kind is not bool:
        raise ToolArgumentError(f"'{name}' must be {_type_name(kind)}, not a boolean")
    if kind is int and isinstance(value, str):
        if not _INT_TEXT.match(value):
            raise ToolArgumentError(f"'{name}' must be an integer (got {value[:40]!r})")
        value = int(value)
    if kind is int and isinstance(value, float) and value.is_integer():
        value = int(value)
    if kind is int and isinstance(value, int) and abs(value) > _MAX_INT:
        raise ToolArgumentError(f"'{name}' is out of range (at most {_MAX_INT})")
    if not isinstance(value, kind):
        raise ToolArgumentError(f"'{name}' must be {_type_name(kind)} (got {type(value).__name__})")
    if choices is not None and value not in choices:
        raise ToolArgumentError(f"'{name}' must be one of {', '.join(choices)} (got {value!r})")
    if minimum is not None and cast(Any, value) < minimum:  # a number by now
        raise ToolArgumentError(f"'{name}' must be at least {minimum} (got {value})")
    return value


def _type_name(kind: type | tuple[type, ...]) -> str:
    names = {str: "a string", int: "an integer", bool: "true or false"}
    if isinstance(kind, tuple):
        return " or ".join(names.get(k, k.__name__) for k in kind)
    return names.get(kind, kind.__name__)


class ToolRunner:
    """Runs the tools against one store for one engine clone."""

    def __init__(
        self, store: LcmStore, config: LcmConfig, count_tokens: Callable[[Any], int]
    ) -> None:
        self.store = store
        self.config = config
        self.count = count_tokens

    def run(self, name: str, args: Any, caller: CallerAccess) -> dict[str, Any]:
        if not isinstance(args, dict):
            return {"error": f"{name}: arguments must be a JSON object (got {type(args).__name__})"}
        try:
            if name == "lcm_grep":
                return self.grep(args, caller)
            handlers = {"lcm_describe": self.describe, "lcm_expand": self.expand}
            return handlers[name](args, caller.get())
        except ToolArgumentError as exc:
            return {"error": f"{name}: {exc}"}

    # lcm_grep

    def grep(self, args: dict[str, Any], caller: CallerAccess) -> dict[str, Any]:
        cfg = self.config
        pattern = _get(args, "pattern", str)
        if pattern is None:
            pattern = _get(args, "query", str)
        if not pattern or not pattern.strip():
            raise ToolArgumentError("'pattern' is required: the words or regex to search for")
        if len(pattern) > cfg.grep_max_pattern_chars:
            raise ToolArgumentError(
                f"'pattern' is {len(pattern)} characters; the limit is {cfg.grep_max_pattern_chars}"
            )
        mode = _get(args, "mode", str, "full_text", ("full_text", "regex"))
        scope = _get(args, "scope", str, "both", ("messages", "summaries", "both"))
        default_sort = "relevance" if mode == "full_text" else "recency"
        sort = _get(args, "sort", str, default_sort, ("recency", "relevance"))
        limit = _get(args, "limit", int, cfg.grep_default_limit, minimum=1)
        limit = min(limit, cfg.grep_max_limit)
        ignore_case = _get(args, "ignore_case", bool, True)
        try:
            since = parse_time(args.get("since"), "since")
            until = parse_time(args.get("until"), "until")
        except ValueError as exc:
            raise ToolArgumentError(str(exc)) from None
        targets: list[SearchTarget] = ["messages", "summaries"] if scope == "both" else [scope]
        result: dict[str, Any] = {"pattern": pattern, "mode": mode, "scope": scope, "sort": sort}
        budget = WorkBudget(
            time.monotonic() + cfg.grep_time_budget_seconds, cfg.grep_max_statements
        )
        # The budget is checked between statements; the store stops one still running at
        # its deadline (a model's arguments decide what a statement costs).
        with self.store.read_deadline(budget.deadline):
            items = self._grep_items(
                pattern, mode, ignore_case, targets, (since, until), limit, sort, caller, result,
                budget,
            )  # fmt: skip
        items = self._charge(items, caller.get())
        result["results"] = items
        result["count"] = len(items)
        if budget.exhausted is not None or result.get("terms_dropped") or result.get("timed_out"):
            result["partial"] = True
            result["partial_reason"] = _partial_reason(budget, result, cfg)
        return result

    def _grep_items(
        self,
        pattern: str,
        mode: str,
        ignore_case: bool,
        targets: list[SearchTarget],
        period: tuple[float | None, float | None],
        limit: int,
        sort: str,
        caller: CallerAccess,
        result: dict[str, Any],
        budget: WorkBudget,
    ) -> list[dict[str, Any]]:
        """The results of a grep, each with what is read along with it (covering summary,
        inner hits, tool steps, differences of folded near-duplicates)."""
        since, until = period
        if mode == "full_text":
            hits, folded = self._fulltext(
                pattern, targets, since, until, limit, sort, caller, result, budget
            )
        else:
            folded = {}
            hits = self._regex(
                pattern, ignore_case, targets, since, until, limit, sort, caller.get(), result,
                budget,
            )  # fmt: skip
        access = caller.get()
        inner = result.pop("_fts_query", None)
        # A hit found through alternatives only looks for its inner hits with them too;
        # the others with the query as written (each operand costs a pass over a span).
        inner_expanded = result.pop("_fts_query_expanded", None)
        expanded_only = result.pop("_expanded_only", set())
        parents: dict[int, int] = budget.read(partial(_covering_summaries, self.store, hits), {})
        # The best summary hits list their matching messages: one read per expression.
        listing: dict[str, list[int]] = {}
        for h in [h for h in hits if h.kind == "summary"][:INNER_SUMMARY_HITS]:
            expression = inner_expanded if (h.kind, h.id) in expanded_only else inner
            if expression is not None:
                listing.setdefault(expression, []).append(h.id)
        inner_hits: dict[int, list[SearchHit]] = {}
        for expression, summary_ids in listing.items():
            by_summary: dict[int, list[SearchHit]] = budget.read(
                partial(self._inner_hits, summary_ids, expression), {}, len(summary_ids)
            )
            inner_hits.update(by_summary)
        steps: dict[int, dict[str, Any]] = budget.read(partial(attachments, self.store, hits), {})
        shown_folded = {
            (h.kind, h.id): folded[(h.kind, h.id)] for h in hits if folded.get((h.kind, h.id))
        }
        differences: dict[tuple[ItemKind, int], dict[int, str]] = (
            budget.read(
                partial(folded_differences, self.store, shown_folded, _SIMILAR_IDS_SHOWN), {}
            )
            if shown_folded
            else {}
        )
        items = []
        for h in hits:
            key = (h.kind, h.id)
            listed = inner_hits.get(h.id) if h.kind == "summary" else None
            item = self._hit_item(
                h, access, parents, folded.get(key, ()), listed, differences.get(key)
            )
            if h.kind == "message":
                item.update(steps.get(h.id, {}))
            items.append(item)
        shown_once(items)
        return items

    def _fulltext(
        self,
        pattern: str,
        targets: list[SearchTarget],
        since: float | None,
        until: float | None,
        limit: int,
        sort: str,
        caller: CallerAccess,
        result: dict[str, Any],
        budget: WorkBudget,
    ) -> tuple[list[SearchHit], dict[tuple[str, int], tuple[SearchHit, ...]]]:
        """The hits to show, and for relevance order the near-duplicates folded under each
        (keyed by kind and id)."""
        try:
            query = fts_query(pattern, self.config.grep_max_terms)
        except QuerySyntaxError as exc:
            raise ToolArgumentError(f"'pattern': {exc}") from None
        if query is None:
            raise ToolArgumentError("'pattern' has no words to search for; use mode=regex")
        cfg = self.config
        by_relevance = sort == "relevance"
        # Relevance reranks a pool of previews (a long text's beginning: cheap to read) and
        # asks for snippets only for the hits it shows.
        wanted = max(limit, cfg.grep_rerank_pool) if by_relevance else limit
        preview = cfg.grep_whole_text_chars * _PREVIEW_FACTOR if by_relevance else None
        if query.dropped:
            result["terms_dropped"] = query.dropped
        # Relevance also ranks the matches of every term over the whole history: the window
        # of newest matches alone loses an old message whose words recur later.
        every = (
            " AND ".join(query.operands)
            if by_relevance and not query.explicit and len(query.operands) > 1
            else None
        )
        # Summaries get a quarter of the slots shown (_messages_first): a quarter of the pool.
        pools = {
            t: wanted if t == "messages" or not by_relevance else max(limit, wanted // 4)
            for t in targets
        }

        def searches(
            among: list[SearchTarget],
            expression: str,
            all_terms: str | None = None,
            every_match: bool = False,
        ) -> Callable[[], dict[SearchTarget, list[SearchHit]]]:
            """The read of the searches of ``among`` for ``expression``, sent together."""
            window = None if every_match else cfg.grep_relevance_window
            asked = [
                FulltextSearch(
                    caller.get().conversation_ids,
                    expression,
                    target,
                    since,
                    until,
                    pools[target],
                    by_relevance,
                    window,
                    cfg.grep_whole_text_chars,
                    preview,
                    all_terms,
                )
                for target in among
            ]
            return partial(_search_each, self.store, asked)

        seeds = (
            self._seeds(query, pools, limit, caller, budget)
            if by_relevance and not query.explicit
            else None
        )
        hits, short = self._matches(query, seeds, pools, searches, limit, every, budget)
        result["matched"] = "as written" if query.explicit else "any term"
        result["_fts_query"] = query.expression
        if not by_relevance:
            hits.sort(key=lambda h: (h.created_at, h.id), reverse=True)
            return _messages_first(hits, limit), {}
        # Other spellings and words for the terms: extra candidates, ranked below them,
        # searched for where the words as written found fewer than the pool holds (where
        # they filled it, the history holds the query in its own words; the alternatives
        # still count in the reranking of the pool).
        expansion = expand_query(query)
        if expansion.operands and short:
            extra = self._alternative_matches(expansion, short, pools, limit, searches, budget)
            seen = {(h.kind, h.id) for h in hits}
            result["_expanded_only"] = {(h.kind, h.id) for h in extra} - seen
            hits = merge_candidates(hits, extra)
            result["_fts_query_expanded"] = expansion.combined(query.expression)
        if cfg.semantic_index and not query.explicit and "messages" in targets:
            hits = merge_candidates(
                hits,
                self._nearest(pattern, since, until, preview, caller.get(), budget),
                SEMANTIC_FACTOR,
            )
        terms = query_terms(query.operands)
        alternatives = expansion.of(terms)
        ranked = rerank(hits, terms, alternatives, self._ranked_texts(hits, preview, terms, budget))
        leaders: list[SearchHit] = []
        similar: dict[tuple[str, int], tuple[SearchHit, ...]] = {}
        for kind in ("message", "summary"):
            of_kind = [r for r in ranked if r.hit.kind == kind]
            for group in fold_similar(of_kind, cfg.grep_fold_similarity, limit):
                leaders.append(group.hit._replace(score=-group.relevance))
                similar[(kind, group.hit.id)] = group.similar
        leaders.sort(key=lambda h: h.score or 0.0)
        shown = _messages_first(leaders, limit)
        snippets_for = result.get("_fts_query_expanded") or query.expression
        others = [(text, False) for group in alternatives for text, _ in group]
        return self._with_snippets(shown, snippets_for, (list(terms), others), budget), similar

    def _ranked_texts(
        self,
        hits: list[SearchHit],
        preview: int | None,
        terms: Sequence[tuple[str, bool]],
        budget: WorkBudget,
    ) -> list[str]:
        """The texts ``hits`` are ranked by: those cut at ``preview`` read on to
        :data:`_RANKED_CHARS`, in the pool's order (the texts holding every word first,
        then the store's best) while :data:`_RANKED_CHARS_TOTAL` lasts. A real agent's tool
        output often holds the words sought past its beginning (on real sessions, 3 of the
        7 sought messages ranked off the first page were such). A text whose beginning
        holds every term (as a string, any case) is not read further: its rank would not
        change. Folding and snippets keep the previews."""
        texts = [h.text for h in hits]
        if preview is None:
            return texts
        needles = [text.split()[0] for text, _ in terms if text.split()]
        cut = [
            n
            for n, h in enumerate(hits)
            if len(h.text) >= preview and not _holds_all(h.text, needles)
        ][: _RANKED_CHARS_TOTAL // _RANKED_CHARS]
        for kind in ("message", "summary"):
            ids = [hits[n].id for n in cut if hits[n].kind == kind]
            if not ids:
                continue
            longer: dict[int, str] = budget.read(
                partial(self.store.beginnings_by_id, kind, ids, _RANKED_CHARS), {}
            )
            for n in cut:
                if hits[n].kind == kind and hits[n].id in longer:
                    texts[n] = longer[hits[n].id]
        return texts

    def _nearest(
        self,
        pattern: str,
        since: float | None,
        until: float | None,
        preview: int | None,
        access: Access,
        budget: WorkBudget,
    ) -> list[SearchHit]:
        """The messages nearest to ``pattern`` in meaning (semantic.py): extra candidates.
        Embedding the messages that have no vector yet takes at most half the time left."""
        cfg = self.config
        shown = preview or cfg.grep_whole_text_chars

        def nearest() -> list[SearchHit]:
            now = time.monotonic()
            return nearest_messages(
                cast(VectorStore, self.store), access.conversation_ids, pattern, since, until,
                (cfg.semantic_candidates, cfg.semantic_max_vectors, shown),
                now + (budget.deadline - now) / 2,
            )  # fmt: skip

        return budget.read(nearest, [], statements=3)

    def _seeds(
        self,
        query: FtsQuery,
        pools: dict[SearchTarget, int],
        limit: int,
        caller: CallerAccess,
        budget: WorkBudget,
    ) -> Seeds | None:
        """The rarest terms of a plain query (seeds.py): those whose matches in the history
        (messages and summaries together: a summary restates its messages) fit a share of
        the pools, else those whose matches fit the relevance window but for a term in
        more than half of the texts (the store ranks them and keeps the pools' best). None
        when even the rarest overflows the window. The first counts bring the caller's
        access along (the grep's first statement)."""

        def seeds_within(cap: int, texts: int | None = None) -> tuple[Seeds | None, bool]:
            """The seeds whose matches fit ``cap`` (none in more than half of ``texts``),
            and whether any operand matched."""
            counts = budget.read(
                partial(caller.with_counts, list(pools), query.operands, cap + 1), None
            )
            if counts is None:
                return None, False
            totals = capped_totals(counts, cap + 1)
            seeds = choose_seeds(query.operands, totals, cap, texts)
            if seeds is None:
                return None, any(totals)
            holding = holding_targets(seeds, query.operands, counts)
            return replace(seeds, targets=holding), True

        pool = max(limit, int(sum(pools.values()) * SEED_SHARE))
        seeds, matched = seeds_within(pool)
        if seeds is not None or not matched:
            return seeds
        texts = budget.read(partial(self.store.indexed_texts, list(pools)), None)
        wide, _ = seeds_within(self.config.grep_relevance_window, texts)
        return None if wide is None else replace(wide, whole=False)

    def _alternative_matches(
        self,
        expansion: Expansion,
        short: list[SearchTarget],
        pools: dict[SearchTarget, int],
        limit: int,
        searches: _Searches,
        budget: WorkBudget,
    ) -> list[SearchHit]:
        """Every match of the rarest alternatives that fit a share of the pools of
        ``short``, as the query's own words are chosen (seeds.py). An alternative too
        common to fit finds nothing of its own: it ranks below the words as written
        anyway, so its newest matches would cost a pool's reranking and rarely reach the
        page; it still counts in the reranking of the candidates found."""
        pool = max(limit, int(sum(pools[target] for target in short) * SEED_SHARE))
        counts = budget.read(
            partial(self.store.match_counts_by_target, short, expansion.operands, pool + 1), None
        )
        totals = capped_totals(counts or (), pool + 1)
        seeds = None if counts is None else choose_seeds(expansion.operands, totals, pool)
        if seeds is None:
            return []
        holding = holding_targets(seeds, expansion.operands, counts or ())
        among = [target for target in short if target in holding]
        found = budget.read(
            searches(among, seeds.expression, every_match=True), None, statements=len(among)
        )
        return [hit for hits in (found or {}).values() for hit in hits]

    def _matches(
        self,
        query: FtsQuery,
        seeds: Seeds | None,
        pools: dict[SearchTarget, int],
        searches: _Searches,
        limit: int,
        every: str | None,
        budget: WorkBudget,
    ) -> tuple[list[SearchHit], list[SearchTarget]]:
        """The candidates to rank, and the targets whose matches of the words as written
        are fewer than their pool holds (alternatives are searched there as well).

        With seeds, every match of the rare terms is ranked, however old: all of them are
        candidates, or the store's best of them by relevance when they are more than the
        pools hold. Without (even the rarest term matches more than the relevance window
        holds), or when the rare terms found fewer than ``limit`` while a common one was
        left out, the newest matches of the whole query are candidates too, with the
        matches holding every term (``every``) from the whole history."""
        hits: list[SearchHit] = []
        short: list[SearchTarget] = []
        targets = list(pools)
        if seeds is not None:
            # Every match of the seeds is ranked (they were counted: at most a window's
            # worth), without looking for a window of newest ones.
            # A target without a match of the seeds is not searched: none to find there.
            among = targets if seeds.targets is None else [t for t in targets if t in seeds.targets]
            all_terms = None if seeds.whole else every
            found = budget.read(
                searches(among, seeds.expression, all_terms, every_match=True),
                None,
                statements=len(among),
            )
            if found is None:
                return hits, short
            for target in targets:
                matches = found.get(target, [])
                if not seeds.skipped and len(matches) < pools[target]:
                    short.append(target)
                hits += matches
            if not seeds.skipped or len(hits) >= limit:
                return hits, short
        seen = {(h.kind, h.id) for h in hits}
        newest = budget.read(
            searches(targets, query.expression, every), None, statements=len(targets)
        )
        for target, matches in (newest or {}).items():
            if len(matches) < pools[target]:
                short.append(target)
            hits += [h for h in matches if (h.kind, h.id) not in seen]
        return hits, short

    def _with_snippets(
        self,
        hits: list[SearchHit],
        expression: str,
        terms: tuple[list[tuple[str, bool]], list[tuple[str, bool]]],
        budget: WorkBudget,
    ) -> list[SearchHit]:
        """``hits`` with each previewed long text replaced by fragments around the query's
        rarest words in it (snippets.py): the words as written (``terms[0]``), else
        their alternatives, else the store's snippet (a stemmed match); out of budget:
        its beginning. A preview shorter than the relevance searches read is the whole
        text: only the others are read again."""
        whole = self.config.grep_whole_text_chars
        preview = whole * _PREVIEW_FACTOR
        snippets: dict[tuple[str, int], str] = {}
        kinds: tuple[tuple[ItemKind, SearchTarget], ...] = (
            ("message", "messages"),
            ("summary", "summaries"),
        )
        for kind, target in kinds:
            long_hits = [h for h in hits if h.kind == kind and len(h.text) > whole]
            long_ids = [h.id for h in long_hits]
            contents = {h.id: h.text for h in long_hits if len(h.text) < preview}
            cut = [i for i in long_ids if i not in contents]
            if cut:
                stored: dict[int, str] = budget.read(
                    partial(self.store.contents_by_id, kind, cut), {}
                )
                contents.update(stored)
            for i, content in contents.items():
                fragments = term_snippet(content, terms[0], whole, terms[1])
                if fragments is not None:
                    snippets[(kind, i)] = fragments
            stemmed = [i for i in long_ids if (kind, i) not in snippets]
            if stemmed:
                found: dict[int, str] = budget.read(
                    partial(self.store.snippets, target, expression, stemmed, whole), {}
                )
                snippets.update({(kind, i): text for i, text in found.items()})
        return [
            h
            if len(h.text) <= whole
            else h._replace(text=snippets.get((h.kind, h.id)) or h.text[:whole] + "…")
            for h in hits
        ]

    def _regex(
        self,
        pattern: str,
        ignore_case: bool,
        targets: list[SearchTarget],
        since: float | None,
        until: float | None,
        limit: int,
        sort: str,
        access: Access,
        result: dict[str, Any],
        budget: WorkBudget,
    ) -> list[SearchHit]:
        cfg = self.config
        problem = regex_cost_problem(pattern, _MAX_REGEX_WEIGHT, _MAX_REGEX_NESTING)
        if problem is not None:
            raise ToolArgumentError(f"'pattern' is too costly to compile: {problem}")
        try:
            compiled = regex.compile(pattern, regex.IGNORECASE if ignore_case else 0)
        except (regex.error, OverflowError, RecursionError) as exc:
            raise ToolArgumentError(f"'pattern' is not a valid regex: {exc}") from None
        deadline = min(time.monotonic() + cfg.grep_regex_timeout_seconds, budget.deadline)
        per_target = max(1, cfg.grep_max_rows_scanned // len(targets))
        found: list[tuple[SearchHit, int]] = []
        scanned, timed_out, capped = 0, False, False
        for target in targets:
            rows = self.store.scan_recent(access.conversation_ids, target, since, until, per_target)
            want = limit if sort == "recency" else cfg.grep_max_limit
            scan = regex_scan(compiled, rows, want, deadline, cfg.grep_whole_text_chars)
            scanned += scan.rows_scanned
            timed_out = timed_out or scan.timed_out
            capped = capped or scan.rows_scanned >= per_target
            for hit, snippet, count in scan.hits:
                found.append((_with_text(hit, snippet), count))
        result.update(rows_scanned=scanned, timed_out=timed_out, scan_capped=capped)
        if sort == "relevance":
            found.sort(key=lambda f: (-f[1], -f[0].created_at))
        else:
            found.sort(key=lambda f: (f[0].created_at, f[0].id), reverse=True)
        return _messages_first([h for h, _ in found], limit)

    def _hit_item(
        self,
        hit: SearchHit,
        access: Access,
        parents: dict[int, int],
        similar: tuple[SearchHit, ...],
        inner: list[SearchHit] | None,
        differences: dict[int, str] | None,
    ) -> dict[str, Any]:
        """One result; ``parents`` maps message hits to their covering summaries (read for
        all hits at once); ``similar`` are the near-duplicates folded under it, ``inner``
        the matching messages of a summary hit that lists them, ``differences`` (by a
        folded hit's id) the lines of that hit this one lacks."""
        ref = message_ref if hit.kind == "message" else summary_ref
        item: dict[str, Any] = {
            "id": ref(hit.id),
            "kind": hit.kind,
            "time": iso_time(hit.created_at),
        }
        if hit.kind == "message":
            item["role"] = hit.role
            item["seq"] = hit.seq
            parent = parents.get(hit.id)
            item["covered_by"] = summary_ref(parent) if parent is not None else None
        else:
            item["depth"] = hit.depth
        item["snippet"] = hit.text
        if inner is not None:
            item["matching_messages"] = [
                {"id": message_ref(h.id), "role": h.role, "seq": h.seq, "snippet": h.text}
                for h in inner
            ]
        if similar:
            item["similar"] = {
                "count": len(similar),
                "ids": [ref(h.id) for h in similar[:_SIMILAR_IDS_SHOWN]],
            }
            if differences:
                item["similar"]["differences"] = [
                    {"id": ref(i), "differs": text} for i, text in differences.items()
                ]
        if hit.score is not None:
            item["score"] = round(-hit.score, 4)
        grant = access.grant_for(hit.conversation_id)
        if grant is not None:
            item["_grant"] = grant.id
            item["session"] = grant.parent_session_id
        return item

    def _inner_hits(self, summary_ids: list[int], fts_query: str) -> dict[int, list[SearchHit]]:
        """The verbatim messages under summary hits that match too: ids to expand."""
        return self.store.search_within_summaries(
            summary_ids, fts_query, _INNER_HITS,
            min(self.config.grep_whole_text_chars, _INNER_WHOLE_CHARS),
        )  # fmt: skip

    # lcm_describe

    def describe(self, args: dict[str, Any], access: Access) -> dict[str, Any]:
        kind, obj = self._resolve(args, access)
        include = _get(args, "include_content", bool, False)
        if kind == "summary":
            summary: StoredSummary = obj
            _, sources = self.store.summary_source_ids(summary.id)
            source_ref = message_ref if summary.kind == "leaf" else summary_ref
            out: dict[str, Any] = {
                "id": summary_ref(summary.id),
                "kind": "summary",
                "summary_kind": summary.kind,
                "depth": summary.depth,
                "token_count": summary.token_count,
                "time_range": [iso_time(summary.earliest_at), iso_time(summary.latest_at)],
                "message_seq_range": [summary.first_seq, summary.last_seq],
                "descendant_messages": summary.descendant_messages,
                "descendant_summaries": summary.descendant_summaries,
                "source_tokens": summary.source_tokens,
                "summarizer_level": summary.summarizer_level,
                "sources": [source_ref(s) for s in sources[:_DESCRIBE_SOURCES]],
                "sources_total": len(sources),
                "lineage": [summary_ref(s) for s in self._ancestors("summary", summary.id)],
            }
            if include:
                out["content"] = summary.content
            limit = _get(args, "max_tokens", int, self.config.expand_default_tokens, minimum=1)
        else:
            message: StoredMessage = obj
            out = {
                "id": message_ref(message.id),
                "kind": "message",
                "uid": message.message_uid,
                "role": message.role,
                "seq": message.seq,
                "time": iso_time(message.created_at),
                "token_count": message.token_count,
                "tool_call_id": message.tool_call_id,
                "tool_name": message.tool_name,
                "large_output": message.externalized,
                "lineage": [summary_ref(s) for s in self._ancestors("message", message.id)],
            }
            limit = _get(args, "max_tokens", int, self.config.expand_default_tokens, minimum=1)
            if include:
                out.update(self._message_page(message, args, _shell_tokens(out, self.count)))
        via = self._covering_item(kind, obj)
        out["in_active_context"] = via == out["id"]
        out["in_active_context_via"] = via
        grant = access.grant_for(obj.conversation_id)
        if grant is not None:
            out["_grant"] = grant.id
            out["session"] = grant.parent_session_id
        limit = max(min(limit, self.config.expand_max_tokens), MIN_DESCRIBE_TOKENS)
        out = bounded(out, limit, self.count)
        charged = self._charge([out], access)
        if not charged:
            return {"error": "sub-agent grant token cap reached; ask the parent agent instead"}
        return charged[0]

    def _ancestors(self, kind: str, ref_id: int) -> list[int]:
        """The summaries above an item, nearest first (at most ``_LINEAGE_SHOWN``)."""
        chain: list[int] = []
        parent = (
            self.store.parent_summary_of_message(ref_id)
            if kind == "message"
            else self.store.parent_summary_of_summary(ref_id)
        )
        while parent is not None and len(chain) < _LINEAGE_SHOWN:
            chain.append(parent)
            parent = self.store.parent_summary_of_summary(parent)
        return chain

    def _covering_item(self, kind: str, obj: StoredMessage | StoredSummary) -> str | None:
        """The id of the active context item that holds or covers ``obj`` (None: an old
        context, e.g. before a reset). Found by sequence range among the context items."""
        seq = obj.seq if isinstance(obj, StoredMessage) else obj.first_seq
        items = self.store.context_items(obj.conversation_id)
        for item in items:
            if item.kind == kind and item.ref_id == obj.id:
                return message_ref(obj.id) if kind == "message" else summary_ref(obj.id)
        summaries = self.store.summaries_by_id(i.ref_id for i in items if i.kind == "summary")
        for summary in summaries.values():
            if summary.first_seq <= seq <= summary.last_seq:
                return summary_ref(summary.id)
        return None

    # lcm_expand

    def expand(self, args: dict[str, Any], access: Access) -> dict[str, Any]:
        kind, obj = self._resolve(args, access)
        max_tokens = _get(args, "max_tokens", int, self.config.expand_default_tokens, minimum=1)
        max_tokens = min(max_tokens, self.config.expand_max_tokens)
        grant = access.grant_for(obj.conversation_id)
        if grant is not None:
            max_tokens = min(max_tokens, max(0, grant.token_cap - grant.tokens_used))
            if grant.token_cap - grant.tokens_used < MIN_RESULT_TOKENS:
                return {"error": "sub-agent grant token cap reached; ask the parent agent instead"}
        if kind == "message":
            if args.get("max_tokens") is None:
                max_tokens = self.config.expand_max_tokens
                if grant is not None:
                    max_tokens = min(max_tokens, grant.token_cap - grant.tokens_used)
            out: dict[str, Any] = {"id": message_ref(obj.id), "kind": "message"}
            out.update(
                self._message_page(
                    obj, {**args, "max_tokens": max_tokens}, _shell_tokens(out, self.count)
                )
            )
            return self._charge_expansion(bounded(out, max_tokens, self.count), grant)
        summary: StoredSummary = obj
        start = _get(args, "start", int, 0, minimum=0)
        source_kind, source_ids = self.store.summary_source_ids(summary.id)
        out = {
            "id": summary_ref(summary.id),
            "kind": "summary",
            "summary_kind": source_kind,
            "depth": summary.depth,
            "sources_total": len(source_ids),
            "start": start,
            "items": [],
        }
        used = 0
        index = start
        wanted = source_ids[start:]
        if source_kind == "leaf":
            loaded = self.store.messages_by_id(wanted[:256])
            for message_id in wanted:
                message = loaded.get(message_id) or self.store.message(message_id)
                if message is None:
                    break
                if used + message.token_count > max_tokens:
                    if not out["items"]:  # a message larger than the cap alone: page it
                        item = {"id": message_ref(message.id), "seq": message.seq}
                        shell = _shell_tokens({**out, "items": [item]}, self.count)
                        item.update(self._message_page(message, {"max_tokens": max_tokens}, shell))
                        out["items"].append(item)
                        index += 1
                    break
                out["items"].append(
                    {
                        "id": message_ref(message.id),
                        "seq": message.seq,
                        "time": iso_time(message.created_at),
                        "message": verbatim_message(message),
                    }
                )
                used += message.token_count
                index += 1
        else:
            loaded_summaries = self.store.summaries_by_id(wanted[:256])
            for summary_id in wanted:
                child = loaded_summaries.get(summary_id) or self.store.summary(summary_id)
                if child is None:
                    break
                cost = self.count(child.content)
                if out["items"] and used + cost > max_tokens:
                    break
                out["items"].append(
                    {
                        "id": summary_ref(child.id),
                        "summary_kind": child.kind,
                        "depth": child.depth,
                        "time_range": [iso_time(child.earliest_at), iso_time(child.latest_at)],
                        "message_seq_range": [child.first_seq, child.last_seq],
                        "content": child.content,
                    }
                )
                used += cost
                index += 1
        out["next_start"] = index if index < len(source_ids) else None
        return self._charge_expansion(bounded(out, max_tokens, self.count), grant)

    def _charge_expansion(self, out: dict[str, Any], grant: Grant | None) -> dict[str, Any]:
        if grant is not None:
            tokens = self.count(_json_text(out))
            self.store.charge_grant(grant.id, tokens)
            out["session"] = grant.parent_session_id
        return out

    def _message_page(
        self, message: StoredMessage, args: dict[str, Any], shell_tokens: int = 0
    ) -> dict[str, Any]:
        """The message verbatim; its content paged so that the result, with the
        ``shell_tokens`` around it, stays within the token cap."""
        max_tokens = _get(args, "max_tokens", int, self.config.expand_default_tokens, minimum=1)
        max_tokens = min(max_tokens, self.config.expand_max_tokens)
        offset = _get(args, "offset", int, 0, minimum=0)
        verbatim = verbatim_message(message)
        content = verbatim.get("content")
        # The column holds the searchable text (tool calls included); a string content
        # is paged as it was written.
        text = content if isinstance(content, str) else message.content
        if offset > len(text):
            raise ToolArgumentError(f"'offset' {offset} is past the end ({len(text)} characters)")
        room = max_tokens - shell_tokens - _PAGE_ENVELOPE_TOKENS
        decoded = _decoded_arguments(verbatim)
        if offset == 0 and message.token_count <= room:
            return {"message": verbatim, "total_chars": len(text), "next_offset": None, **decoded}
        others = {k: v for k, v in verbatim.items() if k != "content"}
        room -= self.count(_json_text(others))
        page, next_offset = _page(text, offset, max(1, room), self.count)
        if isinstance(verbatim.get("content"), str):
            verbatim["content"] = page
        else:
            verbatim = {k: v for k, v in verbatim.items() if k != "content"}
            verbatim["content_text"] = page
        return {
            "message": verbatim,
            "offset": offset,
            "total_chars": len(text),
            "next_offset": next_offset,
            "paged": True,
            **(decoded if offset == 0 else {}),
        }

    # Shared.

    def _resolve(self, args: dict[str, Any], access: Access) -> tuple[str, Any]:
        ref = _get(args, "id", str)
        if not ref:
            raise ToolArgumentError("'id' is required: a summary id (sum_N) or message id (msg_N)")
        ref = ref.strip()
        match = _ID.match(ref)
        allowed = set(access.conversation_ids)
        obj: StoredMessage | StoredSummary | None = None
        if match:
            number = int(match.group(2))
            kind = "summary" if match.group(1) == "sum" else "message"
            obj = self.store.summary(number) if kind == "summary" else self.store.message(number)
        elif _UID.match(ref):
            kind = "message"
            obj = self.store.message_by_uid(access.conversation_ids, ref.lower())
        else:
            raise ToolArgumentError(
                f"'id' {ref[:80]!r} is not an id; use sum_N, msg_N or a 32-hex message uid "
                "from lcm_grep or a summary header"
            )
        if obj is None or obj.conversation_id not in allowed:
            raise ToolArgumentError(f"no summary or message {ref!r} in this conversation's history")
        return kind, obj

    def _charge(self, items: list[dict[str, Any]], access: Access) -> EncodedItems:
        """Drop granted items beyond their grant's token cap; charge the rest; cap the output.
        The items kept come with the JSON texts they were measured by."""
        kept = EncodedItems()
        charges: dict[int, int] = {}
        size = 0
        for full in items:
            grant_id = full.pop("_grant", None)
            grant = next((g for g in access.grants.values() if g.id == grant_id), None)
            spent = 0 if grant is None else grant.tokens_used + charges.get(grant.id, 0)
            left = None if grant is None else grant.token_cap - spent
            # An item too large for the room left is kept without the steps around it.
            slim = {k: v for k, v in full.items() if k not in ATTACHED_KEYS}
            chosen: tuple[dict[str, Any], str, int] | None = None
            room = True
            for item in (full, slim) if len(slim) < len(full) else (full,):
                encoded = _result_text(item)
                room = not kept or size + len(encoded) <= self.config.tool_output_max_chars
                cost = self.count(encoded) if room and left is not None else 0
                if room and (left is None or cost <= left):
                    chosen = (item, encoded, cost)
                    break
            if chosen is None:
                if not room:
                    break
                continue  # beyond its grant's cap
            kept.append(chosen[0])
            kept.texts.append(chosen[1])
            size += len(chosen[1])
            if grant is not None:
                charges[grant.id] = charges.get(grant.id, 0) + chosen[2]
        for grant_id, tokens in charges.items():
            self.store.charge_grant(grant_id, tokens)
        return kept


def _decoded_arguments(message: dict[str, Any]) -> dict[str, Any]:
    """``{"tool_call_arguments": [...]}`` with each call's arguments decoded from their JSON
    text (the values as the agent wrote them, unescaped), or {} when no call has any."""
    calls = [
        {"name": name, "arguments": arguments}
        for name, arguments, decoded in decoded_calls(message)
        if decoded
    ]
    return {"tool_call_arguments": calls} if calls else {}


def _partial_reason(budget: WorkBudget, result: dict[str, Any], cfg: LcmConfig) -> str:
    """Why a grep result is partial, and what to do about it."""
    reasons = []
    if result.get("terms_dropped"):
        reasons.append(
            f"only the first {cfg.grep_max_terms} distinct terms were searched "
            f"({result['terms_dropped']} left out)"
        )
    if budget.exhausted == "time" or result.get("timed_out"):
        reasons.append(f"the {cfg.grep_time_budget_seconds:g} s time budget ran out")
    elif budget.exhausted == "work":
        reasons.append(f"the work cap of {cfg.grep_max_statements} store statements was reached")
    return "; ".join(reasons) + "; narrow the search (fewer words, since/until, scope)"


def _search_each(
    store: LcmStore, searches: list[FulltextSearch]
) -> dict[SearchTarget, list[SearchHit]]:
    """The hits of each search (one per target), by target, from one store call."""
    found = store.search_fulltext_many(searches)
    return {search.target: hits for search, hits in zip(searches, found, strict=True)}


def _covering_summaries(store: LcmStore, hits: list[SearchHit]) -> dict[int, int]:
    """The summary covering each message hit: read with the hit where the backend did so,
    the rest in one look-up."""
    parents = store.parent_summaries_of_messages(
        h.id for h in hits if h.kind == "message" and not h.lineage
    )
    parents.update({h.id: h.covered_by for h in hits if h.lineage and h.covered_by is not None})
    return parents


def _holds_all(text: str, needles: list[str]) -> bool:
    """Whether ``text`` holds each of ``needles`` (lowercase) as a string, in any case."""
    lowered = text.lower()
    return all(needle in lowered for needle in needles)


def _messages_first(hits: list[SearchHit], limit: int) -> list[SearchHit]:
    """Verbatim messages before summaries (kept in order); summaries keep a quarter of the
    slots when both kinds matched."""
    messages = [h for h in hits if h.kind == "message"]
    summaries = [h for h in hits if h.kind == "summary"]
    reserved = min(len(summaries), max(1, limit // 4)) if messages else len(summaries)
    taken = messages[: max(0, limit - reserved)]
    return (taken + summaries)[:limit]


def _with_text(hit: SearchHit, text: str) -> SearchHit:
    return hit._replace(text=text)


def _page(
    text: str, offset: int, max_tokens: int, count: Callable[[str], int]
) -> tuple[str, int | None]:
    """The longest prefix of ``text[offset:]`` we try within ``max_tokens``, and the next offset."""
    size = max_tokens * _CHARS_PER_TOKEN_GUESS
    piece = text[offset : offset + size]
    while len(piece) > 1 and count(piece) > max_tokens:
        piece = piece[: int(len(piece) * 0.85)]
    end = offset + len(piece)
    return piece, (end if end < len(text) else None)


def _shell_tokens(out: dict[str, Any], count: Callable[[str], int]) -> int:
    """Tokens of a result before its paged content is added."""
    return count(_json_text(out))


def bounded(out: dict[str, Any], max_tokens: int, count: Callable[[str], int]) -> dict[str, Any]:
    """``out`` within ``max_tokens`` tokens of JSON (at least :data:`MIN_RESULT_TOKENS`):
    the longest strings are cut (ending in "…") until it fits, and ``truncated`` says so.

    Paging keeps a message's content within the cap; this is the backstop for everything
    else a result carries (a summary's content, a tool call's arguments, other fields).
    """
    limit = max(max_tokens, MIN_RESULT_TOKENS) - 8  # room for the truncation mark
    tokens = count(_json_text(out))
    if tokens <= limit + 8:
        return out
    out = json.loads(_json_text(out))
    longest = limit * _CHARS_PER_TOKEN_GUESS * 2
    _cut_strings(out, longest + 1, longest)  # cheap first cut: no counting
    for _ in range(12):
        tokens = count(_json_text(out))
        top = max((len(text) for text in _strings(out)), default=0)
        if tokens <= limit or top <= 16:
            break
        _cut_strings(out, top // 2, max(8, min(top // 2, int(top * 0.9 * limit / tokens))))
    out["truncated"] = True
    return out


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _cut_strings(value: Any, min_chars: int, keep_chars: int) -> None:
    """Cut, in place, every string in ``value`` of at least ``min_chars`` characters to
    its first ``keep_chars``."""
    if isinstance(value, dict):
        items: Any = list(value.items())
    elif isinstance(value, list):
        items = list(enumerate(value))
    else:
        return
    for key, item in items:
        if isinstance(item, str):
            if len(item) >= min_chars and len(item) > keep_chars:
                value[key] = item[:keep_chars] + "…"
        else:
            _cut_strings(item, min_chars, keep_chars)
