"""What the blocking and the asyncio client share: finding the executable,
encoding requests, and sorting what the server writes into replies and
notifications (newline-delimited JSON-RPC 2.0, README "A 30-second session")."""

from __future__ import annotations

import json
import os
import shutil
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from .errors import NextPageNotFound, NotNextPage, RPCError, error_for_reply

#: Lines of the server's stderr kept for the message of :class:`~nextpage.errors.ServerExited`.
STDERR_LINES_KEPT = 20


def resolve_executable(path: Optional[str]) -> str:
    """``path``, else ``$NEXTPAGE``, else ``nextpage`` on ``PATH``."""
    candidate = path or os.environ.get("NEXTPAGE") or "nextpage"
    if os.sep in candidate:
        if os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
            return candidate
        raise NextPageNotFound(f"nextpage executable not found: {candidate!r} is not an executable file")
    found = shutil.which(candidate)
    if found is None:
        raise NextPageNotFound(
            f"nextpage executable not found: no {candidate!r} on PATH; install nextpage (its README, "
            '"Install"), set $NEXTPAGE, or pass the path')
    return found


def command_line(path: Optional[str], arguments: Sequence[str]) -> list:
    """The argv that starts the server."""
    return [resolve_executable(path), *arguments]


def encode(message: Dict[str, Any]) -> bytes:
    """One message as a line of compact JSON."""
    return (json.dumps(message, separators=(",", ":"), ensure_ascii=False) + "\n").encode("utf-8")


def request(request_id: int, method: str, params: Optional[Dict[str, Any]]) -> bytes:
    message: Dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return encode(message)


def notification(method: str, params: Optional[Dict[str, Any]]) -> bytes:
    message: Dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return encode(message)


def cancel(request_id: int) -> bytes:
    return notification("$/cancelRequest", {"id": request_id})


def load_all_listeners(
    on: Callable[[str, Callable[[Dict[str, Any]], Any]], Callable[[], None]], collection: str, token: Optional[str],
    on_page: Optional[Callable[[Any], None]], on_progress: Optional[Callable[[Any], None]],
) -> List[Callable[[], None]]:
    """Registers ``load_all``'s callbacks through a client's ``on``: ``on_page``
    for the collection's ``page`` notifications, ``on_progress`` for the
    ``$/progress`` values that carry ``token``. Returns the functions that
    remove them."""
    removers = []
    if on_page:
        removers.append(on("page", lambda params: params.get("collection") == collection and on_page(params)))
    if on_progress:
        removers.append(on("$/progress", lambda params: params.get("token") == token and on_progress(params["value"])))
    return removers


#: What one line from the server is: ("reply", id, result, error) or ("notification", method, params).
Incoming = Union[Tuple[str, Any, Any, Optional[RPCError]], Tuple[str, str, Dict[str, Any]]]


def _shown(line: bytes) -> str:
    text = line.decode("utf-8", "replace").rstrip("\r\n")
    return text if len(text) <= 200 else text[:200] + "..."


def parse(line: bytes, method_of: Dict[Any, str]) -> Optional[Incoming]:
    """Sorts one line the server wrote; ``None`` for a blank line.

    Raises :class:`NotNextPage` for anything nextpage never writes: text
    that is not JSON, a request, a batch (this client sends none)."""
    if not line.strip():
        return None
    try:
        message = json.loads(line)
    except ValueError:
        raise NotNextPage(f"not a nextpage server: it wrote {_shown(line)!r}, which is not JSON") from None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        raise NotNextPage(f"not a nextpage server: it wrote {_shown(line)!r}, which is not a JSON-RPC 2.0 message")
    if "method" in message:
        if "id" in message:
            raise NotNextPage(
                f"not a nextpage server: it sent a request ({_shown(line)!r}); nextpage only replies and notifies")
        params = message.get("params")
        return ("notification", message["method"], params if isinstance(params, dict) else {})
    if "id" not in message or ("result" in message) == ("error" in message):
        raise NotNextPage(f"not a nextpage server: it wrote {_shown(line)!r}, which is neither a reply nor a notification")
    request_id = message["id"]
    if "error" in message:
        return ("reply", request_id, None, error_for_reply(message["error"], method_of.get(request_id)))
    return ("reply", request_id, message["result"], None)


def check_server_info(result: Any) -> Dict[str, Any]:
    """The ``serverInfo`` of an ``initialize`` result; :class:`NotNextPage` when it is not nextpage's."""
    info = result.get("serverInfo") if isinstance(result, dict) else None
    if not isinstance(info, dict) or info.get("name") != "nextpage":
        raise NotNextPage(f"not a nextpage server: initialize answered {json.dumps(result)[:200]}")
    return info


def collection_params(collection: str, **options: Any) -> Dict[str, Any]:
    """``{"collection": ...}`` plus the options that are not ``None``."""
    params: Dict[str, Any] = {"collection": collection}
    params.update({key: value for key, value in options.items() if value is not None})
    return params


def exit_description(status: Optional[int]) -> str:
    if status is None:
        return "nextpage closed its output"
    if status < 0:
        return f"nextpage was killed by signal {-status}"
    return f"nextpage exited with status {status}"
