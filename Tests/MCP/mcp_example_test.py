#!/usr/bin/env python3
"""Starts the `nextpage` entry of examples/mcp/mcp.json as an MCP host
would (its command, args and env, from the repository's root) with the
official MCP Python SDK, and pages the recorded GitHub issues to the end.

    python mcp_example_test.py NEXTPAGE_BINARY

`command` "nextpage" is the binary given. Checks: the tools are listed; the
13 recorded issues come once each, newest first, projected by `fields`; the
token the entry passes in `env` appears nowhere in what the server writes.
"""

import asyncio
import json
import os
import sys
import tempfile

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))


def check(condition, what, detail=""):
    if not condition:
        raise AssertionError(f"{what}{': ' + str(detail) if detail else ''}")
    print(f"ok  {what}")


async def run(binary):
    entry = json.load(open(os.path.join(ROOT, "examples", "mcp", "mcp.json")))["mcpServers"]["nextpage"]
    command = binary if entry["command"] == "nextpage" else entry["command"]
    env = dict(os.environ, **entry.get("env", {}))
    errors = tempfile.TemporaryFile(mode="w+")
    params = StdioServerParameters(command=command, args=entry["args"], env=env, cwd=ROOT)
    numbers = []
    async with stdio_client(params, errlog=errors) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = [tool.name for tool in (await session.list_tools()).tools]
            check("loadNext" in tools and "define" not in tools, "the example's server lists its tools", tools)
            for _ in range(10):
                result = await session.call_tool("loadNext", {"collection": "issues", "fields": ["/number", "/title"]})
                check(not result.isError, "loadNext on the recorded issues", result.structuredContent)
                page = result.structuredContent
                numbers += [item["number"] for item in page["items"]]
                check(all(set(item) == {"number", "title"} for item in page["items"]), f"page {page['page']}: number and title only")
                if not page["hasNext"]:
                    break
    check(numbers == list(range(13, 0, -1)), "the 13 recorded issues, once each, newest first", numbers)
    errors.seek(0)
    check(entry["env"]["GITHUB_TOKEN"] not in errors.read(), "the token from env is not in the server's stderr")
    print("mcp_example_test: examples/mcp works as a host would start it")


asyncio.run(asyncio.wait_for(run(os.path.abspath(sys.argv[1])), timeout=60))
