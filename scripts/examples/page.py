#!/usr/bin/env python3
"""Pages through a collection with nextpage using nothing but subprocess and json.

    scripts/examples/page.py [COLLECTION [NEXTPAGE-ARGUMENTS...]]

Starts one nextpage, sends loadNext until hasNext is false, and prints every
item as one line of JSON. With no nextpage.json in the current folder
nextpage serves its built-in `demo` collection (250 items): run it from an
empty folder to see them. The nextpage binary is $NEXTPAGE, else `nextpage`
on the PATH.
"""
import json
import os
import subprocess
import sys


class NextPage:
    """A nextpage process spoken to with newline-delimited JSON-RPC."""

    def __init__(self, *arguments):
        binary = os.environ.get("NEXTPAGE", "nextpage")
        self.process = subprocess.Popen(
            [binary, "--log-level", "warning", *arguments],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, encoding="utf-8")
        self.next_id = 0

    def call(self, method, **params):
        """Sends one request and returns its result; raises on an error reply."""
        self.next_id += 1
        request = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        for line in self.process.stdout:
            message = json.loads(line)
            if message.get("id") == self.next_id:  # notifications have no id
                break
        else:
            raise RuntimeError("nextpage ended without replying")
        if "error" in message:
            raise RuntimeError(f"{method}: {message['error']['message']}")
        return message["result"]

    def close(self):
        """End of input: nextpage answers what is in flight and exits 0."""
        self.process.stdin.close()
        return self.process.wait()


def main():
    collection = sys.argv[1] if len(sys.argv) > 1 else "demo"
    server = NextPage(*sys.argv[2:])
    while True:
        page = server.call("loadNext", collection=collection)
        for item in page["items"]:
            print(json.dumps(item, separators=(",", ":"), ensure_ascii=False))
        if not page["hasNext"]:
            break
    state = server.call("status", collection=collection)
    print(f"{collection}: {state['count']} items in {state['pages']} pages", file=sys.stderr)
    return server.close()


if __name__ == "__main__":
    sys.exit(main())
