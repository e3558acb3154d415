"""What a framework host's message list holds that an exported engine has not stored yet.

A framework host keeps the history itself, with no message uids, replaces it
with whatever ``compress`` returns, and shows it to the engine at ``compress``,
``select_context``, ``on_turn_complete`` and ``handle_tool_call(messages=...)``
(the released package calls only the first and the last). :class:`HostView`
remembers the list as last seen (by a fingerprint of each message) and tells
which messages of a new list are new:

* the longest prefix equal to the list last seen is known;
* when the host rewrote a known message in place (a sanitizer, a pruned tool
  output), the known tail is looked for further on, so only what follows it
  is new;
* a leading system message is the host's system prompt, never a message of
  the conversation; messages the engine itself produced (its summaries) are
  recognised by fingerprint wherever they come back.

Each new message gets a uid from the session and its ordinal, so a message
stored once is never stored again, and identical messages sent on purpose are
stored each time.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from ...contract.messages import content_text, uid_problem
from ...json_text import json_dumper

Message = dict[str, Any]

#: How many of the last known fingerprints must match for a realignment.
ALIGN_RUN = 3
#: ``json.dumps(value, default=str)`` with its encoder built once (a fingerprint's text
#: must not change: it goes into the uids of stored messages).
_KEY_JSON = json_dumper(ensure_ascii=True)


def fingerprint(message: Any) -> str:
    """Role, text, tool call ids and names: what a host keeps when it copies a message."""
    if not isinstance(message, dict):
        return "?"
    calls = [
        [c.get("id"), (c.get("function") or {}).get("name")]
        for c in message.get("tool_calls") or []
        if isinstance(c, dict)
    ]
    key = [message.get("role"), content_text(message), message.get("tool_call_id"), calls]
    return hashlib.blake2b(_KEY_JSON(key).encode(), digest_size=12).hexdigest()


class HostView:
    """The host's list as last seen, and the uids given to the messages taken from it."""

    def __init__(self, session_id: str = "default") -> None:
        self.session_id = session_id
        self._known: list[str] = []
        self._produced: set[str] = set()
        self._ordinal = 0
        #: Fingerprints of the messages of the list last seen, by object: a host passes
        #: the same dicts turn after turn, so each is fingerprinted once.
        self._prints: dict[int, tuple[Any, str]] = {}
        #: The message objects of the list last seen (``_known`` are their fingerprints).
        self._objects: list[Any] = []

    def reset(self, session_id: str) -> None:
        self.session_id = session_id
        self._known = []
        self._produced = set()
        self._ordinal = 0
        self._prints = {}
        self._objects = []

    def _appended_to_last(self, messages: Sequence[Any]) -> bool:
        """True when ``messages`` is the list last seen, same objects, plus new ones at the
        end: its first message and the last :data:`ALIGN_RUN` known ones are where they
        were. A message rewritten in place further back is then never new, which is also
        what the full comparison concludes (the known tail is found where it was)."""
        objects = self._objects
        if not objects or len(messages) < len(objects) or messages[0] is not objects[0]:
            return False
        tail = range(max(1, len(objects) - ALIGN_RUN), len(objects))
        return all(messages[i] is objects[i] for i in tail)

    def _print_of(self, message: Any) -> str:
        """``fingerprint(message)``, from the cache when it is a message of the list last seen."""
        held = self._prints.get(id(message))
        return held[1] if held is not None and held[0] is message else fingerprint(message)

    def _fingerprints(self, messages: Sequence[Any]) -> list[str]:
        prints = []
        fresh: dict[int, tuple[Any, str]] = {}
        for message in messages:
            value = self._print_of(message)
            fresh[id(message)] = (message, value)
            prints.append(value)
        self._prints = fresh
        return prints

    def take_new(self, messages: Sequence[Any]) -> list[Message]:
        """The messages of ``messages`` not seen before, stamped with uids; the view moves on.

        A host that appended to the list it showed last costs only the new messages: the
        history is neither walked nor fingerprinted again."""
        messages = without_system_prompt(messages)
        if self._appended_to_last(messages):
            start = len(self._objects)
            added = messages[start:]
            prints = self._known  # extended in place: O(new messages)
            prints.extend(fingerprint(m) for m in added)
            self._objects.extend(added)
            self._prints.update((id(m), (m, p)) for m, p in zip(added, prints[start:], strict=True))
        else:
            prints = self._fingerprints(messages)
            start = self._new_from(prints)
            self._objects = list(messages)
        fresh: list[Message] = []
        for index in range(start, len(messages)):
            message = messages[index]
            if not isinstance(message, dict) or prints[index] in self._produced:
                continue
            self._ordinal += 1
            uid = message.get("message_uid")
            if not isinstance(uid, str) or uid_problem(uid) is not None:
                uid = self._uid(prints[index])  # none, or one no store could key the row by
            fresh.append({**message, "message_uid": uid})
        self._known = prints
        return fresh

    def returned(self, messages: Sequence[Any], shown: Sequence[Any]) -> None:
        """The host will hold ``messages`` next (what ``compress`` returned for the list
        ``shown``); those ``shown`` did not hold are the engine's own (its summaries), never
        stored as raw. Each message is fingerprinted once: ``shown`` was seen just before."""
        known = {self._print_of(m) for m in shown}
        kept = without_system_prompt(messages)
        prints = self._fingerprints(kept)
        heads = [fingerprint(messages[0])] if len(kept) < len(messages) else []
        self._produced.update(p for p in (*heads, *prints) if p not in known)
        self._known = prints
        self._objects = list(kept)

    def _new_from(self, prints: list[str]) -> int:
        known = self._known
        prefix = 0
        for have, want in zip(prints, known, strict=False):
            if have != want:
                break
            prefix += 1
        if prefix == len(known) or not known:
            return prefix
        run = known[-ALIGN_RUN:]
        for end in range(len(prints), len(run) - 1, -1):
            if prints[end - len(run) : end] == run:
                return end
        return prefix

    def _uid(self, print_: str) -> str:
        raw = f"{self.session_id}\0{self._ordinal}\0{print_}".encode()
        return "fw-" + hashlib.blake2b(raw, digest_size=12).hexdigest()


def without_system_prompt(messages: Sequence[Any]) -> Sequence[Any]:
    """``messages`` without a leading system message (the host's system prompt)."""
    if messages and isinstance(messages[0], dict) and messages[0].get("role") == "system":
        return messages[1:]
    return messages
