"""The errors a nextpage client raises.

Every error is a :class:`NextPageError`. An error reply from the server is an
:class:`RPCError` carrying the JSON-RPC ``code``, ``message`` and ``data``
(README, "Methods"; ``Schemas/openrpc.json``); each code has its own class,
so ``except UnknownCollection`` catches exactly that reply. Trouble with the
process itself (it is not nextpage, it ended, it did not answer in time) is a
:class:`ClientError`.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Type

__all__ = [
    "NextPageError",
    "RPCError",
    "ParseError",
    "InvalidRequest",
    "MethodNotFound",
    "InvalidParams",
    "InternalError",
    "UnknownCollection",
    "UpstreamFailed",
    "PageNotUnderstood",
    "InvalidDefinition",
    "RequestCancelled",
    "ShuttingDown",
    "ClientError",
    "NextPageNotFound",
    "NotNextPage",
    "ServerExited",
    "RequestTimeout",
    "error_for_reply",
]


class NextPageError(Exception):
    """Anything that went wrong talking to nextpage."""


class RPCError(NextPageError):
    """An error reply: ``code``, ``message`` and ``data`` as the server sent them."""

    #: The JSON-RPC error code of this class (``None`` for codes without a class of their own).
    CODE: Optional[int] = None

    def __init__(self, code: int, message: str, data: Any = None, method: Optional[str] = None):
        self.code = code
        self.message = message
        self.data = data
        self.method = method
        where = f"{method}: " if method else ""
        super().__init__(f"{where}{message} ({code})")


class ParseError(RPCError):
    """-32700: the server could not parse a message as JSON."""

    CODE = -32700


class InvalidRequest(RPCError):
    """-32600: not a valid JSON-RPC request object."""

    CODE = -32600


class MethodNotFound(RPCError):
    """-32601: no such method; ``data`` is ``{"method"}``."""

    CODE = -32601


class InvalidParams(RPCError):
    """-32602: bad params; ``data`` is ``{"field", "expected"}``."""

    CODE = -32602


class InternalError(RPCError):
    """-32603: the server failed in a way it did not foresee."""

    CODE = -32603


class UnknownCollection(RPCError):
    """-32001: no collection by that name; ``data`` is ``{"collection", "known": [...]}``."""

    CODE = -32001


class UpstreamFailed(RPCError):
    """-32002: the source failed (network, status, timeout);
    ``data`` is ``{"collection", "status"?, "attempts", "retryable", "message"}``."""

    CODE = -32002


class PageNotUnderstood(RPCError):
    """-32003: a page was not JSON, or a pointer was missing;
    ``data`` is ``{"collection", "pointer"?, "line"?, "column"?}``."""

    CODE = -32003


class InvalidDefinition(RPCError):
    """-32004: ``define`` got an invalid collection; ``data`` is ``{"field", "expected"}``."""

    CODE = -32004


class RequestCancelled(RPCError):
    """-32800: cancelled by ``$/cancelRequest``, ``reset`` or ``load``."""

    CODE = -32800


class ShuttingDown(RPCError):
    """-32801: the server is shutting down."""

    CODE = -32801


_BY_CODE: Dict[int, Type[RPCError]] = {
    cls.CODE: cls
    for cls in (
        ParseError, InvalidRequest, MethodNotFound, InvalidParams, InternalError, UnknownCollection,
        UpstreamFailed, PageNotUnderstood, InvalidDefinition, RequestCancelled, ShuttingDown,
    )
    if cls.CODE is not None
}


def error_for_reply(error: Any, method: Optional[str] = None) -> RPCError:
    """The exception for the ``error`` member of a reply: the class of its code, else :class:`RPCError`."""
    if not isinstance(error, dict) or not isinstance(error.get("code"), int):
        return RPCError(-32603, f"malformed error reply: {error!r}", None, method)
    code = error["code"]
    message = error.get("message") if isinstance(error.get("message"), str) else ""
    return _BY_CODE.get(code, RPCError)(code, message, error.get("data"), method)


class ClientError(NextPageError):
    """The process, not a reply: it could not be started, is not nextpage, ended, or did not answer in time."""


class NextPageNotFound(ClientError, FileNotFoundError):
    """No nextpage executable: neither the path given, nor ``$NEXTPAGE``, nor ``nextpage`` on ``PATH``."""


class NotNextPage(ClientError):
    """The program wrote something a nextpage server never writes (not JSON-RPC, a request,
    or an ``initialize`` reply from another server)."""


class ServerExited(ClientError):
    """The server ended (or closed its output) while calls were waiting, or before one was sent.

    ``status`` is its exit status (negative: killed by that signal), when known;
    ``stderr`` holds the last lines it wrote on stderr, when they were captured."""

    def __init__(self, message: str, status: Optional[int] = None, stderr: str = ""):
        self.status = status
        self.stderr = stderr
        super().__init__(message + (f"; its last words on stderr:\n{stderr}" if stderr else ""))


class RequestTimeout(ClientError, TimeoutError):
    """A call got no reply in time; the client sent ``$/cancelRequest`` for it."""
