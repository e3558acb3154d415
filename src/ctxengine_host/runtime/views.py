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
    from ..stores.transcript import StoredMessage
    from .parts import SessionState

Message = dict[str, Any]

#: Immutable JSON scalars: shared by copies, never copied.
ATOMS = (str, int, float, bool, type(None))


def copy_message(value: Any) -> Any:
    """A deep copy of JSON-shaped data (dicts, lists, scalars); other objects via deepcopy.

    Two to three times faster than :func:`copy.deepcopy` for chat messages (strings
    are immutable and shared), which matters because ``compress`` of an engine that
    does not keep its own history receives a private copy of the whole live view.
    """
    kind = type(value)
    if kind is dict:
        return {key: copy_message(item) for key, item in value.items()}
    if kind is list:
        return [copy_message(item) for item in value]
    if kind in ATOMS:
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
        return copy_message(self._item(index))

    def _raw(self) -> Iterator[Message]:
        for i in range(self._length):
            yield self._item(i)

    def _item(self, index: int) -> Message:
        return self._read(self._items[index])


class HeadedMessagesView(MessagesView):
    """A :class:`MessagesView` of a few messages of its own followed by a snapshot of a list.

    ``select_context`` receives the default request, the system head followed by the
    live view: this reads as that list without concatenating the two, which cost
    O(live view) on every request of a session whose engine keeps its own history.
    """

    __slots__ = ("_head",)

    def __init__(self, head: Sequence[Message], items: list[Any], length: int) -> None:
        self._head = tuple(head)
        super().__init__(items, len(self._head) + length)

    def _item(self, index: int) -> Message:
        head = self._head
        if index < len(head):
            return head[index]
        return self._items[index - len(head)]


class CopyOnWriteMessages(MessagesView):
    """What ``compress`` of an engine that keeps its own history receives.

    It reads like :class:`MessagesView` (a private copy per item read, nothing
    copied up front) and takes the list methods an engine may use on its input
    (``append``, ``pop``, ``clear``, item assignment, ``sort`` ...): the first
    such call copies the snapshot into a private list the view works on from then
    on. Nothing an engine does to it reaches the live view or the store.
    """

    __slots__ = ("_own",)

    def __init__(
        self,
        items: list[Any],
        length: int | None = None,
        read: Callable[[Any], Message] = _identity,
    ) -> None:
        super().__init__(items, length, read)
        self._own: list[Message] | None = None

    def _edit(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Apply the list method ``method`` to the private copy (made on the first edit)."""
        if self._own is None:
            self._own = [self._copy(i) for i in range(self._length)]
            self._items, self._read = self._own, _identity
        try:
            return getattr(self._own, method)(*args, **kwargs)
        finally:
            self._length = len(self._own)

    def __setitem__(self, index: Any, value: Any) -> None:
        self._edit("__setitem__", index, value)

    def __delitem__(self, index: Any) -> None:
        self._edit("__delitem__", index)

    def __iadd__(self, other: Sequence[Message]) -> CopyOnWriteMessages:  # type: ignore[override,misc]
        self._edit("extend", other)
        return self

    def append(self, message: Message) -> None:
        self._edit("append", message)

    def extend(self, messages: Sequence[Message]) -> None:
        self._edit("extend", messages)

    def insert(self, index: int, message: Message) -> None:
        self._edit("insert", index, message)

    def pop(self, index: int = -1) -> Message:
        return self._edit("pop", index)

    def remove(self, message: Message) -> None:
        self._edit("remove", message)

    def clear(self) -> None:
        self._edit("clear")

    def sort(self, **kwargs: Any) -> None:
        self._edit("sort", **kwargs)

    def reverse(self) -> None:
        self._edit("reverse")

    def __repr__(self) -> str:
        return f"<CopyOnWriteMessages of {self._length} messages>"


class TranscriptView:
    """What ``maintain`` receives as ``transcript``: read access to this session's store."""

    def __init__(self, session: SessionState) -> None:
        self.session_id = session.session_id
        self._session = session

    def messages(self) -> list[Message]:
        """Copies of the live view (uids included)."""
        return self._session.messages()

    def rows(self) -> list[StoredMessage]:
        """Every row ever stored for the session, oldest first."""
        return self._session.host.store.rows(self.session_id)
