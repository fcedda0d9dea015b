#!/usr/bin/env python3
"""Compares two nextpage builds on one workload, run alternately.

    bench/ab.py BIN_A BIN_B [PAIRS] [small|large]
    bench/ab.py BIN [-] [RUNS] [small|large]      (one build alone)

Each run starts the server in bench/data with `--config config.json`, feeds
it the workload's requests on stdin and writes the replies to a file, as
scripts/bench does. Prints each run's wall and CPU time (user + system of
the process), B's CPU over A's for each pair, and the medians. Alternating
the builds spreads the machine's drift over both; a change worth keeping
shows in the per-pair ratio, not in one run.
"""
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def run(binary, workload, out_path):
    with open(os.path.join(DATA, f"{workload}.requests.jsonl"), "rb") as requests, open(out_path, "wb") as out:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        process = subprocess.run([binary, "--config", "config.json"], stdin=requests, stdout=out,
                                 stderr=subprocess.DEVNULL, cwd=DATA)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if process.returncode != 0:
        sys.exit(f"ab: {binary} exited with status {process.returncode}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    args = sys.argv[1:]
    if not args or args[0] in ("-h", "--help"):
        sys.exit(__doc__)
    a = os.path.abspath(args[0])
    b = os.path.abspath(args[1]) if len(args) > 1 and args[1] != "-" else None
    pairs = int(args[2]) if len(args) > 2 else 6
    workload = args[3] if len(args) > 3 else "small"
    out_path = os.path.join(tempfile.gettempdir(), "nextpage-ab-replies.jsonl")
    runs_a, runs_b, ratios = [], [], []
    for index in range(pairs):
        x = run(a, workload, out_path)
        runs_a.append(x)
        if b:
            y = run(b, workload, out_path)
            runs_b.append(y)
            ratios.append(y[1] / x[1])
            print(f"pair {index}: A {x[0]:.3f} s / {x[1]:.3f} s CPU   B {y[0]:.3f} s / {y[1]:.3f} s CPU   B/A CPU {ratios[-1]:.3f}",
                  flush=True)
        else:
            print(f"run {index}: {x[0]:.3f} s wall, {x[1]:.3f} s CPU", flush=True)
    median = statistics.median
    print(f"A: median wall {median(r[0] for r in runs_a):.3f} s, CPU {median(r[1] for r in runs_a):.3f} s")
    if b:
        print(f"B: median wall {median(r[0] for r in runs_b):.3f} s, CPU {median(r[1] for r in runs_b):.3f} s; "
              f"median of B/A CPU per pair {median(ratios):.4f}")
    os.unlink(out_path)


if __name__ == "__main__":
    main()
