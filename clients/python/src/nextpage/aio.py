"""The asyncio client: the same surface as :class:`nextpage.NextPage`, awaited."""

from __future__ import annotations

import asyncio
import collections
import itertools
import logging
import sys
from typing import Any, AsyncIterator, Callable, Deque, Dict, List, Optional, Sequence

from . import _protocol as protocol
from .errors import ClientError, NextPageError, NotNextPage, RequestTimeout, ServerExited
from .types import Callback, ItemSlice, LoadAllResult, Page, Progress, State

__all__ = ["AsyncNextPage"]

_log = logging.getLogger("nextpage")
_UNSET: Any = object()

#: The longest line read from the server (a page of items is one line).
_LINE_LIMIT = 1 << 30


class AsyncNextPage:
    """A nextpage server process driven from asyncio.

    ``await AsyncNextPage.spawn()`` starts ``path`` (else ``$NEXTPAGE``, else
    ``nextpage`` on ``PATH``) with ``args`` and checks with ``initialize`` that
    it is nextpage; :meth:`attach` drives a process started elsewhere through
    its streams. ``async with await AsyncNextPage.spawn() as np:`` closes it
    (``shutdown``, ``exit``) at the end of the block.

    Cancelling a task that awaits a call sends ``$/cancelRequest`` for it.
    Notification callbacks (:meth:`on`) run in the event loop, between reads.
    """

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *,
                 timeout: Optional[float] = None, process: Optional[asyncio.subprocess.Process] = None):
        """Use :meth:`spawn` or :meth:`attach`."""
        #: Seconds a call waits for its reply by default (``None``: as long as it takes).
        self.timeout = timeout
        #: The process, when this client started it.
        self.process = process
        #: The ``serverInfo`` of the server's ``initialize`` reply.
        self.server_info: Dict[str, Any] = {}
        self._reader = reader
        self._writer = writer
        self._ids = itertools.count(1)
        self._pending: Dict[int, "asyncio.Future[Any]"] = {}
        self._methods: Dict[Any, str] = {}
        self._handlers: Dict[str, List[Callback]] = {}
        self._failure: Optional[NextPageError] = None
        self._closed = False
        self._progress_tokens = itertools.count(1)
        self._stderr_tail: Deque[str] = collections.deque(maxlen=protocol.STDERR_LINES_KEPT)
        self._stderr_task: Optional["asyncio.Task[None]"] = None
        self._reader_task: Optional["asyncio.Task[None]"] = None

    @classmethod
    async def spawn(
        cls, path: Optional[str] = None, args: Sequence[str] = (), *, timeout: Optional[float] = None,
        start_timeout: Optional[float] = 10.0, cwd: Optional[str] = None, env: Optional[Dict[str, str]] = None,
        on_stderr: Optional[Callable[[str], None]] = None,
    ) -> "AsyncNextPage":
        """Starts nextpage and checks it (see the class); its stderr lines go to
        ``on_stderr`` (default: this process's stderr)."""
        argv = protocol.command_line(path, args)
        process = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            cwd=cwd, env=env, limit=_LINE_LIMIT)
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        client = cls(process.stdout, process.stdin, timeout=timeout, process=process)
        forward = on_stderr or (lambda line: print(line, file=sys.stderr))
        client._stderr_task = asyncio.ensure_future(client._drain_stderr(process.stderr, forward))
        await client._start(start_timeout)
        return client

    @classmethod
    async def attach(
        cls, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, timeout: Optional[float] = None,
        start_timeout: Optional[float] = 10.0,
    ) -> "AsyncNextPage":
        """Drives a nextpage started elsewhere: replies are read from ``reader``
        (its stdout), requests written to ``writer`` (its stdin)."""
        client = cls(reader, writer, timeout=timeout)
        await client._start(start_timeout)
        return client

    async def _start(self, start_timeout: Optional[float]) -> None:
        self._reader_task = asyncio.ensure_future(self._read_loop())
        try:
            result = await self.call("initialize", {"clientInfo": {"name": "nextpage-python"}}, timeout=start_timeout)
            self.server_info = protocol.check_server_info(result)
        except NextPageError as error:
            await self._abandon()
            if isinstance(error, RequestTimeout):
                raise NotNextPage(f"not a nextpage server: no reply to initialize within {start_timeout} s") from None
            raise

    # Notifications

    def on(self, method: str, callback: Callback) -> Callable[[], None]:
        """Calls ``callback(params)`` for each notification ``method``; returns a function that stops it."""
        self._handlers.setdefault(method, []).append(callback)

        def remove() -> None:
            handlers = self._handlers.get(method, [])
            if callback in handlers:
                handlers.remove(callback)
        return remove

    # Calls

    async def call(self, method: str, params: Optional[Dict[str, Any]] = None, *, timeout: Optional[float] = _UNSET) -> Any:
        """Sends a request and returns its ``result``; an error reply raises the
        :class:`~nextpage.errors.RPCError` subclass of its code. After ``timeout``
        seconds (default: the client's) the call is cancelled on the server and
        :class:`RequestTimeout` is raised; cancelling the awaiting task cancels it too."""
        if timeout is _UNSET:
            timeout = self.timeout
        if self._failure is not None:
            raise self._failure
        if self._closed and method != "shutdown":
            raise ClientError("the client is closed")
        request_id = next(self._ids)
        future: "asyncio.Future[Any]" = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        self._methods[request_id] = method
        try:
            await self._write(protocol.request(request_id, method, params))
            return await asyncio.wait_for(asyncio.shield(future), timeout)
        except asyncio.TimeoutError:
            await self._cancel(request_id)
            raise RequestTimeout(f"{method}: no reply within {timeout} s; the request was cancelled") from None
        except asyncio.CancelledError:
            await asyncio.shield(self._cancel(request_id))
            raise
        finally:
            self._pending.pop(request_id, None)
            self._methods.pop(request_id, None)
            if future.done() and not future.cancelled():
                future.exception()  # retrieved: raised above, or superseded by the error that was

    async def notify(self, method: str, params: Optional[Dict[str, Any]] = None) -> None:
        """Sends a notification (no reply)."""
        await self._write(protocol.notification(method, params))

    async def load_next(self, collection: str, *, if_loading: Optional[str] = None, **extra: Any) -> Page:
        """The page after the last one loaded (the first on a fresh collection)."""
        return await self.call("loadNext", protocol.collection_params(collection, ifLoading=if_loading, **extra))

    async def load(self, collection: str, *, last_id: Any = None, **extra: Any) -> Page:
        """Resets the collection, then loads its first page (or the page after ``last_id``)."""
        return await self.call("load", protocol.collection_params(collection, lastId=last_id, **extra))

    async def reset(self, collection: str) -> State:
        """Forgets the collection's pages and cursor; returns its fresh State."""
        return await self.call("reset", {"collection": collection})

    async def status(self, collection: str) -> State:
        """Where the collection stands."""
        return await self.call("status", {"collection": collection})

    async def collections(self) -> List[State]:
        """The State of every defined collection."""
        return await self.call("collections")

    async def item_slice(self, collection: str, offset: Optional[int] = None, limit: Optional[int] = None,
                         **extra: Any) -> ItemSlice:
        """The ``items`` method: items loaded so far, from absolute ``offset``, at most ``limit``."""
        return await self.call("items", protocol.collection_params(collection, offset=offset, limit=limit, **extra))

    async def define(self, name: str, definition: Dict[str, Any]) -> State:
        """Defines (or replaces) a collection at run time."""
        return await self.call("define", {**definition, "name": name})

    async def load_all(
        self, collection: str, *, max_items: Optional[int] = None, max_pages: Optional[int] = None,
        on_page: Optional[Callable[[Page], None]] = None, on_progress: Optional[Callable[[Progress], None]] = None,
        timeout: Optional[float] = _UNSET,
    ) -> LoadAllResult:
        """Pages to the end (or a limit) in one call; ``on_page`` gets each page as it
        lands, ``on_progress`` each ``$/progress`` value."""
        token = f"python-{next(self._progress_tokens)}" if on_progress else None
        removers = protocol.load_all_listeners(self.on, collection, token, on_page, on_progress)
        try:
            params = protocol.collection_params(collection, maxItems=max_items, maxPages=max_pages, progressToken=token)
            return await self.call("loadAll", params, timeout=timeout)
        finally:
            for remove in removers:
                remove()

    async def pages(self, collection: str, *, restart: bool = False, **extra: Any) -> AsyncIterator[Page]:
        """Yields pages with ``loadNext`` (``load`` first when ``restart``) until ``hasNext`` is false."""
        method = "load" if restart else "loadNext"
        while True:
            page: Page = await self.call(method, protocol.collection_params(collection, **extra))
            yield page
            if not page["hasNext"]:
                return
            method = "loadNext"

    async def items(self, collection: str, *, restart: bool = False, **extra: Any) -> AsyncIterator[Any]:
        """Yields every item of :meth:`pages`, one at a time."""
        async for page in self.pages(collection, restart=restart, **extra):
            for item in page["items"]:
                yield item

    # Ending

    async def aclose(self, timeout: Optional[float] = 10.0) -> Optional[int]:
        """Sends ``shutdown`` and ``exit``, closes the server's input and waits (at most
        ``timeout`` seconds, then kills it) for it to end; returns its exit status."""
        if self._closed:
            return self.process.returncode if self.process else None
        self._closed = True
        if self._failure is None:
            try:
                await self.call("shutdown", timeout=timeout)
                await self.notify("exit")
            except NextPageError:
                pass
        self._close_writer()
        if self.process is not None:
            try:
                await asyncio.wait_for(self.process.wait(), timeout)
            except asyncio.TimeoutError:
                self.process.kill()
                await self.process.wait()
        if self._reader_task is not None:
            await asyncio.wait({self._reader_task}, timeout=timeout)
        if self._stderr_task is not None:
            await asyncio.wait({self._stderr_task}, timeout=timeout)
        return self.process.returncode if self.process else None

    async def __aenter__(self) -> "AsyncNextPage":
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.aclose()

    # Internals

    async def _write(self, data: bytes) -> None:
        try:
            self._writer.write(data)
            await self._writer.drain()
        except (OSError, RuntimeError, ValueError):
            # The server is gone: the reader is about to say why.
            if self._reader_task is not None:
                await asyncio.wait({self._reader_task}, timeout=5)
            raise self._failure or ServerExited("nextpage is not reading its input") from None

    async def _cancel(self, request_id: int) -> None:
        try:
            await self._write(protocol.cancel(request_id))
        except NextPageError:
            pass

    async def _read_loop(self) -> None:
        failure: Optional[NextPageError] = None
        try:
            while True:
                line = await self._reader.readline()
                if not line:
                    break
                incoming = protocol.parse(line, self._methods)
                if incoming is None:
                    continue
                if incoming[0] == "reply":
                    _, request_id, result, error = incoming
                    future = self._pending.get(request_id)
                    if future is not None and not future.done():
                        if error is not None:
                            future.set_exception(error)
                        else:
                            future.set_result(result)
                else:
                    _, method, params = incoming
                    for handler in list(self._handlers.get(method, ())):
                        try:
                            handler(params)
                        except Exception:
                            _log.exception("nextpage: the callback for %s failed", method)
        except NotNextPage as error:
            failure = error
        except (OSError, ValueError):
            pass
        if failure is None:
            failure = await self._exit_failure()
        self._failure = failure
        for future in self._pending.values():
            if not future.done():
                future.set_exception(failure)
        if isinstance(failure, NotNextPage) and self.process is not None and self.process.returncode is None:
            self.process.kill()

    async def _exit_failure(self) -> ServerExited:
        status = None
        if self.process is not None:
            try:
                status = await asyncio.wait_for(self.process.wait(), 5)
            except asyncio.TimeoutError:
                pass
        if self._stderr_task is not None:
            await asyncio.wait({self._stderr_task}, timeout=5)
        return ServerExited(protocol.exit_description(status), status, "\n".join(self._stderr_tail))

    async def _drain_stderr(self, stream: asyncio.StreamReader, forward: Callable[[str], None]) -> None:
        while True:
            try:
                raw = await stream.readline()
            except (OSError, ValueError):
                return
            if not raw:
                return
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            self._stderr_tail.append(line)
            try:
                forward(line)
            except Exception:
                pass

    def _close_writer(self) -> None:
        try:
            self._writer.close()
        except (OSError, RuntimeError):
            pass

    async def _abandon(self) -> None:
        self._closed = True
        self._close_writer()
        if self.process is not None:
            if self.process.returncode is None:
                try:
                    self.process.kill()
                except ProcessLookupError:
                    pass
            await self.process.wait()
        for task in (self._reader_task, self._stderr_task):
            if task is not None:
                await asyncio.wait({task}, timeout=5)
