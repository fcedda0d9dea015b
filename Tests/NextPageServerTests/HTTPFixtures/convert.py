#!/usr/bin/env python3
"""Turns the recorded fixtures (page-N.body.json + page-N.meta.json, see
README.txt) into nextpage replay files: one JSON line per exchange,
{"request": {"method", "url", "body"}, "response": {"status", "headers", "body"}},
the format `--record-upstream` writes and `--replay-upstream` reads.

usage: convert.py FIXTURE_DIR OUT.jsonl
"""
import glob
import json
import os
import re
import sys


def header_value(value):
    # Kept as the metas hold them: octokit's strings (and the odd number, such
    # as "x-ratelimit-used": 1), vcrpy's lists of strings. A replay reads them all.
    return value


def main(source, out):
    metas = sorted(glob.glob(os.path.join(source, "page-*.meta.json")),
                   key=lambda p: int(re.search(r"page-(\d+)\.meta\.json$", p).group(1)))
    lines = []
    for meta_path in metas:
        with open(meta_path) as f:
            meta = json.load(f)
        with open(meta_path.replace(".meta.json", ".body.json")) as f:
            body = json.load(f)
        status = meta["status"]
        if isinstance(status, dict):
            status = status["code"]
        # Request headers are not part of a recording (they carry the credentials).
        lines.append({
            "request": {"method": meta["request"]["method"], "url": meta["request"]["url"], "body": None},
            "response": {
                "status": status,
                "headers": {name: header_value(value) for name, value in meta["headers"].items()},
                "body": body,
            },
        })
    with open(out, "w") as f:
        for line in lines:
            f.write(json.dumps(line, separators=(",", ":"), ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
