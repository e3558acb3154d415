"""Probe checks after a replay: did each planted fact survive?

Three questions per probe: is the answer in the final request (messages plus
the engine's system prompt addition, which the request's system message already
carries)? Can the engine's own search tool find a message holding it when
queried with keywords from the *question* (never the answer)? Does its expand /
describe tool give that message back verbatim?
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from itertools import accumulate
from typing import Any

from .model import ProbeResult
from .probes import Probe, message_pieces, searchable_text
from .sessionfile import ParsedSession

STOPWORDS = frozenset(
    """a an the of for to in on at by from with and or is are was were be been do does did
    what which where who whom whose when why how if i we you it its this that these those my
    our your me us should must can could would will now get gets got hit back these days
    according ask exact thing there here then than into out up down off about after before
    want need""".split()  # noqa: SIM905
)
ID_KEYS = ("message_uid", "uid", "id", "message_id", "summary_id", "node_id")
MAX_QUERIES = 5


def question_keywords(question: str) -> list[str]:
    """Content words of a question, most distinctive (longest) first."""
    words = re.findall(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*[A-Za-z0-9_]|[A-Za-z0-9]", question)
    seen: list[str] = []
    for word in words:
        lower = word.lower()
        if lower not in STOPWORDS and len(lower) > 2 and lower not in seen:
            seen.append(lower)
    return sorted(seen, key=len, reverse=True)


def request_text(request: Any) -> str:
    """All text a request carries (the system message includes the engine's addition)."""
    if request is None:
        return ""
    return "\n".join(searchable_text(m) for m in getattr(request, "messages", None) or ())


def evaluate_probes(
    probes: list[Probe],
    parsed: ParsedSession,
    final_request: Any,
    session: Any,
    engine_tools: list[dict[str, Any]],
) -> list[ProbeResult]:
    """One ProbeResult per probe, using the engine's tools when it has them."""
    context = request_text(final_request)
    search_tool = _first_tool(engine_tools, ("grep", "search"))
    expand_tool = _first_tool(engine_tools, ("expand", "describe"))
    pieces = SessionPieces(
        _session_pieces(parsed) if search_tool is not None and expand_tool else []
    )
    results = []
    for probe in probes:
        result = ProbeResult(
            id=probe.id,
            kind=probe.kind,
            question=probe.question,
            answer=probe.answer,
            planted_turn=probe.turn,
            in_context=probe.answer in context,
        )
        if search_tool is not None:
            _check_tools(result, probe, pieces, session, search_tool, expand_tool)
        results.append(result)
    return results


def _first_tool(tools: list[dict[str, Any]], needles: tuple[str, ...]) -> dict[str, Any] | None:
    for tool in tools:
        name = tool.get("function", {}).get("name", "").lower()
        if any(n in name for n in needles):
            return tool
    return None


def _argument_name(tool: dict[str, Any], preferred: tuple[str, ...]) -> str:
    """The parameter a tool takes its main string in: a preferred name, else the first required."""
    params = tool.get("function", {}).get("parameters", {}) or {}
    properties = params.get("properties", {}) or {}
    for name in preferred:
        if name in properties:
            return name
    required = params.get("required") or list(properties)
    return required[0] if required else preferred[0]


def _call(session: Any, tool: dict[str, Any], args: dict[str, Any]) -> Any:
    raw = session.call_engine_tool(tool["function"]["name"], args)
    try:
        return json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        return raw


def _check_tools(
    result: ProbeResult,
    probe: Probe,
    pieces: SessionPieces,
    session: Any,
    search_tool: dict[str, Any],
    expand_tool: dict[str, Any] | None,
) -> None:
    result.search_tool = search_tool["function"]["name"]
    arg = _argument_name(search_tool, ("query", "pattern", "q", "text"))
    keywords = question_keywords(probe.question)
    queries = [" ".join(keywords), *keywords[: MAX_QUERIES - 1]]
    holders = pieces.holding(probe.answer)
    result.search_found = False
    result.search_query = queries[0] if queries else ""
    if expand_tool is not None:
        result.expand_tool = expand_tool["function"]["name"]
        id_arg = _argument_name(expand_tool, ("message_uid", "id", "uid", "message_id", "ref"))
    named_ids = False
    for query in queries:
        found = _call(session, search_tool, {arg: query})
        hit_ids = _ids_holding(found, probe.answer)
        if not (hit_ids or _strings_holding(found, probe.answer)):
            continue
        named_ids = named_ids or bool(hit_ids)
        if not result.search_found:
            result.search_query, result.search_found = query, True
        if expand_tool is None:
            return
        # A hit can be a summary that holds the answer without naming the message (a
        # condensed one); as an agent would, search again with the next query then.
        for ident in hit_ids[:3]:
            expanded = _strings(_call(session, expand_tool, {id_arg: ident}))
            if any(piece in s for piece in holders for s in expanded):
                result.search_query, result.expand_verbatim = query, True
                return
    if result.search_found and expand_tool is not None:
        result.expand_verbatim = False
        result.detail = (
            "the search results name no message id to expand"
            if not named_ids
            else "the expanded message differs from the planted one"
        )


def _session_pieces(parsed: ParsedSession) -> list[str]:
    """The decoded pieces (content, argument values) of every session message, decoded once
    per replay: a piece holding a probe's answer given back verbatim is a verbatim recovery."""
    return [piece for message in parsed.messages for piece in message_pieces(message)]


class SessionPieces:
    """The session's pieces, joined once: the pieces holding an answer are found in one scan
    of the joined text (a piece holding one is a verbatim recovery), not one per piece."""

    #: Between two pieces in the joined text; an answer holding it is looked for piece by piece.
    SEPARATOR = "\0"

    def __init__(self, pieces: list[str]) -> None:
        self.pieces = pieces
        self._text = self.SEPARATOR.join(pieces)
        self._starts = list(accumulate((len(p) + 1 for p in pieces[:-1]), initial=0))

    def holding(self, answer: str) -> list[str]:
        """The pieces ``answer`` occurs in, in order (each once)."""
        if not answer or self.SEPARATOR in answer:
            return [piece for piece in self.pieces if answer in piece]
        found: list[str] = []
        at = self._text.find(answer)
        while at != -1:
            index = bisect_right(self._starts, at) - 1
            found.append(self.pieces[index])
            if index + 1 == len(self.pieces):
                break
            at = self._text.find(answer, self._starts[index + 1])
        return found


def _strings(value: Any) -> list[str]:
    """Every string inside a decoded JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _strings_holding(value: Any, answer: str) -> bool:
    return any(answer in s for s in _strings(value))


def _ids_holding(value: Any, answer: str) -> list[str]:
    """Ids of the result objects whose text holds ``answer``."""
    ids: list[str] = []
    if isinstance(value, dict):
        if _strings_holding({k: v for k, v in value.items() if k not in ID_KEYS}, answer):
            for key in ID_KEYS:
                if isinstance(value.get(key), (str, int)) and str(value[key]) not in ids:
                    ids.append(str(value[key]))
                    break
        for v in value.values():
            if isinstance(v, (dict, list)):
                ids += [i for i in _ids_holding(v, answer) if i not in ids]
    elif isinstance(value, list):
        for v in value:
            ids += [i for i in _ids_holding(v, answer) if i not in ids]
    return ids
