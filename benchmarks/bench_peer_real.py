"""``bench_peer`` on real transcripts: our exported ``lcm`` and the peer, side by side.

The synthetic session of ``bench_peer`` is short, even messages of made-up words. Real
sessions are not: file dumps of 10,000 characters next to one-line answers, and words
a codebase repeats everywhere. This runs session files (``ctxengine convert`` writes
them from Claude Code, Codex, mini-swe-agent, SWE-agent, OpenHands, OpenAI Agents SDK
and LangChain transcripts) through the same ABC-style loop and prints the same figures.
The files' messages make one long session, in the order given, cut into model calls (a
call answers what came after the previous assistant message).

Search is measured with known-item queries built from the session itself (none is
hand-picked): 50 messages spread evenly over it, each sought with its three rarest words
(whole words of 4-20 letters found in at least 3 messages, rarest first: the distinctive
words an agent recalls). The answer counts as found when it shows the 12-20 characters
that follow the rarest of them in the sought message (a passage no other message holds,
with no query word in it, so neither engine's highlighting splits it): a result whose
text or snippet takes in that place of the message. A result listing the message with a
snippet of another part of it does not count: the agent would need another call.

    ctxengine convert --from mini-swe-agent run.traj.json /tmp/real/run.jsonl
    .venv/bin/python benchmarks/bench_peer_real.py /tmp/real/*.jsonl
    .venv/bin/python benchmarks/bench_peer_real.py /tmp/real/*.jsonl --peer-src /tmp/hermes-lcm
    .venv/bin/python benchmarks/bench_peer_real.py /tmp/real/*.jsonl \
        --postgres postgresql://postgres@127.0.0.1:5432/test     # ours on SQLite and PostgreSQL

Transcripts and sessions made from them are other people's data: keep them out of the
repository.
"""

from __future__ import annotations

import argparse
import gc
import json
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import bench_peer as peer

from ctxengine_host.contract.messages import content_text
from ctxengine_host.replay.sessionfile import load_session

QUERIES = 50
#: The fields a framework host's chat messages carry (the session format adds others).
_CHAT_FIELDS = ("role", "content", "tool_calls", "tool_call_id", "name")
_WORD = re.compile(r"\w+")
#: The characters a sought passage may hold: none that an answer's JSON would escape.
_PASSAGE = re.compile(r"[ A-Za-z0-9.,:;()=/+-]{12,20}")
#: A query word is seen by its stem; these first letters of it must not be in the passage.
_STEM_CHARS = 4


def load_messages(paths: Sequence[Path]) -> list[dict[str, Any]]:
    """The chat messages of the session files, in order, as a framework host holds them."""
    messages = []
    for path in paths:
        for message in load_session(path).messages:
            messages.append({k: message[k] for k in _CHAT_FIELDS if k in message})
    return messages


def model_call_turns(messages: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The messages grouped by model call: a turn ends before an assistant message that
    follows anything but user messages (the host ran tools, or a new request began)."""
    turns: list[list[dict[str, Any]]] = []
    current: list[dict[str, Any]] = []
    for message in messages:
        after_call = any(m["role"] != "user" for m in current)
        if message["role"] == "assistant" and after_call:
            turns.append(current)
            current = []
        current.append(message)
    if current:
        turns.append(current)
    return turns


def _words(text: str) -> set[str]:
    """The lowercased whole words of 4-20 ASCII letters in ``text``."""
    return {
        w.lower() for w in _WORD.findall(text) if 4 <= len(w) <= 20 and w.isascii() and w.isalpha()
    }


def known_item_queries(
    messages: list[dict[str, Any]], count: int = QUERIES
) -> list[tuple[str, str]]:
    """``count`` (query, sought passage) pairs for messages spread evenly over the session
    (module docstring): from each spread point, the first message that yields one."""
    texts = [content_text(m) or "" for m in messages]
    words = [_words(text) for text in texts]
    frequency = Counter(w for held in words for w in held)
    everything = "\n".join(texts)
    queries: list[tuple[str, str]] = []
    taken: set[int] = set()
    for point in range(count):
        start = point * len(messages) // count
        for index in range(start, len(messages)):
            if index in taken:
                continue
            query = _query_for(texts[index], words[index], frequency, everything)
            if query is not None:
                queries.append(query)
                taken.add(index)
                break
    return queries


def _query_for(
    text: str, held: set[str], frequency: Counter[str], everything: str
) -> tuple[str, str] | None:
    """The query and sought passage of one message, or None when it has no three words
    seen in at least 3 messages or no passage that identifies it."""
    rare = sorted((frequency[w], w) for w in held if frequency[w] >= 3)[:3]
    if len(rare) < 3:
        return None
    chosen = [w for _, w in rare]
    occurrences = list(re.finditer(rf"(?<!\w){re.escape(chosen[0])}(?!\w)", text, re.IGNORECASE))
    if len(occurrences) != 1:
        return None
    passage = _PASSAGE.match(text, occurrences[0].end())
    if passage is None:
        return None
    sought = passage.group(0)
    lowered = sought.lower()
    if any(w[:_STEM_CHARS] in lowered for w in chosen) or everything.count(sought) != 1:
        return None
    return " ".join(chosen), sought


def run_one(
    which: str, paths: Sequence[Path], peer_src: str | None, postgres: str | None
) -> dict[str, Any]:
    """The session files through one engine (``ours-pg``: ours with its store in a fresh
    schema of ``postgres``); the figures."""
    messages = load_messages(paths)
    queries = known_item_queries(messages)
    characters = sum(len(content_text(m) or "") for m in messages)
    measurable = _reset_peak_rss()
    turns = model_call_turns(messages)
    with peer.fresh_schema(postgres if which == "ours-pg" else None) as database:
        result = peer.run_session(which, turns, queries, peer_src, database)
    result["characters"] = characters
    if not measurable:
        result["peak_rss_mib"] = "not measured"
    return result


def _reset_peak_rss() -> bool:
    """Start the process's peak RSS afresh (Linux), so the engine's peak is measured above
    the session as loaded, not under the peak its parsing reached; False where it cannot."""
    gc.collect()
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def in_subprocess(
    which: str, paths: Sequence[Path], peer_src: str | None, postgres: str | None
) -> dict[str, Any]:
    command = [__file__, "--one", which, *map(str, paths)]
    command += ["--peer-src", peer_src] if peer_src else []
    command += ["--postgres", postgres] if postgres else []
    return peer.run_child(command, which)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sessions", nargs="+", type=Path, help="session files (ctxengine convert)")
    parser.add_argument("--peer-src", help="a checkout of the peer engine (never committed)")
    parser.add_argument("--repeats", type=int, default=1, help="interleaved runs per engine")
    parser.add_argument("--json", action="store_true", help="print the raw runs as JSON too")
    parser.add_argument("--postgres", help=peer.POSTGRES_HELP)
    parser.add_argument("--one", choices=("ours", "peer", "ours-pg"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one, args.sessions, args.peer_src, args.postgres)))
        return
    engines = ["ours", "peer"] if args.peer_src else ["ours"]
    engines += ["ours-pg"] if args.postgres else []
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in engines}
    for _ in range(args.repeats):
        for name in engines:
            runs[name].append(in_subprocess(name, args.sessions, args.peer_src, args.postgres))
    first = runs["ours"][0]
    if args.peer_src:
        source = Path(args.peer_src)
        print(f"peer: {source.resolve()} at commit {peer.peer_commit(source)}")
    print(
        f"{len(args.sessions)} session files: {first['messages']:,} messages, "
        f"{first['characters']:,} characters; window {peer.WINDOW} tokens, host counts "
        f"chars/4; {first['recall'].split('/')[1]} known-item queries"
    )
    print(peer.table({first["messages"]: runs}, bool(args.peer_src)))
    if args.postgres:
        print(f"\nours, its store on SQLite and on PostgreSQL ({args.postgres}):")
        print(peer.store_table({first["messages"]: runs}))
    if args.json:
        print(json.dumps(runs, indent=1))


if __name__ == "__main__":
    main()
