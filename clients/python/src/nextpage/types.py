"""The shapes nextpage's methods return (README, "Methods"; ``Schemas/openrpc.json``).

They are plain dicts decoded from JSON, typed here for editors and type checkers.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, TypedDict, Union

__all__ = ["Cursor", "Page", "State", "ItemSlice", "LoadAllResult", "Progress", "Callback"]

#: A cursor as the source gave it: a string or a number (``None`` before the first page or after the last).
Cursor = Union[str, int, float, None]


class _PageExtras(TypedDict, total=False):
    skipped: bool  #: ``ifLoading: "skip"`` found a fetch in flight
    lastError: Optional[str]  #: on the page that stopped the source


class Page(_PageExtras):
    """What ``load`` and ``loadNext`` return, and what a ``page`` notification carries
    (``skipped`` and ``lastError`` only when they apply)."""

    collection: str
    items: List[Any]
    page: int  #: the 1-based number of this page
    hasNext: bool
    lastId: Cursor  #: the cursor the next ``loadNext`` sends
    count: int  #: items loaded so far


class State(TypedDict):
    """What ``status``, ``reset``, ``define`` and ``collections`` return."""

    collection: str
    hasNext: bool
    isLoading: bool
    lastId: Cursor
    count: int
    pages: int
    lastError: Optional[str]


class ItemSlice(TypedDict):
    """What the ``items`` method returns: items kept so far, by absolute offset."""

    collection: str
    items: List[Any]
    count: int
    offset: int


class LoadAllResult(TypedDict):
    """What ``loadAll`` returns: where the collection stands afterwards."""

    collection: str
    pages: int
    count: int
    hasNext: bool
    lastId: Cursor


class Progress(TypedDict):
    """The ``value`` of a ``$/progress`` notification of ``loadAll``."""

    kind: str  #: ``begin``, ``report`` or ``end``
    pages: int
    count: int


#: A notification callback: receives the notification's ``params``.
Callback = Callable[[Dict[str, Any]], None]
