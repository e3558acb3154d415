"""Read-only message views handed to per-request engine hooks, at O(1) cost per call.

``select_context``, ``should_compress_preflight`` and ``on_turn_complete`` run on
every request or turn; copying the whole live view for each of them made host
work grow with the history. They get a :class:`MessagesView` instead: a
snapshot ``Sequence`` over the session's own messages whose items are fresh
private copies made when read. An engine pays only for the messages it reads
(LCM reads the newest one or two), and nothing it does to what it reads can
reach the store, the live view, or a later request. ``maintain`` gets a
:class:`TranscriptView` (read access to the session's store) instead.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, overload

if TYPE_CHECKING:
    from .session import Session
    from .store import StoredMessage

Message = dict[str, Any]

_ATOMS = (str, int, float, bool, type(None))


def copy_message(value: Any) -> Any:
    """A deep copy of JSON-shaped data (dicts, lists, scalars); other objects via deepcopy.

    Two to three times faster than :func:`copy.deepcopy` for chat messages (strings
    are immutable and shared), which matters because ``compress`` receives a private
    copy of the whole live view.
    """
    kind = type(value)
    if kind is dict:
        return {key: copy_message(item) for key, item in value.items()}
    if kind is list:
        return [copy_message(item) for item in value]
    if kind in _ATOMS:
        return value
    return copy.deepcopy(value)


def _identity(item: Any) -> Any:
    return item


class MessagesView(Sequence[Message]):
    """A read-only snapshot of messages; every item read is a fresh private copy.

    It behaves like a list for reading: ``len``, indexing, slices (a list of
    copies), iteration, ``reversed``, ``in``, ``+`` with a list, ``list(view)``
    and :meth:`copy`. It is not a ``list`` instance; call ``list(view)`` when an
    engine needs one (e.g. for ``json.dumps``).

    The snapshot holds the session's list object and its length at creation: the
    session only appends to that list or replaces it with a new one, so the view
    never changes under an engine call, even one that outlives its timeout.
    """

    __slots__ = ("_items", "_length", "_read")

    def __init__(
        self,
        items: list[Any],
        length: int | None = None,
        read: Callable[[Any], Message] = _identity,
    ) -> None:
        self._items = items
        self._length = len(items) if length is None else length
        self._read = read

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...

    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            return [self._copy(i) for i in range(*index.indices(self._length))]
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError("message view index out of range")
        return self._copy(index)

    def __iter__(self) -> Iterator[Message]:
        for i in range(self._length):
            yield self._copy(i)

    def __reversed__(self) -> Iterator[Message]:
        for i in range(self._length - 1, -1, -1):
            yield self._copy(i)

    def __add__(self, other: Sequence[Message]) -> list[Message]:
        return [*self, *other]

    def __radd__(self, other: Sequence[Message]) -> list[Message]:
        return [*other, *self]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MessagesView | list | tuple):
            return len(other) == self._length and all(
                a == b for a, b in zip(self._raw(), other, strict=True)
            )
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def copy(self) -> list[Message]:
        """A list of private copies (what ``list(view)`` gives)."""
        return list(self)

    def __repr__(self) -> str:
        return f"<MessagesView of {self._length} messages>"

    def _copy(self, index: int) -> Message:
        return copy_message(self._read(self._items[index]))

    def _raw(self) -> Iterator[Message]:
        for i in range(self._length):
            yield self._read(self._items[i])


class TranscriptView:
    """What ``maintain`` receives as ``transcript``: read access to this session's store."""

    def __init__(self, session: Session) -> None:
        self.session_id = session.session_id
        self._session = session

    def messages(self) -> list[Message]:
        """Copies of the live view (uids included)."""
        return self._session.messages()

    def rows(self) -> list[StoredMessage]:
        """Every row ever stored for the session, oldest first."""
        return self._session.host.store.rows(self.session_id)
