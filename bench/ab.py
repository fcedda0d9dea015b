#!/usr/bin/env python3
"""Compares two nextpage builds on one workload, run alternately.

    bench/ab.py BIN_A BIN_B [PAIRS] [WORKLOAD]
    bench/ab.py BIN [-] [RUNS] [WORKLOAD]      (one build alone)

WORKLOAD is `small` or `large` (default small): each run starts the server
in bench/data with `--config config.json`, feeds it the workload's requests
on stdin and writes the replies to a file, as scripts/bench does. Or
`all-small` / `all-large`: `nextpage all` over the page files; or
`http-small` / `http-large`: `nextpage all` paging the loopback nginx that
`bench/nginx.sh start bench/data bench/out/nginx` started (2,000 small
pages, as scripts/bench's http workloads). Prints each run's wall and CPU time (user + system of
the process), B's CPU over A's for each pair, and the medians. Alternating
the builds spreads the machine's drift over both; a change worth keeping
shows in the per-pair ratio, not in one run.
"""
import os
import statistics
import sys
import tempfile

from measure import run_once

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
TIMEOUT = 600


HTTP_CONFIG = os.path.join(os.path.dirname(DATA), "out", "nginx", "http.config.json")


def run(binary, workload, out_path):
    """One run, as scripts/bench makes it (bench/measure.py): wall and CPU seconds."""
    kind, _, name = workload.rpartition("-")
    if kind == "all":
        cmd, stdin = [binary, "all", name, "--config", "config.json"], "/dev/null"
    elif kind == "http":
        cmd, stdin = [binary, "all", name, "--config", HTTP_CONFIG], "/dev/null"
        if name == "small":
            cmd += ["--max-pages", "2000"]
    else:
        cmd, stdin = [binary, "--config", "config.json"], os.path.join(DATA, f"{workload}.requests.jsonl")
    wall, _, cpu, code, timed_out = run_once(cmd, DATA, stdin, out_path, TIMEOUT, "wait4")
    if timed_out or code != 0:
        sys.exit(f"ab: {binary} " + (f"timed out after {TIMEOUT} s" if timed_out else f"exited with status {code}")
                 + f" (stderr: {out_path}.stderr)")
    return wall, cpu


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
    for path in (out_path, out_path + ".stderr"):
        os.unlink(path)


if __name__ == "__main__":
    main()
