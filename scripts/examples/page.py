#!/usr/bin/env python3
"""Pages through a collection with nextpage through its Python client (clients/python).

    scripts/examples/page.py [COLLECTION [NEXTPAGE-ARGUMENTS...]]

Starts one nextpage, iterates over every item of the collection (loadNext
until hasNext is false) and prints each as one line of JSON. With no
nextpage.json in the current folder nextpage serves its built-in `demo`
collection (250 items): run it from an empty folder to see them. The
nextpage binary is $NEXTPAGE, else `nextpage` on the PATH. The client comes
from `pip install ./clients/python`, or from this checkout when it is not
installed.
"""
import json
import os
import sys

try:
    from nextpage import NextPage
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python", "src"))
    from nextpage import NextPage


def main():
    collection = sys.argv[1] if len(sys.argv) > 1 else "demo"
    with NextPage(args=["--log-level", "warning", *sys.argv[2:]]) as server:
        for item in server.items(collection):
            print(json.dumps(item, separators=(",", ":"), ensure_ascii=False))
        state = server.status(collection)
    print(f"{collection}: {state['count']} items in {state['pages']} pages", file=sys.stderr)
    return server.process.returncode


if __name__ == "__main__":
    sys.exit(main())
