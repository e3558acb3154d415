"""What sets a near-duplicate apart from the hit it is folded under (``lcm_grep``).

Near-duplicates are folded so that each result slot shows a distinct text, but texts
that repeat each other's words differ in exactly the detail a question is often about:
an agent retries an edit with the line range one off (``edit 287:295`` three times,
then ``edit 287:296``), reruns a test whose last line changed, reads a file again after
changing one value. Each folded hit shown by id therefore also shows its lines the
leader does not have (compared with surrounding whitespace ignored), in order, each cut
short: the detail is seen without expanding every folded id. The texts compared are the
stored ones (a hit's text is a preview or a snippet), read in one look-up per kind.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .store import ItemKind, LcmStore, SearchHit

#: Characters shown of each differing line, and of all of them together.
LINE_CHARS = 100
TOTAL_CHARS = 240
#: Characters of a stored text compared (the beginning of a very long output).
COMPARED_CHARS = 20_000
_GAP = "\n…\n"

Key = tuple[ItemKind, int]


def folded_differences(
    store: LcmStore, folded: Mapping[Key, Sequence[SearchHit]], shown: int
) -> dict[Key, dict[int, str]]:
    """For each leader (by kind and id), the differing lines of its first ``shown``
    folded hits that have some, by the folded hit's id."""
    wanted: dict[ItemKind, set[int]] = {"message": set(), "summary": set()}
    for (kind, leader), hits in folded.items():
        if hits:
            wanted[kind].update((leader, *(h.id for h in hits[:shown])))
    texts: dict[Key, str] = {
        (kind, i): text
        for kind, ids in wanted.items()
        if ids
        for i, text in store.contents_by_id(kind, sorted(ids)).items()
    }
    out: dict[Key, dict[int, str]] = {}
    for (kind, leader), hits in folded.items():
        base = texts.get((kind, leader))
        if base is None:
            continue
        mine = {}
        for hit in hits[:shown]:
            other = texts.get((kind, hit.id))
            differing = differing_lines(base, other) if other is not None else None
            if differing is not None:
                mine[hit.id] = differing
        if mine:
            out[(kind, leader)] = mine
    return out


def differing_lines(leader: str, other: str) -> str | None:
    """The lines of ``other`` missing from ``leader``, in order, at most
    :data:`TOTAL_CHARS` characters (a gap marks lines skipped between two); None when
    every line of ``other`` is in ``leader``."""
    present = {line.strip() for line in leader[:COMPARED_CHARS].splitlines()}
    out = ""
    skipped = False
    for line in other[:COMPARED_CHARS].splitlines():
        text = line.strip()
        if not text or text in present:
            skipped = skipped or bool(text)
            continue
        cut = text[:LINE_CHARS] + ("…" if len(text) > LINE_CHARS else "")
        joint = (_GAP if skipped else "\n") if out else ""
        if len(out) + len(joint) + len(cut) > TOTAL_CHARS:
            break
        out += joint + cut
        skipped = False
    return out or None
