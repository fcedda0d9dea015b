#!/usr/bin/env python3
"""Generate the nextpage benchmark data set, deterministically.

Usage: gen_data.py [DIR] [--force] [--small-pages N] [--large-pages N]

DIR (default bench/data) receives:

  config.json                  nextpage config with collections "small" and "large"
  small/first.json, small/pN.json   10,000 pages x 20 items   (~5 KB/page, ~50 MB)
  large/first.json, large/pN.json   200 pages x 5,000 items   (~1.1 MB/page, ~220 MB)
  small.requests.jsonl         one loadNext request per page of "small"
  large.requests.jsonl         one loadNext request per page of "large"
  coldstart.requests.jsonl     a single status request
  manifest.json                what was generated (counts, bytes, id ranges)
  .stamp                       version stamp; written last

Pages use the `cursor` strategy: {"items": [...], "next_cursor": "p2"}, the
last page has "next_cursor": null.  They are written with json.dumps' default
separators (", " and ": "), i.e. not compact, and with ensure_ascii=False so
non-ASCII text appears as raw UTF-8 the way real APIs send it.

When DIR/.stamp matches the current version and parameters, nothing is done.
"""

import argparse
import hashlib
import json
import multiprocessing
import os
import random
import shutil
import sys
import time

VERSION = 1
SEED = 20240601

SMALL_PER_PAGE = 20
LARGE_PER_PAGE = 5000
SMALL_PAGES = 10000
LARGE_PAGES = 200

# ids are unique across the whole data set: small uses [1_000_001, ...),
# large uses [5_000_001, ...).
SMALL_ID_BASE = 1_000_001
LARGE_ID_BASE = 5_000_001

FIRST_NAMES = [
    "Anna", "Ünïcode", "José", "Zoë", "Łukasz", "Søren", "Chloé", "Mateo",
    "Priya", "Jürgen", "Ωmega", "Иван", "Noor", "Björk", "François", "Kenji",
    "李", "Αθηνά", "Emma", "Olamide", "Siobhán", "Dvořák", "Ayşe", "Rafael",
]
LAST_NAMES = [
    "Name", "Smith", "Müller", "García", "Øster", "Nguyễn", "Kowalski",
    "O'Brien", "Dubois", "Rossi", "Yılmaz", "Petrov", "雷", "Papadopoulos",
    "Sánchez", "Johansson", "Tanaka", "Okafor", "Fernández", "Brontë",
]
TAGS = [
    "go", "rust", "swift", "c", "python", "infra", "ml", "web", "db", "ops",
    "ios", "linux", "security", "docs", "ci", "json", "api", "cli",
]
CITIES = [
    "Zürich", "São Paulo", "Kraków", "Reykjavík", "Tōkyō", "New York",
    "Berlin", "Ålesund", "Montréal", "Lagos", "Αθήνα", "Paris",
]
LANGS = ["en", "de", "fr", "es", "ja", "pl", "pt-BR", "el", "tr"]
BIO_PARTS = [
    'text with "quotes" and \\n escapes',
    "likes C:\\Program Files\\ and back\\slashes",
    "line one\nline two",
    "tab\tseparated\tvalues",
    "emoji 🚀 and ✓ marks",
    "plain ascii bio without anything special",
    "math: ∑ x² ≤ ∞, ½ ≠ ⅓",
    "html <b>bold</b> & 'single' quotes",
    "path /usr/local/bin/ and url https://example.com/a?b=c&d=e",
    "bell\u0007 and escape\u001b control chars",
    "日本語のテキスト",
    "ünïcödé ëvërÿwhérë",
]


def make_small_item(rng, ident):
    first = rng.choice(FIRST_NAMES)
    last = rng.choice(LAST_NAMES)
    ntags = rng.randint(0, 3)
    item = {
        "id": ident,
        "login": "user%d" % ident,
        "name": "%s %s" % (first, last),
        "score": round(rng.uniform(0, 100), rng.choice((1, 2))),
        "active": rng.random() < 0.7,
        "tags": rng.sample(TAGS, ntags),
        "bio": rng.choice(BIO_PARTS),
        "created_at": "20%02d-%02d-%02dT%02d:%02d:%02dZ" % (
            rng.randint(10, 24), rng.randint(1, 12), rng.randint(1, 28),
            rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59)),
        # one in eight ratios has full double precision (17 significant digits)
        "profile": {"city": rng.choice(CITIES) if rng.random() < 0.9 else None,
                    "ratio": rng.random() if rng.random() < 0.125 else round(rng.random(), 3)},
    }
    return item


def make_large_item(rng, ident):
    first = rng.choice(FIRST_NAMES)
    last = rng.choice(LAST_NAMES)
    ntags = rng.randint(0, 3)
    item = {
        "id": ident,
        "login": "user%d" % ident,
        "name": "%s %s" % (first, last),
        "score": round(rng.uniform(0, 100), rng.choice((1, 2))),
        "active": rng.random() < 0.7,
        "tags": rng.sample(TAGS, ntags),
        "bio": rng.choice(BIO_PARTS),
        "created_at": "20%02d-%02d-%02dT%02d:%02d:%02dZ" % (
            rng.randint(10, 24), rng.randint(1, 12), rng.randint(1, 28),
            rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59)),
        "meta": {"rev": rng.randint(1, 999)},
    }
    return item


def write_pages(task):
    """Writes pages [lo, hi] of one collection; returns the bytes written.

    Every page has its own RNG seeded from (seed, collection, page), so the
    output does not depend on how pages are spread over worker processes.
    """
    cdir, name, lo, hi, pages, per_page, id_base, seed = task
    make_item = MAKERS[name]
    dumps = json.dumps
    total = 0
    for page in range(lo, hi + 1):
        rng = random.Random("%d-%s-%d" % (seed, name, page))
        ident = id_base + (page - 1) * per_page
        items = [make_item(rng, ident + k) for k in range(per_page)]
        next_cursor = "p%d" % (page + 1) if page < pages else None
        data = dumps({"items": items, "next_cursor": next_cursor}, ensure_ascii=False).encode("utf-8")
        fname = "first.json" if page == 1 else "p%d.json" % page
        with open(os.path.join(cdir, fname), "wb") as f:
            f.write(data)
        total += len(data)
    return total


MAKERS = {"small": make_small_item, "large": make_large_item}


def write_collections(out_dir, specs, seed):
    """specs: list of (name, pages, per_page, id_base). Uses all CPUs."""
    tasks = []
    for name, pages, per_page, id_base in specs:
        cdir = os.path.join(out_dir, name)
        os.makedirs(cdir, exist_ok=True)
        chunk = max(1, 20000 // per_page)  # ~20k items per task
        for lo in range(1, pages + 1, chunk):
            tasks.append((cdir, name, lo, min(pages, lo + chunk - 1), pages, per_page, id_base, seed))
    workers = max(1, min(os.cpu_count() or 1, len(tasks)))
    if workers > 1:
        with multiprocessing.Pool(workers) as pool:
            sizes = pool.map(write_pages, tasks, chunksize=1)
    else:
        sizes = [write_pages(t) for t in tasks]
    result = {}
    for (cdir, name, *_), size in zip(tasks, sizes):
        result[name] = result.get(name, 0) + size
    manifest = {}
    for name, pages, per_page, id_base in specs:
        manifest[name] = {
            "dir": name,
            "pages": pages,
            "itemsPerPage": per_page,
            "items": pages * per_page,
            "firstId": id_base,
            "lastId": id_base + pages * per_page - 1,
            "bytes": result[name],
            "requests": "%s.requests.jsonl" % name,
        }
    return manifest


def write_requests(path, method, collection, count):
    with open(path, "w") as f:
        for n in range(1, count + 1):
            f.write(json.dumps({"jsonrpc": "2.0", "id": n, "method": method,
                                "params": {"collection": collection}},
                               separators=(",", ":")) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir", nargs="?", default=os.path.join("bench", "data"))
    ap.add_argument("--force", action="store_true", help="regenerate even if the stamp matches")
    ap.add_argument("--small-pages", type=int, default=SMALL_PAGES)
    ap.add_argument("--large-pages", type=int, default=LARGE_PAGES)
    args = ap.parse_args()
    if args.small_pages < 1 or args.large_pages < 1:
        ap.error("page counts must be >= 1")

    out = args.dir
    # The stamp names the generator's own source hash too, so editing this
    # script invalidates old data even if VERSION was not bumped.
    with open(os.path.abspath(__file__), "rb") as f:
        src_hash = hashlib.sha256(f.read()).hexdigest()[:12]
    stamp = "nextpage-bench-data v%d seed=%d small=%dx%d large=%dx%d src=%s\n" % (
        VERSION, SEED, args.small_pages, SMALL_PER_PAGE, args.large_pages, LARGE_PER_PAGE, src_hash)
    stamp_path = os.path.join(out, ".stamp")
    if not args.force and os.path.exists(stamp_path):
        with open(stamp_path) as f:
            current = f.read() == stamp
        expected = ["config.json", "manifest.json", "small.requests.jsonl", "large.requests.jsonl",
                    "coldstart.requests.jsonl", "small/first.json", "large/first.json",
                    "small/p%d.json" % args.small_pages, "large/p%d.json" % args.large_pages]
        if args.small_pages == 1:
            expected.remove("small/p1.json")
        if args.large_pages == 1:
            expected.remove("large/p1.json")
        if current and all(os.path.exists(os.path.join(out, p)) for p in expected):
            print("gen_data: %s is up to date (%s)" % (out, stamp.strip()))
            return 0

    t0 = time.monotonic()
    os.makedirs(out, exist_ok=True)
    if os.path.exists(stamp_path):
        os.remove(stamp_path)
    for name in ("small", "large"):
        shutil.rmtree(os.path.join(out, name), ignore_errors=True)

    manifest = {"version": VERSION, "seed": SEED, "collections": write_collections(out, [
        ("small", args.small_pages, SMALL_PER_PAGE, SMALL_ID_BASE),
        ("large", args.large_pages, LARGE_PER_PAGE, LARGE_ID_BASE),
    ], SEED)}

    paging = {"strategy": "cursor", "next": "/next_cursor", "items": "/items", "id": "/id"}
    config = {"collections": {
        name: {"source": {"type": "file", "dir": name}, "paging": paging, "maxItems": 1000000}
        for name in ("small", "large")
    }}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")

    write_requests(os.path.join(out, "small.requests.jsonl"), "loadNext", "small", args.small_pages)
    write_requests(os.path.join(out, "large.requests.jsonl"), "loadNext", "large", args.large_pages)
    write_requests(os.path.join(out, "coldstart.requests.jsonl"), "status", "small", 1)

    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")
    with open(stamp_path, "w") as f:
        f.write(stamp)

    dt = time.monotonic() - t0
    for name, c in manifest["collections"].items():
        print("gen_data: %-5s %6d pages x %5d items = %7d items, %6.1f MB (%.0f B/item, %.1f KB/page)" % (
            name, c["pages"], c["itemsPerPage"], c["items"], c["bytes"] / 1e6,
            c["bytes"] / c["items"], c["bytes"] / c["pages"] / 1e3))
    print("gen_data: wrote %s in %.1f s" % (out, dt))
    return 0


if __name__ == "__main__":
    sys.exit(main())
