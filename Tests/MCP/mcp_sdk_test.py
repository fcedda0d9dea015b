#!/usr/bin/env python3
"""nextpage against the official MCP Python SDK (PyPI `mcp`), over stdio.

    python mcp_sdk_test.py NEXTPAGE_BINARY [--mode legacy|auto]

Runs with mcp 1.x (`ClientSession`: the initialize handshake) or mcp 2.x
(`Client`: `--mode auto` probes `server/discover` and speaks the stateless
2026-07-28 revision; `--mode legacy` forces the handshake). scripts/test runs
it once per SDK and mode, each SDK in its own virtual environment.

Each check prints `ok  ...` or fails the run with what differed:
  - the session starts and names the server;
  - tools/list: the collection methods as tools, each with an outputSchema;
  - tools/call loadNext pages the built-in demo to its end: 250 items, each
    once, in order, with `fields` projecting them (the SDK validates each
    structuredContent against the tool's outputSchema);
  - an unknown collection is an isError result carrying -32001;
  - an unknown tool is a JSON-RPC -32602 error;
  - loadAll reports progress per page to the caller's progress callback;
  - resources: each collection is listed and reads as its State and items;
  - cancellation: a call cancelled while its page is fetched (a command
    that hangs) is never answered, loads nothing, and the collection goes on;
  - define (with --allow-define) adds a collection and says the lists changed.
"""

import argparse
import asyncio
import json
import os
import sys
import tempfile

import mcp
import mcp.types as types
from mcp import StdioServerParameters

SDK_MAJOR = int(getattr(mcp, "__version__", None) or __import__("importlib.metadata").metadata.version("mcp").split(".")[0])
TOOLS = ["load", "loadNext", "reset", "status", "collections", "items", "define", "loadAll"]


def check(condition, what, detail=""):
    if not condition:
        raise AssertionError(f"{what}{': ' + str(detail) if detail else ''}")
    print(f"ok  {what}")


def field(result, camel, snake):
    """A result attribute under either SDK's spelling."""
    return getattr(result, snake) if hasattr(result, snake) else getattr(result, camel)


def structured(result):
    return field(result, "structuredContent", "structured_content")


def is_error(result):
    return field(result, "isError", "is_error")


class Session:
    """The calls the checks need, over either SDK."""

    def __init__(self, binary, directory, mode, notifications):
        self.params = StdioServerParameters(command=binary, args=["mcp", "--allow-define", "--allow-commands"], cwd=directory)
        self.mode = mode
        self.notifications = notifications

    async def __aenter__(self):
        async def on_message(message):
            root = getattr(message, "root", message)
            method = getattr(root, "method", None)
            if method:
                self.notifications.append(method)

        if SDK_MAJOR >= 2:
            from mcp import Client
            self.client = Client(self.params, mode=self.mode, message_handler=on_message)
            await self.client.__aenter__()
            self.session = self.client.session
            self.info = getattr(self.session, "discover_result", None) or getattr(self.session, "initialize_result", None)
        else:
            from mcp.client.stdio import stdio_client
            self.transport = stdio_client(self.params)
            read, write = await self.transport.__aenter__()
            self.client = mcp.ClientSession(read, write, message_handler=on_message)
            await self.client.__aenter__()
            self.session = self.client
            self.info = await self.client.initialize()
        return self

    async def __aexit__(self, *exc):
        await self.client.__aexit__(*exc)
        if SDK_MAJOR < 2:
            await self.transport.__aexit__(*exc)

    @property
    def server_name(self):
        # initialize's serverInfo; a 2026-07-28 discover result names the server in its _meta.
        for name in ("server_info", "serverInfo"):
            if getattr(self.info, name, None) is not None:
                return getattr(self.info, name).name
        return (self.info.meta or {}).get("io.modelcontextprotocol/serverInfo", {}).get("name")

    async def call(self, name, arguments=None, **options):
        return await self.client.call_tool(name, arguments or {}, **options)

    async def list_tools(self):
        return (await self.client.list_tools()).tools

    async def list_resources(self):
        return (await self.client.list_resources()).resources

    async def read_resource(self, uri):
        if SDK_MAJOR < 2:
            from pydantic import AnyUrl
            uri = AnyUrl(uri)
        return await self.client.read_resource(uri)

    async def call_then_cancel(self, name, arguments):
        """Starts a call and cancels it as the SDK does: 2.x on a read
        timeout, sending notifications/cancelled itself; 1.x by sending that
        notification for the request's id. Returns whether a result came anyway."""
        if SDK_MAJOR >= 2:
            try:
                await self.client.call_tool(name, arguments, read_timeout_seconds=0.5)
                return True
            except Exception:
                return False
        request_id = self.session._request_id
        task = asyncio.create_task(self.client.call_tool(name, arguments))
        await asyncio.sleep(0)
        await self.session.send_notification(types.ClientNotification(types.CancelledNotification(
            method="notifications/cancelled",
            params=types.CancelledNotificationParams(requestId=request_id, reason="the user moved on"))))
        done, _ = await asyncio.wait({task}, timeout=1.0)
        if done:
            return True
        task.cancel()
        return False


async def run(binary, mode):
    directory = tempfile.mkdtemp(prefix="nextpage-mcp-")
    notifications = []
    async with Session(binary, directory, mode, notifications) as session:
        check(session.server_name == "nextpage", f"the session starts ({'mcp ' + str(SDK_MAJOR)}, {mode})", session.server_name)
        if SDK_MAJOR >= 2:
            modern = getattr(session.info, "supported_versions", None)
            check((modern == ["2026-07-28"]) == (mode == "auto"),
                  "auto speaks 2026-07-28 (server/discover), legacy the initialize handshake", session.info)

        tools = await session.list_tools()
        check([t.name for t in tools] == TOOLS, "tools/list: the collection methods", [t.name for t in tools])
        check(all(field(t, "outputSchema", "output_schema") for t in tools), "every tool has an outputSchema")

        names, pages = [], 0
        while pages < 20:
            result = await session.call("loadNext", {"collection": "demo", "fields": ["/id", "/name"]})
            page = structured(result)
            check(not is_error(result) and page["page"] == pages + 1, f"loadNext page {pages + 1}", page.get("page") if page else result)
            text = json.loads(result.content[0].text)
            check(text == page, f"page {pages + 1}: the text content is the structured content")
            names += [item["id"] for item in page["items"]]
            check(all(set(item) == {"id", "name"} for item in page["items"]), f"page {pages + 1}: items projected to id and name")
            pages += 1
            if not page["hasNext"]:
                break
        check(names == list(range(1, 251)), "the demo paged to its end: 250 items, each once, in order", names[:5])

        failed = await session.call("loadNext", {"collection": "nope"})
        error = structured(failed)
        check(is_error(failed) and error["code"] == -32001 and error["data"]["collection"] == "nope",
              "an unknown collection is an isError result with -32001", error)

        try:
            await session.call("loadPrevious", {})
            check(False, "an unknown tool is refused")
        except Exception as e:
            code = getattr(getattr(e, "error", None), "code", None)
            check(code == -32602 or "-32602" in str(e) or "Invalid params" in str(e), "an unknown tool is -32602", e)

        reported = []

        async def progress(value, total, message):
            reported.append(value)

        await session.call("reset", {"collection": "demo"})
        result = await session.call("loadAll", {"collection": "demo", "maxPages": 4}, progress_callback=progress)
        summary = structured(result)
        check(summary["pages"] == 4 and summary["count"] == 100, "loadAll: four pages", summary)
        check(reported == [25, 50, 75, 100], "loadAll: progress per page", reported)

        resources = await session.list_resources()
        check([str(r.uri) for r in resources] == ["nextpage://collections/demo"], "resources/list: the demo", resources)
        read = await session.read_resource("nextpage://collections/demo")
        snapshot = json.loads(read.contents[0].text)
        check(snapshot["state"]["count"] == 100 and len(snapshot["items"]) == 100, "resources/read: its State and items",
              snapshot["state"])

        # A collection whose fetches hang (until killed) while the file `hang` exists.
        script = os.path.join(directory, "slow.sh")
        with open(script, "w") as file:
            file.write('if [ -e hang ]; then sleep 60; fi; echo \'{"items": ["late"], "next_cursor": null}\'\n')
        hang = os.path.join(directory, "hang")
        open(hang, "w").close()
        defined = await session.call("define", {"name": "slow", "source": {"type": "command", "argv": ["sh", script]},
                                               "paging": {"strategy": "cursor"}})
        check(not is_error(defined) and structured(defined)["collection"] == "slow", "define adds a collection", structured(defined))
        for _ in range(50):
            if "notifications/tools/list_changed" in notifications and "notifications/resources/list_changed" in notifications:
                break
            await asyncio.sleep(0.05)
        check("notifications/tools/list_changed" in notifications and "notifications/resources/list_changed" in notifications,
              "define: the tools and resources changed", notifications)

        answered = await session.call_then_cancel("loadNext", {"collection": "slow"})
        check(not answered, "a cancelled call is not answered")
        os.remove(hang)
        status = structured(await session.call("status", {"collection": "slow"}))
        check(status["count"] == 0 and status["pages"] == 0, "the cancelled call loaded nothing", status)
        page = structured(await session.call("loadNext", {"collection": "slow"}))
        check("items" in page, "the next call gets a page", page)
        check(page["items"] == ["late"] and page["page"] == 1 and page["count"] == 1,
              "the collection goes on: the next call gets the first page, once", page)
    print(f"mcp_sdk_test: all checks passed (mcp {SDK_MAJOR}.x, {mode})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("binary")
    parser.add_argument("--mode", default="legacy", choices=["legacy", "auto"])
    options = parser.parse_args()
    asyncio.run(asyncio.wait_for(run(os.path.abspath(options.binary), options.mode), timeout=120))


if __name__ == "__main__":
    main()
