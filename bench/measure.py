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

  measure.py check-lines --first ID --count N --out F [--compare F2]
      Validates what `nextpage all` (or bench/node-all.mjs) printed: one JSON
      item per line, ids FIRST, FIRST+1, ... N of them, in order; with
      --compare, the same items as F2, line by line, as parsed JSON.

  measure.py latency --result J [--pages N] [--delay S] -- CMD...
      An http source on 127.0.0.1 answering each page after S seconds
      (page strategy with a total), and `loadAll` of its N pages through the
      server CMD, with `concurrency` 1 and 8: the time from the request to
      its reply.

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


def process_cpu_ticks(pid):
    """CPU ticks (user + system) of `pid` and its children, from /proc."""
    def ticks(stat_path):
        try:
            with open(stat_path) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return int(fields[1]), int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            return None, 0
    _, total = ticks("/proc/%d/stat" % pid)
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != pid:
            parent, used = ticks("/proc/%s/stat" % entry)
            if parent == pid:
                total += used
    return total


def server_pid(path):
    if not path:
        return None
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def cmd_run(args):
    walls, rss, failures, cpus, server_cpus = [], [], [], [], []
    method = rss_method()
    if args.append and os.path.exists(args.result):
        # Runs of two programs alternate (see scripts/bench): carry on the
        # record of this program's earlier runs.
        with open(args.result) as f:
            earlier = json.load(f)
        walls, rss, failures = earlier["wall"], earlier["maxrss_kib"], earlier["failures"]
        cpus, server_cpus = earlier.get("cpu", []), earlier.get("server_cpu", [])
    server = server_pid(args.server_pid_file)
    hz = os.sysconf("SC_CLK_TCK")
    done, failed_before = len(walls), len(failures)
    total = max(args.of or 0, done + args.runs)
    for i in range(done, done + args.runs):
        before = process_cpu_ticks(server) if server else 0
        wall, maxrss, cpu, code, timed_out = run_once(args.cmd, args.cwd, args.stdin, args.out,
                                                      args.timeout, method)
        walls.append(wall)
        rss.append(maxrss)
        cpus.append(cpu)
        note = ""
        if server:
            server_cpus.append((process_cpu_ticks(server) - before) / hz)
            note += "  (server CPU %.3f s)" % server_cpus[-1]
        if timed_out:
            note = "  TIMEOUT after %.0f s (killed)" % args.timeout
            failures.append("run %d timed out" % (i + 1))
        elif code != 0:
            note = "  exit code %d (stderr: %s.stderr)" % (code, args.out)
            failures.append("run %d exit code %d" % (i + 1, code))
        print("  %-9s run %d/%d: %8.3f s  CPU %7.3f s  peak RSS %8.1f MiB%s" % (
            args.name, i + 1, total, wall, cpu, maxrss / 1024.0, note), flush=True)
    result = {"name": args.name, "wall": walls, "maxrss_kib": rss, "failures": failures, "cpu": cpus,
              "server_cpu": server_cpus,
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

def start_slow_json_server(page, delay, keep_alive=False):
    """A threaded http server on 127.0.0.1 that answers every GET with
    `page(query)` as JSON after `delay` seconds. With
    `keep_alive`, HTTP/1.1 with Nagle off (the head and the body go out in
    two writes: without it, the body waits for the client's delayed ACK of
    the head, 40 ms, every page). Returns the server (its port is
    `server_address[1]`; `shutdown()` ends it)."""
    import http.server
    import socketserver
    from urllib.parse import urlparse, parse_qs

    class Handler(http.server.BaseHTTPRequestHandler):
        if keep_alive:
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

        def do_GET(self):
            query = parse_qs(urlparse(self.path).query)
            time.sleep(delay)
            body = json.dumps(page(query)).encode()
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
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def cmd_prefetch(args):
    """An http source that answers each page after `delay` seconds, and a
    client that waits `think` seconds between loadNext calls: the median time
    from a call to its reply, with prefetch on and off."""
    import tempfile

    pages, delay = args.pages, args.delay

    def page(query):
        try:
            page = int(query.get("cursor", ["1"])[0])
        except ValueError:
            page = 1
        items = [{"id": (page - 1) * 20 + i + 1, "name": "item %d" % i} for i in range(20)]
        return {"items": items, "next_cursor": str(page + 1) if page < pages else None}

    server = start_slow_json_server(page, delay)
    port = server.server_address[1]

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

# ----------------------------------------------------------------------- latency

def cmd_latency(args):
    """An http source that answers each page after `delay` seconds (page
    strategy, `total` in every page), and `loadAll` of its pages through a
    nextpage server, with `concurrency` 1 and 8: seconds from the request
    to its reply, and every item checked (each once, in order)."""
    import tempfile

    pages, delay, per_page = args.pages, args.delay, 20

    def page(query):
        try:
            page = int(query.get("page", ["1"])[0])
        except ValueError:
            page = 0
        items = [] if not 1 <= page <= pages else [
            {"id": (page - 1) * per_page + i + 1, "name": "item %d" % i} for i in range(per_page)]
        return {"items": items, "total": pages * per_page}

    server = start_slow_json_server(page, delay, keep_alive=True)
    port = server.server_address[1]

    def session(concurrency):
        with tempfile.TemporaryDirectory() as tmp:
            config = {"collections": {"api": {
                "source": {"type": "http", "url": "http://127.0.0.1:%d/items" % port, "timeout": 10},
                "paging": {"strategy": "page", "total": "/total"}, "concurrency": concurrency}}}
            path = os.path.join(tmp, "config.json")
            with open(path, "w") as f:
                json.dump(config, f)
            proc = subprocess.Popen(args.cmd + ["--config", path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL)
            try:
                # The server is up once it answers.
                proc.stdin.write(b'{"jsonrpc":"2.0","id":0,"method":"status","params":{"collection":"api"}}\n')
                proc.stdin.flush()
                json.loads(proc.stdout.readline())
                request = {"jsonrpc": "2.0", "id": 1, "method": "loadAll", "params": {"collection": "api"}}
                t0 = time.perf_counter()
                proc.stdin.write((json.dumps(request) + "\n").encode())
                proc.stdin.flush()
                ids = []
                while True:
                    message = json.loads(proc.stdout.readline())
                    if message.get("method") == "page":
                        ids += [item["id"] for item in message["params"]["items"]]
                    elif message.get("id") == 1:
                        elapsed = time.perf_counter() - t0
                        if "result" not in message:
                            raise RuntimeError("loadAll failed: %s" % json.dumps(message)[:300])
                        break
                if ids != list(range(1, pages * per_page + 1)):
                    raise RuntimeError("concurrency %d: %d items, not each of 1..%d once in order" % (
                        concurrency, len(ids), pages * per_page))
            finally:
                proc.stdin.close()
                proc.wait(timeout=30)
            return elapsed

    result = {"failures": [], "pages": pages, "delay": delay}
    for concurrency in (8, 1):
        try:
            runs = [session(concurrency) for _ in range(args.runs)]
            result["concurrency%d" % concurrency] = runs
            print("  concurrency %d: loadAll of %d pages took %.3f s (median of %d; upstream %d ms a page)" % (
                concurrency, pages, statistics.median(runs), len(runs), delay * 1000), flush=True)
        except Exception as e:  # noqa: BLE001 - reported as a failure line
            result["failures"].append("concurrency %d: %s" % (concurrency, e))
    server.shutdown()
    with open(args.result, "w") as f:
        json.dump(result, f)
    if result["failures"]:
        print("FAIL: latency: %s" % "; ".join(result["failures"]))
        return 1
    return 0


# ------------------------------------------------------------------- check-lines

def cmd_check_lines(args):
    """Every line one JSON item; ids first..first+count-1 in order; the same
    items as --compare's, line by line, as parsed JSON."""
    errors = []
    expected = args.first
    lines = 0
    other = open(args.compare, "rb") if args.compare else None
    differ = 0
    with open(args.out, "rb") as f:
        for raw in f:
            lines += 1
            try:
                item = json.loads(raw)
            except ValueError as e:
                errors.append("line %d is not JSON (%s)" % (lines, e))
                break
            if not isinstance(item, dict) or item.get("id") != expected:
                errors.append("line %d: expected the item with id %d, got %r" % (lines, expected, raw[:120]))
                break
            expected += 1
            if other is not None:
                theirs = other.readline()
                try:
                    if json.loads(theirs) != item:
                        differ += 1
                        if differ <= 3:
                            errors.append("line %d differs from %s: %r vs %r" % (lines, args.compare, raw[:200], theirs[:200]))
                except ValueError:
                    errors.append("line %d of %s is not JSON: %r" % (lines, args.compare, theirs[:120]))
                    break
    if other is not None:
        if not errors and other.readline():
            errors.append("%s has more lines than %s" % (args.compare, args.out))
        other.close()
    if not errors and lines != args.count:
        errors.append("%d lines, expected %d" % (lines, args.count))
    if errors:
        for e in errors[:10]:
            print("FAIL: %s: %s" % (args.label or args.out, e))
        return 1
    print("  %s: %d items, ids %d..%d once each, in order%s" % (
        args.label or args.out, lines, args.first, args.first + lines - 1,
        ", the same items as %s" % (args.compare_label or args.compare) if args.compare else ""))
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
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)

    def at_best(cpu):
        """A one-thread CPU time spread over the bench's cores, and that bound."""
        return "on %d core%s at best %.3f s" % (cores, "" if cores == 1 else "s", cpu / cores), cpu / cores

    def nextpage_takes(best, np_res):
        return "; nextpage takes %.2fx that" % (statistics.median(np_res["wall"]) / best) if np_res and np_res["wall"] else ""

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
        bound, best = at_best(cpu)
        line = "  %-6s jansson %.3f s CPU; %s" % (wl, cpu, bound)
        if nv_res and nv_res["wall"]:
            line += " = %.2f of naive" % (best / statistics.median(nv_res["wall"]))
        print(line + nextpage_takes(best, np_res))
    print("What the workload allows (bench/lean.c: one thread reads, parses, keeps and answers each page,"
          " nothing else; median CPU time of %s run(s)):" % args.runs)
    for wl in ("small", "large"):
        fl = load(args.outdir, "%s.floor.json" % wl)
        lean = load(args.outdir, "%s.lean.json" % wl)
        np_res = load(args.outdir, "%s.nextpage.json" % wl)
        if not lean or not lean.get("cpu") or lean.get("failures"):
            print("  %-6s n/a" % wl)
            continue
        cpu = statistics.median(lean["cpu"])
        bound, best = at_best(cpu)
        line = "  %-6s lean C %.3f s CPU (%.3f s wall on one core)" % (wl, cpu, statistics.median(lean["wall"]))
        if fl and fl.get("cpu_s"):
            line += " = %.2fx jansson's" % (cpu / statistics.median(fl["cpu_s"]))
        print(line + "; " + bound + nextpage_takes(best, np_res))

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

    # Against what jansson allows on two cores (the floor lines above).
    for wl, limit in (("small", 1.35), ("large", 1.05)):
        fl = load(args.outdir, "%s.floor.json" % wl)
        np_res = load(args.outdir, "%s.nextpage.json" % wl)
        value = None
        if fl and fl.get("cpu_s") and np_res and np_res["wall"]:
            value = statistics.median(np_res["wall"]) / (statistics.median(fl["cpu_s"]) / max(1, min(cores, 2)))
        checks.append(("file %s / jansson 2-core floor <= %.2f" % (wl, limit), value, limit, ".2f"))

    # http workloads: `nextpage all` over a loopback nginx, against Node 20.
    def median_of(res, key="wall"):
        return statistics.median(res[key]) if res and res.get(key) else None

    rows = []
    http = {}
    for wl in ("http-small", "http-large"):
        np_res = load(args.outdir, "%s.nextpage.json" % wl)
        node_res = load(args.outdir, "%s.node.json" % wl)
        if not np_res and not node_res:
            continue
        np_t, node_t = median_of(np_res), median_of(node_res)
        np_m = max(np_res["maxrss_kib"]) / 1024.0 if np_res else None
        node_m = max(node_res["maxrss_kib"]) / 1024.0 if node_res else None
        http[wl] = (np_t, node_t, np_m, node_m)
        servers = [c for r in (np_res, node_res) if r for c in r.get("server_cpu", [])]
        rows.append((wl, "%s (%s CPU)" % (fmt(np_t, ".3f"), fmt(median_of(np_res, "cpu"), ".3f")),
                     "%s (%s CPU)" % (fmt(node_t, ".3f"), fmt(median_of(node_res, "cpu"), ".3f")),
                     fmt(np_t / node_t if np_t and node_t else None, ".2f"),
                     fmt(np_m, ".1f"), fmt(node_m, ".1f"), fmt(np_m / node_m if np_m and node_m else None, ".2f"),
                     fmt(max(servers) if servers else None, ".3f")))
    file_all = load(args.outdir, "file-large.nextpage.json")
    if rows:
        head = ("http workload", "nextpage all median s", "node median s", "ratio", "nextpage RSS MiB", "node RSS MiB",
                "ratio", "nginx CPU s (max/run)")
        widths = [max(len(head[i]), *(len(r[i]) for r in rows)) for i in range(len(head))]
        print()
        print("http workloads (`nextpage all` and bench/node-all.mjs paging a loopback nginx; median wall time):")
        print(" | ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(head, widths))))
        print("-|-".join("-" * w for w in widths))
        for r in rows:
            print(" | ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))
        if file_all:
            print("the same large pages from files (`nextpage all`, file source): %s s (%s CPU)" % (
                fmt(median_of(file_all), ".3f"), fmt(median_of(file_all, "cpu"), ".3f")))
    small, large = http.get("http-small"), http.get("http-large")
    checks.append(("http small nextpage/node <= 0.60", small[0] / small[1] if small and small[0] and small[1] else None, 0.60, ".2f"))
    checks.append(("http large nextpage/node <= 0.80", large[0] / large[1] if large and large[0] and large[1] else None, 0.80, ".2f"))
    file_t = median_of(file_all)
    checks.append(("http large / file large <= 1.15", large[0] / file_t if large and large[0] and file_t else None, 1.15, ".2f"))
    checks.append(("http large RSS nextpage/node <= 0.50", large[2] / large[3] if large and large[2] and large[3] else None, 0.50, ".2f"))

    lat = load(args.outdir, "latency.nextpage.json")
    fast = median_of(lat, "concurrency8")
    slow = median_of(lat, "concurrency1")
    if lat:
        print("latency (loadAll of %s pages, upstream answering each after %s ms): concurrency 8 %s s | sequential %s s" % (
            lat.get("pages"), fmt(lat.get("delay", 0) * 1000, ".0f"), fmt(fast, ".3f"), fmt(slow, ".3f")))
    checks.append(("latency concurrency 8 <= 0.9 s", fast, 0.9, ".3f"))
    checks.append(("latency sequential >= 5 s", slow, 5.0, ".3f", ">="))

    print()
    print("Targets (informative; ratios are nextpage / the other, lower is better):")
    for check in checks:
        label, value, limit, spec = check[:4]
        at_least = len(check) > 4 and check[4] == ">="
        if value is None:
            verdict = "SKIP" if args.skipped_nextpage else "n/a"
        else:
            verdict = "pass" if (value >= limit if at_least else value <= limit) else "FAIL"
        print("  %-40s %8s  %s" % (label, fmt(value, spec), verdict))
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
    p.add_argument("--server-pid-file", default=None,
                   help="a server (nginx) whose CPU time, with its children's, is recorded for each run")
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

    p = sub.add_parser("latency")
    p.add_argument("--result", required=True)
    p.add_argument("--pages", type=int, default=100)
    p.add_argument("--delay", type=float, default=0.05)
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    p.set_defaults(func=cmd_latency)

    p = sub.add_parser("check-lines")
    p.add_argument("--out", required=True)
    p.add_argument("--first", type=int, required=True)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--compare", default=None)
    p.add_argument("--label", default=None)
    p.add_argument("--compare-label", default=None)
    p.set_defaults(func=cmd_check_lines)

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
