"""Nothing left out silently: every live message is in the request or covered by it.

An engine's selection (or the host's own cut of an oversized request) may leave live
messages out only when something in the request represents them: a summary, declared
through ``AssembleResult.covers`` as message uids or inclusive ``(first_uid, last_uid)``
ranges. Live messages neither sent nor covered get an explicit omission marker in the
request, and the request reports how many there were (``ProviderRequest.omitted``).

The check is cheap: the sent messages (their positions found while the selection was
resolved) and the declared ranges are mapped to live positions through the live view's
uid index and merged as intervals, so it costs
O(k log k) for a request of k messages, never O(live view).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

Message = dict[str, Any]
Cover = str | tuple[str, str] | list[str]

#: How the marker opens; tests and reports look for it.
OMISSION_MARKER_PREFIX = "[ctxengine: omitted"


def sent_runs(sent: Sequence[int | None]) -> list[tuple[int, int]]:
    """The live positions a request sends (None: not live) as merged ``[start, end)`` runs."""
    return _index_runs(sorted(at for at in sent if at is not None))


def declared_spans(
    covers: Sequence[Cover], position: Callable[[Any], int | None]
) -> list[tuple[int, int]]:
    """The live ranges ``covers`` declare, merged; a cover whose ends are not live declares
    nothing."""
    spans = []
    for cover in covers:
        first, last = (cover, cover) if isinstance(cover, str) else tuple(cover)[:2]
        start, end = position(first), position(last)
        if start is not None and end is not None and start <= end:
            spans.append((start, end + 1))
    return merge_spans(spans)


def with_declared(
    runs: list[tuple[int, int]], declared: list[tuple[int, int]]
) -> list[tuple[int, int]]:
    """Merged ``runs`` and ``declared`` spans (new list unless ``declared`` is empty)."""
    return merge_spans(runs + declared) if declared else runs


def merge_spans(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``[start, end)`` spans, in any order, as the sorted union of disjoint spans."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _index_runs(indexes: list[int]) -> list[tuple[int, int]]:
    """Sorted live indexes as merged ``[start, end)`` runs.

    A selection's live messages are mostly consecutive: one integer comparison per
    index instead of a tuple per index, sorted and merged.
    """
    runs: list[tuple[int, int]] = []
    if not indexes:
        return runs
    start = end = indexes[0]
    for at in indexes:
        if at > end:
            runs.append((start, end))
            start = at
        end = at + 1
    runs.append((start, end))
    return runs


def uncovered_runs(live_count: int, covered: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The live index ranges ``[start, end)`` outside every covered interval."""
    runs: list[tuple[int, int]] = []
    at = 0
    for start, end in covered:
        if start > at:
            runs.append((at, start))
        at = max(at, end)
    if at < live_count:
        runs.append((at, live_count))
    return runs


def run_labels(runs: Sequence[tuple[int, int]]) -> str:
    """Runs of live positions as people count them: ``#3``, ``#5-#9``."""
    return ", ".join(f"#{s + 1}" if e - s == 1 else f"#{s + 1}-#{e}" for s, e in runs)


def omission_text(runs: Sequence[tuple[int, int]]) -> str:
    """The marker's text: how many messages, where, and that they are not summarized."""
    count = sum(end - start for start, end in runs)
    where = run_labels(runs)
    return (
        f"{OMISSION_MARKER_PREFIX} {count} earlier message{'s' if count != 1 else ''} "
        f"({where}) left out of this request without a summary; they are still stored]"
    )


def mark_omissions(
    body: list[Message], positions: Sequence[int | None], runs: list[tuple[int, int]]
) -> list[Message]:
    """``body`` (provider copies, their live ``positions`` in parallel) with a marker per gap.

    A marker stands right before the first sent message that follows its run (at the end
    when none does). It joins a neighbouring user message when there is one, so the
    request keeps its user/assistant alternation; otherwise it is a user message of its own.
    """
    out: list[Message] = []
    pending = list(runs)
    for message, at in zip(body, positions, strict=True):
        if at is not None and pending and at >= pending[0][1]:
            due = []
            while pending and at >= pending[0][1]:
                due.append(pending.pop(0))
            text = omission_text(due)
            if _is_text_user(message):
                message = {**message, "content": f"{text}\n\n{message['content']}"}
            else:
                _append_marker(out, text)
        out.append(message)
    if pending:
        _append_marker(out, omission_text(pending))
    return out


def _is_text_user(message: Message | None) -> bool:
    return (
        message is not None
        and message.get("role") == "user"
        and isinstance(message.get("content"), str)
    )


def _append_marker(out: list[Message], text: str) -> None:
    """The marker joins the previous user message, or becomes a user message of its own."""
    if out and _is_text_user(out[-1]):
        out[-1] = {**out[-1], "content": f"{out[-1]['content']}\n\n{text}"}
    else:
        out.append({"role": "user", "content": text})
