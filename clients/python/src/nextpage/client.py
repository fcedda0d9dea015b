"""The blocking client: one nextpage process, driven from any thread."""

from __future__ import annotations

import collections
import itertools
import logging
import subprocess
import sys
import threading
from typing import IO, Any, Callable, Deque, Dict, Iterator, List, Optional, Sequence

from . import _protocol as protocol
from .errors import ClientError, NextPageError, NotNextPage, RequestTimeout, ServerExited
from .types import Callback, ItemSlice, LoadAllResult, Page, Progress, State

__all__ = ["NextPage", "Call"]

_log = logging.getLogger("nextpage")
_UNSET: Any = object()


class Call:
    """A request sent and not necessarily answered yet (see :meth:`NextPage.start`)."""

    def __init__(self, client: "NextPage", request_id: int, method: str):
        self.id = request_id
        self.method = method
        self._client = client
        self._done = threading.Event()
        self._result: Any = None
        self._error: Optional[NextPageError] = None

    def done(self) -> bool:
        """Whether the reply (or a failure) has arrived."""
        return self._done.is_set()

    def result(self, timeout: Optional[float] = _UNSET) -> Any:
        """Waits for the reply and returns its ``result``, or raises its error.

        ``timeout`` (seconds; default: the client's ``timeout``, ``None`` waits
        as long as it takes): when it passes, the call is cancelled on the
        server (``$/cancelRequest``) and :class:`RequestTimeout` is raised."""
        if timeout is _UNSET:
            timeout = self._client.timeout
        if not self._done.wait(timeout):
            self._client._forget(self.id)
            self._client._cancel(self.id)
            raise RequestTimeout(f"{self.method}: no reply within {timeout} s; the request was cancelled")
        if self._error is not None:
            raise self._error
        return self._result

    def cancel(self) -> None:
        """Asks the server to cancel the call (``$/cancelRequest``); :meth:`result` then
        raises :class:`~nextpage.errors.RequestCancelled`, unless the reply was already on its way."""
        if not self.done():
            self._client._cancel(self.id)

    def _settle(self, result: Any, error: Optional[NextPageError]) -> None:
        self._result, self._error = result, error
        self._done.set()


class NextPage:
    """A nextpage server process spoken to over its stdin and stdout.

    ``NextPage()`` starts ``path`` (else ``$NEXTPAGE``, else ``nextpage`` on
    ``PATH``) with ``args`` (``["--config", "my.json"]``) and checks with
    ``initialize`` that it is nextpage (within ``start_timeout`` seconds). Its
    stderr (the server's logs) goes to ``on_stderr`` a line at a time, by
    default to this process's stderr; the last lines are kept for the message
    of :class:`ServerExited`. :meth:`attach` drives a process started elsewhere.

    Calls may come from any thread; replies are matched by id. Notification
    callbacks (:meth:`on`) run on the client's reader thread and must not make
    calls themselves. Use it as a context manager, or call :meth:`close`: both
    send ``shutdown`` and ``exit`` and wait for the process to end.
    """

    def __init__(
        self,
        path: Optional[str] = None,
        args: Sequence[str] = (),
        *,
        timeout: Optional[float] = None,
        start_timeout: Optional[float] = 10.0,
        cwd: Optional[str] = None,
        env: Optional[Dict[str, str]] = None,
        on_stderr: Optional[Callable[[str], None]] = None,
    ):
        argv = protocol.command_line(path, args)
        self.process: Optional[subprocess.Popen] = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, env=env)
        self._setup(self.process.stdin, self.process.stdout, timeout)
        self._stderr_tail: Deque[str] = collections.deque(maxlen=protocol.STDERR_LINES_KEPT)
        forward = on_stderr or (lambda line: sys.stderr.write(line + "\n"))
        self._stderr_thread: Optional[threading.Thread] = threading.Thread(
            target=self._drain_stderr, args=(self.process.stderr, forward), name="nextpage-stderr", daemon=True)
        self._stderr_thread.start()
        self._start(start_timeout)

    @classmethod
    def attach(
        cls, writer: IO[bytes], reader: IO[bytes], *, timeout: Optional[float] = None,
        start_timeout: Optional[float] = 10.0,
    ) -> "NextPage":
        """Drives a nextpage started elsewhere: requests go to ``writer`` (its stdin),
        replies come from ``reader`` (its stdout), both binary file objects."""
        client = cls.__new__(cls)
        client.process = None
        client._setup(writer, reader, timeout)
        client._stderr_tail = collections.deque()
        client._stderr_thread = None
        client._start(start_timeout)
        return client

    def _setup(self, writer: IO[bytes], reader: IO[bytes], timeout: Optional[float]) -> None:
        #: Seconds a call waits for its reply by default (``None``: as long as it takes).
        self.timeout = timeout
        #: The ``serverInfo`` of the server's ``initialize`` reply (``{"name": "nextpage", "version": ...}``).
        self.server_info: Dict[str, Any] = {}
        self._writer = writer
        self._reader = reader
        self._ids = itertools.count(1)
        self._lock = threading.Lock()  # guards _pending, _methods, _handlers, _failure, _closed
        self._write_lock = threading.Lock()  # one message at a time on the server's input
        self._pending: Dict[int, Call] = {}
        self._methods: Dict[Any, str] = {}
        self._handlers: Dict[str, List[Callback]] = {}
        self._failure: Optional[NextPageError] = None
        self._closed = False
        self._progress_tokens = itertools.count(1)
        self._reader_thread = threading.Thread(target=self._read_loop, name="nextpage-reader", daemon=True)

    def _start(self, start_timeout: Optional[float]) -> None:
        self._reader_thread.start()
        try:
            result = self.call("initialize", {"clientInfo": {"name": "nextpage-python"}}, timeout=start_timeout)
            self.server_info = protocol.check_server_info(result)
        except NextPageError as error:
            self._abandon()
            if isinstance(error, RequestTimeout):
                raise NotNextPage(f"not a nextpage server: no reply to initialize within {start_timeout} s") from None
            raise

    # Notifications

    def on(self, method: str, callback: Callback) -> Callable[[], None]:
        """Calls ``callback(params)`` for each notification ``method`` (``"page"``,
        ``"$/progress"``); returns a function that stops it."""
        with self._lock:
            self._handlers.setdefault(method, []).append(callback)

        def remove() -> None:
            with self._lock:
                handlers = self._handlers.get(method, [])
                if callback in handlers:
                    handlers.remove(callback)
        return remove

    # Calls

    def start(self, method: str, params: Optional[Dict[str, Any]] = None) -> Call:
        """Sends a request and returns at once; :meth:`Call.result` waits for the reply."""
        if threading.current_thread() is self._reader_thread:
            raise RuntimeError("a notification callback cannot make calls: it runs on the thread that reads replies")
        request_id = next(self._ids)
        call = Call(self, request_id, method)
        with self._lock:
            if self._failure is not None:
                raise self._failure
            if self._closed and method != "shutdown":
                raise ClientError("the client is closed")
            self._pending[request_id] = call
            self._methods[request_id] = method
        self._write(protocol.request(request_id, method, params))
        return call

    def call(self, method: str, params: Optional[Dict[str, Any]] = None, *, timeout: Optional[float] = _UNSET) -> Any:
        """Sends a request and returns its ``result``; an error reply raises the
        :class:`~nextpage.errors.RPCError` subclass of its code."""
        return self.start(method, params).result(timeout)

    def notify(self, method: str, params: Optional[Dict[str, Any]] = None) -> None:
        """Sends a notification (no reply)."""
        self._write(protocol.notification(method, params))

    def load_next(self, collection: str, *, if_loading: Optional[str] = None, **extra: Any) -> Page:
        """The page after the last one loaded (the first on a fresh collection);
        ``if_loading="skip"`` returns at once with ``skipped`` when a fetch is in flight."""
        return self.call("loadNext", protocol.collection_params(collection, ifLoading=if_loading, **extra))

    def load(self, collection: str, *, last_id: Any = None, **extra: Any) -> Page:
        """Resets the collection, then loads its first page (or the page after ``last_id``)."""
        return self.call("load", protocol.collection_params(collection, lastId=last_id, **extra))

    def reset(self, collection: str) -> State:
        """Forgets the collection's pages and cursor; returns its fresh State."""
        return self.call("reset", {"collection": collection})

    def status(self, collection: str) -> State:
        """Where the collection stands."""
        return self.call("status", {"collection": collection})

    def collections(self) -> List[State]:
        """The State of every defined collection."""
        return self.call("collections")

    def item_slice(self, collection: str, offset: Optional[int] = None, limit: Optional[int] = None, **extra: Any) -> ItemSlice:
        """The ``items`` method: items loaded so far, from absolute ``offset``, at most ``limit``."""
        return self.call("items", protocol.collection_params(collection, offset=offset, limit=limit, **extra))

    def define(self, name: str, definition: Dict[str, Any]) -> State:
        """Defines (or replaces) a collection at run time (the config file's object)."""
        return self.call("define", {**definition, "name": name})

    def load_all(
        self, collection: str, *, max_items: Optional[int] = None, max_pages: Optional[int] = None,
        on_page: Optional[Callable[[Page], None]] = None, on_progress: Optional[Callable[[Progress], None]] = None,
        timeout: Optional[float] = _UNSET,
    ) -> LoadAllResult:
        """Pages to the end (or a limit) in one call; ``on_page`` gets each page as it
        lands, ``on_progress`` each ``$/progress`` value (begin, report, end)."""
        token = f"python-{next(self._progress_tokens)}" if on_progress else None
        removers = protocol.load_all_listeners(self.on, collection, token, on_page, on_progress)
        try:
            params = protocol.collection_params(collection, maxItems=max_items, maxPages=max_pages, progressToken=token)
            return self.call("loadAll", params, timeout=timeout)
        finally:
            for remove in removers:
                remove()

    def pages(self, collection: str, *, restart: bool = False, **extra: Any) -> Iterator[Page]:
        """Yields pages with ``loadNext`` (``load`` first when ``restart``) until ``hasNext`` is false.
        A collection already at its end yields one empty page."""
        method = "load" if restart else "loadNext"
        while True:
            page: Page = self.call(method, protocol.collection_params(collection, **extra))
            yield page
            if not page["hasNext"]:
                return
            method = "loadNext"

    def items(self, collection: str, *, restart: bool = False, **extra: Any) -> Iterator[Any]:
        """Yields every item of :meth:`pages`, one at a time."""
        for page in self.pages(collection, restart=restart, **extra):
            yield from page["items"]

    # Ending

    def close(self, timeout: Optional[float] = 10.0) -> Optional[int]:
        """Sends ``shutdown`` and ``exit``, closes the server's input and waits (at most
        ``timeout`` seconds, then kills it) for it to end; returns its exit status
        (``None`` for an attached process). Calling it again does nothing more."""
        with self._lock:
            if self._closed:
                return self.process.returncode if self.process else None
            self._closed = True
            failed = self._failure is not None
        if not failed:
            try:
                self.call("shutdown", timeout=timeout)
                self.notify("exit")
            except NextPageError:
                pass
        self._close_writer()
        if self.process is not None:
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._reader_thread.join(timeout)
        return self.process.returncode if self.process else None

    def __enter__(self) -> "NextPage":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    # Internals

    def _write(self, data: bytes) -> None:
        try:
            with self._write_lock:
                self._writer.write(data)
                self._writer.flush()
        except (OSError, ValueError):
            # The server is gone: the reader is about to say why.
            self._reader_thread.join(5)
            with self._lock:
                failure = self._failure
            raise failure or ServerExited("nextpage is not reading its input") from None

    def _cancel(self, request_id: int) -> None:
        try:
            self._write(protocol.cancel(request_id))
        except NextPageError:
            pass

    def _forget(self, request_id: int) -> None:
        with self._lock:
            self._pending.pop(request_id, None)
            self._methods.pop(request_id, None)

    def _read_loop(self) -> None:
        failure: Optional[NextPageError] = None
        try:
            for line in iter(self._reader.readline, b""):
                incoming = protocol.parse(line, self._methods)
                if incoming is None:
                    continue
                if incoming[0] == "reply":
                    _, request_id, result, error = incoming
                    with self._lock:
                        call = self._pending.pop(request_id, None)
                        self._methods.pop(request_id, None)
                    if call is not None:
                        call._settle(result, error)
                else:
                    _, method, params = incoming
                    with self._lock:
                        handlers = list(self._handlers.get(method, ()))
                    for handler in handlers:
                        try:
                            handler(params)
                        except Exception:
                            _log.exception("nextpage: the callback for %s failed", method)
        except NotNextPage as error:
            failure = error
        except (OSError, ValueError):
            pass
        if self.process is not None:
            self._reader.close()
        if failure is None:
            failure = self._exit_failure()
        with self._lock:
            self._failure = failure
            pending = list(self._pending.values())
            self._pending.clear()
        for call in pending:
            call._settle(None, failure)
        if isinstance(failure, NotNextPage) and self.process is not None:
            self.process.kill()

    def _exit_failure(self) -> ServerExited:
        """Why the output ended: the exit status and the last lines of stderr."""
        status = None
        if self.process is not None:
            try:
                status = self.process.wait(5)
            except subprocess.TimeoutExpired:
                pass
        if self._stderr_thread is not None:
            self._stderr_thread.join(5)
        return ServerExited(protocol.exit_description(status), status, "\n".join(self._stderr_tail))

    def _drain_stderr(self, stream: IO[bytes], forward: Callable[[str], None]) -> None:
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            self._stderr_tail.append(line)
            try:
                forward(line)
            except Exception:
                pass
        stream.close()

    def _close_writer(self) -> None:
        try:
            self._writer.close()
        except (OSError, ValueError):
            pass

    def _abandon(self) -> None:
        """After a failed start: the process is not kept."""
        with self._lock:
            self._closed = True
        self._close_writer()
        if self.process is not None:
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait()
        self._reader_thread.join(5)
