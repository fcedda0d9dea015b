#!/usr/bin/env python3
"""Measurement, output checks and the report for scripts/bench.

  measure.py run --name N --runs R --cwd DIR --stdin F --out F --result J [--timeout S] -- CMD...
      Runs CMD R times (stdin from F, stdout to F, stderr to F.stderr), each
      time measuring wall time and the child's peak RSS (os.wait4 rusage, so
      only that child counts).  Writes {"wall": [...], "maxrss_kib": [...]} to J.

  measure.py coldstart --runs R --cwd DIR --stdin F --result J [--timeout S] -- CMD...
      R times: spawn CMD, write F to its stdin, time until the first reply
      line arrives on stdout, then close stdin and reap it.  One untimed
      warm-up spawn comes first.

  measure.py check --data D --workload W --naive OUT [--nextpage OUT]
      Validates the replies (see README.md).  Prints FAIL and exits 1 when
      something is wrong.

  measure.py report --outdir DIR [--runs R] [--cold-runs R] [--skipped-nextpage]
      Prints the results table and the targets.
"""

import argparse
import hashlib
import json
import os
import resource
import selectors
import statistics
import subprocess
import sys
import threading
import time


# --------------------------------------------------------------------------- run

GNU_TIME = "/usr/bin/time"


def rss_method():
    """'time' when GNU time is installed (exact), else 'wait4' (python only).

    Linux records the RSS high-water mark of the process that called exec as
    the starting peak of the new program, so with 'wait4' every child counts
    at least the spawning python's RSS (see rss_floor_kib).  Peaks above that
    floor are exact; /usr/bin/time forks from a ~1 MiB process instead.
    BENCH_RSS=wait4 forces the python-only method.
    """
    forced = os.environ.get("BENCH_RSS", "")
    if forced in ("time", "wait4"):
        return forced
    return "time" if os.access(GNU_TIME, os.X_OK) else "wait4"


def rss_floor_kib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def run_once(cmd, cwd, stdin_path, out_path, timeout, method):
    """Runs `cmd` once, stdin from `stdin_path`, stdout to `out_path`.

    Returns (wall seconds, peak RSS KiB, CPU seconds (user + system, the
    process and what it waited for), exit code, whether it timed out).
    """
    rss_file = out_path + ".rss"
    if method == "time":
        cmd = [GNU_TIME, "-f", "%M", "-o", rss_file, "--"] + list(cmd)
    with open(stdin_path, "rb") as fin, open(out_path, "wb") as fout, \
            open(out_path + ".stderr", "wb") as ferr:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, stdin=fin, stdout=fout, stderr=ferr,
                                start_new_session=True)
        timed_out = []

        def kill():
            timed_out.append(True)
            try:
                os.killpg(proc.pid, 9)
            except OSError:
                pass

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            # wait4 reports the resource usage of exactly this child.
            _, status, rusage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
    maxrss = rusage.ru_maxrss
    if method == "time":
        maxrss = None
        try:
            with open(rss_file) as f:
                lines = [l.strip() for l in f if l.strip()]
            maxrss = int(lines[-1])
        except (OSError, ValueError, IndexError):
            pass
        if os.path.exists(rss_file):
            os.remove(rss_file)
        if maxrss is None:
            maxrss = rusage.ru_maxrss
    cpu = rusage.ru_utime + rusage.ru_stime
    return wall, maxrss, cpu, proc.returncode, bool(timed_out)


def cmd_run(args):
    walls, rss, failures = [], [], []
    method = rss_method()
    if args.append and os.path.exists(args.result):
        # Runs of two programs alternate (see scripts/bench): carry on the
        # record of this program's earlier runs.
        with open(args.result) as f:
            earlier = json.load(f)
        walls, rss, failures = earlier["wall"], earlier["maxrss_kib"], earlier["failures"]
    done, failed_before = len(walls), len(failures)
    total = max(args.of or 0, done + args.runs)
    for i in range(done, done + args.runs):
        wall, maxrss, _, code, timed_out = run_once(args.cmd, args.cwd, args.stdin, args.out,
                                                 args.timeout, method)
        walls.append(wall)
        rss.append(maxrss)
        note = ""
        if timed_out:
            note = "  TIMEOUT after %.0f s (killed)" % args.timeout
            failures.append("run %d timed out" % (i + 1))
        elif code != 0:
            note = "  exit code %d (stderr: %s.stderr)" % (code, args.out)
            failures.append("run %d exit code %d" % (i + 1, code))
        print("  %-9s run %d/%d: %8.3f s  peak RSS %8.1f MiB%s" % (
            args.name, i + 1, total, wall, maxrss / 1024.0, note), flush=True)
    result = {"name": args.name, "wall": walls, "maxrss_kib": rss, "failures": failures,
              "rss_method": method, "rss_floor_kib": rss_floor_kib() if method == "wait4" else 0}
    with open(args.result, "w") as f:
        json.dump(result, f)
    if len(failures) > failed_before:
        print("FAIL: %s: %s" % (args.name, "; ".join(failures[failed_before:])))
        return 1
    return 0


# --------------------------------------------------------------------- coldstart

def cold_once(cmd, cwd, payload, timeout):
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    try:
        proc.stdin.write(payload)
        proc.stdin.flush()
    except BrokenPipeError:
        pass
    fd = proc.stdout.fileno()
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    buf = b""
    elapsed = None
    deadline = t0 + timeout
    while True:
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            break
        if not sel.select(remaining):
            break
        chunk = os.read(fd, 65536)
        if not chunk:
            break  # EOF without a full line
        buf += chunk
        if b"\n" in buf:
            elapsed = time.perf_counter() - t0
            break
    sel.close()
    try:
        proc.stdin.close()
    except BrokenPipeError:
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    proc.stdout.close()
    line = buf.split(b"\n", 1)[0]
    return elapsed, line


def cmd_coldstart(args):
    with open(args.stdin, "rb") as f:
        payload = f.read()
    problems = []
    times = []
    first_line = None
    warm, _ = cold_once(args.cmd, args.cwd, payload, args.timeout)  # warm-up, not counted
    if warm is None:
        problems.append("warm-up: no reply line within %.0f s" % args.timeout)
    for i in range(args.runs if warm is not None else 0):
        elapsed, line = cold_once(args.cmd, args.cwd, payload, args.timeout)
        if elapsed is None:
            problems.append("run %d: no reply line within %.0f s" % (i + 1, args.timeout))
            break  # do not wait for the remaining runs too
        try:
            reply = json.loads(line)
            if not isinstance(reply, dict) or "result" not in reply:
                problems.append("run %d: reply is not a result: %s" % (i + 1, line[:200]))
        except ValueError:
            problems.append("run %d: reply is not JSON: %r" % (i + 1, line[:200]))
        times.append(elapsed)
        first_line = line
    result = {"name": args.name, "ms": [t * 1000.0 for t in times], "failures": problems,
              "reply": first_line.decode("utf-8", "replace") if first_line else None}
    with open(args.result, "w") as f:
        json.dump(result, f)
    if times:
        print("  %-9s cold start: median %.2f ms (min %.2f, max %.2f, %d runs)" % (
            args.name, statistics.median(times) * 1000, min(times) * 1000, max(times) * 1000, len(times)))
    if problems:
        print("FAIL: %s cold start: %s" % (args.name, "; ".join(problems[:3])))
        return 1
    return 0



# ---------------------------------------------------------------------- prefetch

def cmd_prefetch(args):
    """An http source that answers each page after `delay` seconds, and a
    client that waits `think` seconds between loadNext calls: the median time
    from a call to its reply, with prefetch on and off."""
    import http.server
    import socketserver
    import tempfile
    import threading

    pages, delay = args.pages, args.delay

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            from urllib.parse import urlparse, parse_qs
            cursor = parse_qs(urlparse(self.path).query).get("cursor", ["1"])[0]
            try:
                page = int(cursor)
            except ValueError:
                page = 1
            time.sleep(delay)
            items = [{"id": (page - 1) * 20 + i + 1, "name": "item %d" % i} for i in range(20)]
            body = json.dumps({"items": items, "next_cursor": str(page + 1) if page < pages else None}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True

    server = Server(("127.0.0.1", 0), Handler)
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def session(prefetch):
        with tempfile.TemporaryDirectory() as tmp:
            config = {"collections": {"api": {
                "source": {"type": "http", "url": "http://127.0.0.1:%d/items" % port, "timeout": 10},
                "paging": {"strategy": "cursor", "next": "/next_cursor"}, "prefetch": prefetch}}}
            path = os.path.join(tmp, "config.json")
            with open(path, "w") as f:
                json.dump(config, f)
            proc = subprocess.Popen(args.cmd + ["--config", path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL)
            latencies = []
            try:
                for k in range(1, pages + 1):
                    request = {"jsonrpc": "2.0", "id": k, "method": "loadNext", "params": {"collection": "api"}}
                    t0 = time.perf_counter()
                    proc.stdin.write((json.dumps(request) + "\n").encode())
                    proc.stdin.flush()
                    line = proc.stdout.readline()
                    latencies.append(time.perf_counter() - t0)
                    reply = json.loads(line)
                    items = reply["result"]["items"]
                    if [i["id"] for i in items] != list(range((k - 1) * 20 + 1, k * 20 + 1)):
                        raise RuntimeError("page %d: wrong items" % k)
                    time.sleep(args.think)
            finally:
                proc.stdin.close()
                proc.wait(timeout=30)
            # The first page cannot have been fetched ahead.
            return [t * 1000.0 for t in latencies[1:]]

    result = {"failures": []}
    for prefetch in (1, 0):
        try:
            ms = session(prefetch)
            result["prefetch%d" % prefetch] = ms
            print("  prefetch %d: median loadNext reply %.2f ms (min %.2f, max %.2f, %d calls; upstream %d ms, client %d ms between calls)" % (
                prefetch, statistics.median(ms), min(ms), max(ms), len(ms), delay * 1000, args.think * 1000))
        except Exception as e:  # noqa: BLE001 - reported as a failure line
            result["failures"].append("prefetch %d: %s" % (prefetch, e))
    server.shutdown()
    with open(args.result, "w") as f:
        json.dump(result, f)
    if result["failures"]:
        print("FAIL: prefetch latency: %s" % "; ".join(result["failures"]))
        return 1
    return 0

# ------------------------------------------------------------------------- check

def canonical(items):
    return hashlib.sha1(json.dumps(items, ensure_ascii=False, sort_keys=True,
                                   separators=(",", ":")).encode("utf-8")).digest()


def scan_replies(path, label, errors):
    """Parses every reply line. Returns (lines, {id: (offset, n_items, digest)}, item ids, last result)."""
    by_id = {}
    item_ids = []
    lines = 0
    last_result = None
    bad_replies = 0
    with open(path, "rb") as f:
        offset = 0
        for raw in f:
            lines += 1
            this_offset = offset
            offset += len(raw)
            try:
                reply = json.loads(raw)
            except ValueError as e:
                errors.append("%s: line %d is not valid JSON (%s): %r" % (label, lines, e, raw[:120]))
                continue
            if not isinstance(reply, dict):
                errors.append("%s: line %d is not an object" % (label, lines))
                continue
            if "error" in reply or not isinstance(reply.get("result"), dict):
                bad_replies += 1
                if bad_replies <= 3:
                    errors.append("%s: line %d is not a result: %s" % (
                        label, lines, raw[:300].decode("utf-8", "replace").rstrip()))
                continue
            result = reply["result"]
            items = result.get("items")
            if not isinstance(items, list):
                errors.append("%s: line %d has no items array" % (label, lines))
                continue
            rid = reply.get("id")
            if rid in by_id:
                errors.append("%s: id %r answered twice" % (label, rid))
            by_id[rid] = (this_offset, len(items), canonical(items))
            for item in items:
                item_ids.append(item.get("id") if isinstance(item, dict) else None)
            last_result = result
    if bad_replies > 3:
        errors.append("%s: %d replies in total are errors or not results" % (label, bad_replies))
    return lines, by_id, item_ids, last_result


def read_reply_items(path, offset):
    with open(path, "rb") as f:
        f.seek(offset)
        return json.loads(f.readline())["result"]["items"]


def first_difference(a, b):
    if len(a) != len(b):
        return "item counts differ (%d vs %d)" % (len(a), len(b))
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return "item %d differs:\n      %s\n      %s" % (
                i, json.dumps(x, ensure_ascii=False)[:300], json.dumps(y, ensure_ascii=False)[:300])
    return None


def cmd_check(args):
    with open(os.path.join(args.data, "manifest.json")) as f:
        info = json.load(f)["collections"][args.workload]
    with open(os.path.join(args.data, info["requests"]), "rb") as f:
        n_requests = sum(1 for line in f if line.strip())
    expected_items = info["items"]
    errors = []
    notes = []

    outputs = [("naive", args.naive)]
    if args.nextpage:
        outputs.append(("nextpage", args.nextpage))
    scans = {}
    for label, path in outputs:
        lines, by_id, item_ids, last = scan_replies(path, label, errors)
        scans[label] = (path, by_id)
        delivered = len(item_ids)
        distinct = len(set(item_ids))
        if lines != n_requests:
            errors.append("%s: %d reply lines for %d requests" % (label, lines, n_requests))
        if delivered != expected_items:
            errors.append("%s: delivered %d items, the data holds %d" % (label, delivered, expected_items))
        if distinct != delivered:
            errors.append("%s: %d item ids delivered but only %d distinct" % (label, delivered, distinct))
        if last is not None and last.get("hasNext") is not False:
            notes.append("%s: last reply has hasNext=%r (expected false)" % (label, last.get("hasNext")))
        print("  %-9s %6d reply lines (%d requests), %8d items delivered, %8d distinct ids" % (
            label, lines, n_requests, delivered, distinct))

    # The baseline against the data itself: reply k carries page k.
    naive_path, naive_ids = scans["naive"]
    pages = info["pages"]
    for k in sorted({1, (pages + 1) // 2, pages}):
        if k not in naive_ids:
            errors.append("naive: no reply with id %d" % k)
            continue
        fname = "first.json" if k == 1 else "p%d.json" % k
        with open(os.path.join(args.data, info["dir"], fname), "rb") as f:
            page_items = json.load(f)["items"]
        diff = first_difference(read_reply_items(naive_path, naive_ids[k][0]), page_items)
        if diff:
            errors.append("naive: reply %d does not match %s/%s: %s" % (k, info["dir"], fname, diff))

    # nextpage against the baseline: every reply, by id, compared as parsed JSON.
    if "nextpage" in scans:
        np_path, np_ids = scans["nextpage"]
        compared = mismatched = missing = 0
        for rid, (n_off, n_count, n_digest) in naive_ids.items():
            if rid not in np_ids:
                missing += 1
                if missing <= 3:
                    errors.append("nextpage: no reply with id %r" % (rid,))
                continue
            compared += 1
            p_off, p_count, p_digest = np_ids[rid]
            if p_digest == n_digest:
                continue
            diff = first_difference(read_reply_items(np_path, p_off), read_reply_items(naive_path, n_off))
            if diff:
                mismatched += 1
                if mismatched <= 3:
                    errors.append("nextpage vs naive, reply id %r: %s" % (rid, diff))
        extra = set(np_ids) - set(naive_ids)
        if extra:
            errors.append("nextpage: replies with unexpected ids, e.g. %r" % sorted(extra, key=str)[:3])
        if mismatched > 3:
            errors.append("nextpage vs naive: %d replies differ in total" % mismatched)
        if missing > 3:
            errors.append("nextpage: %d replies missing in total" % missing)
        print("  items of %d replies compared (nextpage vs naive, as parsed JSON): %d differ%s" % (
            compared, mismatched, ", %d missing" % missing if missing else ""))

    for n in notes:
        print("  note: " + n)
    if errors:
        for e in errors[:20]:
            print("FAIL: %s: %s" % (args.workload, e))
        return 1
    print("  %s: outputs OK" % args.workload)
    return 0


# ------------------------------------------------------------------------ report

def load(outdir, name):
    path = os.path.join(outdir, name)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def cmd_report(args):
    targets = {"small": 0.30, "large": 0.25}
    mem_target = 0.20
    cold_target_ms = 15.0
    prefetch_target_ms = 5.0
    rows = []
    checks = []

    def fmt(x, spec):
        return "n/a" if x is None else format(x, spec)

    for wl in ("small", "large"):
        np_res = load(args.outdir, "%s.nextpage.json" % wl)
        nv_res = load(args.outdir, "%s.naive.json" % wl)
        np_t = statistics.median(np_res["wall"]) if np_res else None
        nv_t = statistics.median(nv_res["wall"]) if nv_res else None
        np_m = max(np_res["maxrss_kib"]) / 1024.0 if np_res else None
        nv_m = max(nv_res["maxrss_kib"]) / 1024.0 if nv_res else None
        t_ratio = np_t / nv_t if np_t is not None and nv_t else None
        m_ratio = np_m / nv_m if np_m is not None and nv_m else None
        failed = any(r and r.get("failures") for r in (np_res, nv_res))
        rows.append((wl + (" (FAILED)" if failed else ""), fmt(np_t, ".3f"), fmt(nv_t, ".3f"), fmt(t_ratio, ".2f"),
                     fmt(np_m, ".1f"), fmt(nv_m, ".1f"), fmt(m_ratio, ".2f")))
        checks.append(("%s time ratio <= %.2f" % (wl, targets[wl]), t_ratio, targets[wl], ".3f"))
        checks.append(("%s memory ratio <= %.2f" % (wl, mem_target), m_ratio, mem_target, ".3f"))

    methods = set()
    floor = 0
    for wl in ("small", "large"):
        for impl in ("nextpage", "naive"):
            res = load(args.outdir, "%s.%s.json" % (wl, impl))
            if res:
                methods.add(res.get("rss_method", "?"))
                floor = max(floor, res.get("rss_floor_kib", 0))

    head = ("workload", "nextpage median s", "naive median s", "ratio",
            "nextpage peak RSS MiB", "naive RSS MiB", "ratio")
    widths = [max(len(head[i]), *(len(r[i]) for r in rows)) for i in range(len(head))]
    print()
    print("Results (median wall time of %s run(s), max peak RSS over the runs)" % args.runs)
    print(" | ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(head, widths))))
    print("-|-".join("-" * w for w in widths))
    for r in rows:
        print(" | ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))

    if "wait4" in methods:
        print("(peak RSS via wait4: values are exact above %.1f MiB, the spawning python's own RSS;"
              " install GNU time for exact small values)" % (floor / 1024.0))
    elif methods:
        print("(peak RSS via %s)" % ", ".join(sorted(methods)))

    print()
    print("What jansson allows (bench/floor.c: each page parsed once with json_loadb, CPU time alone,"
          " nothing read, written or kept, allocation next to free; median of %s run(s)):" % args.runs)
    for wl in ("small", "large"):
        fl = load(args.outdir, "%s.floor.json" % wl)
        np_res = load(args.outdir, "%s.nextpage.json" % wl)
        nv_res = load(args.outdir, "%s.naive.json" % wl)
        if not fl or not fl.get("cpu_s"):
            print("  %-6s n/a" % wl)
            continue
        cpu = statistics.median(fl["cpu_s"])
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        best = cpu / cores
        line = "  %-6s jansson %.3f s CPU; on %d core%s at best %.3f s" % (wl, cpu, cores, "" if cores == 1 else "s", best)
        if nv_res and nv_res["wall"]:
            line += " = %.2f of naive" % (best / statistics.median(nv_res["wall"]))
        if np_res and np_res["wall"]:
            line += "; nextpage takes %.2fx that" % (statistics.median(np_res["wall"]) / best)
        print(line)

    cold = {}
    for impl in ("nextpage", "naive"):
        res = load(args.outdir, "coldstart.%s.json" % impl)
        cold[impl] = statistics.median(res["ms"]) if res and res["ms"] else None
    print()
    print("cold start (spawn -> first reply line, median of %s): nextpage %s ms | naive %s ms" % (
        args.cold_runs, fmt(cold["nextpage"], ".2f"), fmt(cold["naive"], ".2f")))
    checks.append(("cold start <= %.0f ms" % cold_target_ms, cold["nextpage"], cold_target_ms, ".2f"))
    pre = load(args.outdir, "prefetch.nextpage.json")
    on = statistics.median(pre["prefetch1"]) if pre and pre.get("prefetch1") else None
    off = statistics.median(pre["prefetch0"]) if pre and pre.get("prefetch0") else None
    print("prefetch latency (http source answering in 50 ms, client waiting 50 ms between calls; median reply):"
          " prefetch on %s ms | off %s ms" % (fmt(on, ".2f"), fmt(off, ".2f")))
    checks.append(("prefetch loadNext <= %.0f ms" % prefetch_target_ms, on, prefetch_target_ms, ".2f"))

    print()
    print("Targets (informative; nextpage / naive ratios, lower is better):")
    for label, value, limit, spec in checks:
        if value is None:
            verdict = "SKIP" if args.skipped_nextpage else "n/a"
        else:
            verdict = "ok" if value <= limit else "MISS"
        print("  %-28s %8s  %s" % (label, fmt(value, spec), verdict))
    return 0


# -------------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description="scripts/bench helper")
    sub = ap.add_subparsers(dest="command", required=True)

    p = sub.add_parser("run")
    p.add_argument("--name", required=True)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--cwd", default=None)
    p.add_argument("--stdin", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--result", required=True)
    p.add_argument("--timeout", type=float, default=600.0)
    p.add_argument("--append", action="store_true",
                   help="add these runs to the runs already in --result")
    p.add_argument("--of", type=int, default=None, help="runs planned in all (for the progress lines)")
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("coldstart")
    p.add_argument("--name", required=True)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--cwd", default=None)
    p.add_argument("--stdin", required=True)
    p.add_argument("--result", required=True)
    p.add_argument("--timeout", type=float, default=30.0)
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    p.set_defaults(func=cmd_coldstart)

    p = sub.add_parser("prefetch")
    p.add_argument("--result", required=True)
    p.add_argument("--pages", type=int, default=40)
    p.add_argument("--delay", type=float, default=0.05)
    p.add_argument("--think", type=float, default=0.05)
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    p.set_defaults(func=cmd_prefetch)

    p = sub.add_parser("check")
    p.add_argument("--data", required=True)
    p.add_argument("--workload", required=True, choices=("small", "large"))
    p.add_argument("--naive", required=True)
    p.add_argument("--nextpage", default=None)
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("report")
    p.add_argument("--outdir", required=True)
    p.add_argument("--runs", default="?")
    p.add_argument("--cold-runs", default="?")
    p.add_argument("--skipped-nextpage", action="store_true")
    p.set_defaults(func=cmd_report)

    args = ap.parse_args()
    if hasattr(args, "cmd"):
        if args.cmd and args.cmd[0] == "--":
            args.cmd = args.cmd[1:]
        if not args.cmd:
            ap.error("missing command after --")
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
