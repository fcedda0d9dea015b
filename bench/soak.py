#!/usr/bin/env python3
"""Soak test of a nextpage server: a long, mixed, pipelined session.

Drives one server process over pipes with SOAK_REQUESTS requests (default
1,000,000) across 50 `file` collections: loadNext (queued and skipped), load
(fresh and from a cursor), reset, status, items, collections, loadAll with
small limits, define, initialize, notifications, `$/cancelRequest`s, batches,
and garbage lines (not JSON, invalid requests, unknown methods, bad params).

Checks, and exits 1 on any violation:
  * every request is answered exactly once (by id), and nothing else is;
  * every line on stdout is a valid JSON-RPC 2.0 message, and each reply has
    the shape its method promises (file sources never fail: the only error a
    paging method may end with is -32800, from a reset, load or cancel);
  * each garbage line gets the error it deserves (-32700 / -32600 with
    `id: null`, -32601, -32602);
  * at each checkpoint (every 10% of the run, when every request sent so far
    has been answered) VmRSS (the lowest over 1.5 s of idleness: the server
    returns freed memory twice a second), open file descriptors and threads
    are sampled:
    RSS at the end is within SOAK_RSS_TOLERANCE (10%) of RSS at the first
    checkpoint (100,000 requests in the full run), and descriptors and
    threads at the end are no more than at the first checkpoint;
  * slow reader (SOAK_SLOW_READER_SECONDS, default 10): the driver stops
    reading stdout while it keeps sending requests; the server must stop
    reading stdin (the driver's writes stall) with its RSS bounded
    (SOAK_SLOW_READER_MAX_GROWTH_MB above the last checkpoint, default 64),
    and must answer every request once the driver reads again;
  * at end of input the server exits 0.

Usage: soak.py NEXTPAGE_BINARY DATA_DIR
Environment: SOAK_REQUESTS, SOAK_SEED, SOAK_SLOW_READER_SECONDS,
SOAK_RSS_TOLERANCE (a fraction, default 0.10), SOAK_SLOW_READER_MAX_GROWTH_MB,
SOAK_TIMEOUT (seconds without progress before giving up, default 60).
"""

import json
import os
import random
import subprocess
import sys
import threading
import time

COLLECTIONS = 50
PAGES_MIN, PAGES_MAX = 3, 12
ITEMS_MIN, ITEMS_MAX = 1, 8

# Methods whose reply is a Page (or -32800 when a reset/load/cancel overtook them).
PAGE_KEYS = {"collection", "items", "page", "hasNext", "lastId", "count"}
STATE_KEYS = {"collection", "hasNext", "isLoading", "lastId", "count", "pages", "lastError"}


def env_int(name, default):
    value = os.environ.get(name, "")
    return int(value.replace("_", "")) if value else default


def env_float(name, default):
    value = os.environ.get(name, "")
    return float(value) if value else default


# ---------------------------------------------------------------------- data

def collection_name(index):
    return "s%02d" % index


def definition(index, data):
    """The definition of collection `index`: cursor paging over files, with
    a few collections bounded by maxItems, reading ahead or deduplicating."""
    entry = {
        "source": {"type": "file", "dir": os.path.join(data, collection_name(index))},
        "paging": {"strategy": "cursor"},
    }
    if index % 5 == 1:
        entry["maxItems"] = 10
    if index % 7 == 2:
        entry["prefetch"] = 1
    if index % 11 == 3:
        entry["dedupe"] = True
        entry["paging"]["id"] = "/id"
    return entry


def generate(data):
    """Writes the pages and config.json (deterministic; rewritten each run)."""
    rng = random.Random(20240601)
    os.makedirs(data, exist_ok=True)
    for index in range(COLLECTIONS):
        folder = os.path.join(data, collection_name(index))
        os.makedirs(folder, exist_ok=True)
        pages = rng.randint(PAGES_MIN, PAGES_MAX)
        item_id = 0
        for page in range(1, pages + 1):
            items = []
            for _ in range(rng.randint(ITEMS_MIN, ITEMS_MAX)):
                item_id += 1
                items.append({"id": item_id, "name": "item %d of %s" % (item_id, collection_name(index)),
                              "tags": ["é", "😀"][: item_id % 3]})
            next_cursor = "p%d" % (page + 1) if page < pages else None
            name = "first" if page == 1 else "p%d" % page
            with open(os.path.join(folder, name + ".json"), "w", encoding="utf-8") as f:
                json.dump({"items": items, "next_cursor": next_cursor}, f, ensure_ascii=False)
    config = {"collections": {collection_name(i): definition(i, data) for i in range(COLLECTIONS)}}
    with open(os.path.join(data, "config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=1)
    return os.path.join(data, "config.json")


# -------------------------------------------------------------------- process

def proc_sample(pid):
    """VmRSS (kB), threads and open descriptors of a process."""
    rss = threads = None
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("Threads:"):
                threads = int(line.split()[1])
    fds = len(os.listdir("/proc/%d/fd" % pid))
    names = {}
    for task in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, task)) as f:
                name = f.read().strip()
        except OSError:
            continue
        names[name] = names.get(name, 0) + 1
    return {"rss_kb": rss, "threads": threads, "fds": fds, "thread_names": names}


class Soak:
    def __init__(self, binary, data):
        self.binary = binary
        self.data = data
        self.total = env_int("SOAK_REQUESTS", 1_000_000)
        self.rng = random.Random(env_int("SOAK_SEED", 1))
        self.slow_seconds = env_float("SOAK_SLOW_READER_SECONDS", 10)
        self.rss_tolerance = env_float("SOAK_RSS_TOLERANCE", 0.10)
        self.slow_growth_kb = env_int("SOAK_SLOW_READER_MAX_GROWTH_MB", 64) * 1024
        self.stall_timeout = env_float("SOAK_TIMEOUT", 60)
        self.checkpoint_every = max(1, min(100_000, self.total // 10))

        self.lock = threading.Condition()
        # Guarded by `lock`.
        self.outstanding = {}       # id (JSON text) -> (method, expected error code or None)
        self.expected_null = {}     # code -> count of `id: null` errors still to come
        self.received_null = {}
        self.answered = 0
        self.notifications = {}
        self.violations = []
        self.reading = True
        self.reader_done = False
        self.last_progress = time.monotonic()

        self.sent = 0               # messages counted as requests (SOAK_REQUESTS)
        self.next_id = 0
        self.bytes_written = 0
        self.recent_ids = []
        self.checkpoints = []

    # ----------------------------------------------------------- bookkeeping

    def violation(self, text):
        with self.lock:
            if len(self.violations) < 50:
                self.violations.append(text)
            elif len(self.violations) == 50:
                self.violations.append("(more violations not shown)")

    def new_id(self):
        self.next_id += 1
        n = self.next_id
        # Numbers and strings, as clients use both.
        return json.dumps(n) if n % 4 else json.dumps("r%d" % n)

    def expect(self, id_text, method, code=None):
        with self.lock:
            self.outstanding[id_text] = (method, code)
        self.recent_ids.append(id_text)
        if len(self.recent_ids) > 64:
            del self.recent_ids[:32]

    def expect_null(self, code):
        with self.lock:
            self.expected_null[code] = self.expected_null.get(code, 0) + 1

    # -------------------------------------------------------------- requests

    @staticmethod
    def request(id_text, method, params=None):
        text = '{"jsonrpc":"2.0","id":%s,"method":%s' % (id_text, json.dumps(method))
        if params is not None:
            text += ',"params":' + json.dumps(params, separators=(",", ":"))
        return text + "}"

    @staticmethod
    def notification(method, params=None):
        text = '{"jsonrpc":"2.0","method":%s' % json.dumps(method)
        if params is not None:
            text += ',"params":' + json.dumps(params, separators=(",", ":"))
        return text + "}"

    def random_collection(self):
        return collection_name(self.rng.randrange(COLLECTIONS))

    def paging_request(self):
        """One request of the mix, with its expectation recorded; returns the line."""
        rng = self.rng
        roll = rng.random()
        c = self.random_collection()
        i = self.new_id()
        if roll < 0.34:
            params = {"collection": c}
            if rng.random() < 0.15:
                params["ifLoading"] = "skip"
            method = "loadNext"
        elif roll < 0.50:
            method, params = "status", {"collection": c}
        elif roll < 0.62:
            method = "items"
            params = {"collection": c, "offset": rng.randrange(0, 40), "limit": rng.randrange(0, 20)}
        elif roll < 0.67:
            method, params = "load", {"collection": c}
            if rng.random() < 0.3:
                params["lastId"] = "p%d" % rng.randint(2, PAGES_MIN)
        elif roll < 0.72:
            method, params = "reset", {"collection": c}
        elif roll < 0.745:
            method, params = "collections", None
        elif roll < 0.775:
            method = "loadAll"
            params = {"collection": c}
            if rng.random() < 0.5:
                params["maxPages"] = rng.randint(1, 3)
            else:
                params["maxItems"] = rng.randint(1, 10)
            if rng.random() < 0.3:
                params["progressToken"] = "t" + i
        elif roll < 0.795:
            index = rng.randrange(COLLECTIONS)
            method = "define"
            params = dict(definition(index, self.data), name=collection_name(index))
        elif roll < 0.80:
            method, params = "initialize", {}
        else:
            method, params = "loadNext", {"collection": c}
        self.expect(i, method)
        return self.request(i, method, params)

    def garbage(self):
        """A line that is not a good request, with the reply it deserves."""
        rng = self.rng
        kind = rng.randrange(7)
        if kind == 0:
            self.expect_null(-32700)
            return rng.choice(["not json", "{\"jsonrpc\": \"2.0\", \"id\": ", "\x01\x02", "}{", "[1,2"])
        if kind == 1:
            self.expect_null(-32600)
            return rng.choice(['{"foo":1}', '{"jsonrpc":"2.0"}', "42", '"text"', "[]", '{"jsonrpc":"2.0","method":5}'])
        if kind == 2:
            i = self.new_id()
            self.expect(i, "nope", -32601)
            return self.request(i, "no/such/method", {"x": 1})
        if kind == 3:
            i = self.new_id()
            self.expect(i, "status", -32602)
            return self.request(i, "status", {"collection": 5})
        if kind == 4:
            i = self.new_id()
            self.expect(i, "status", -32001)
            return self.request(i, "status", {"collection": "missing"})
        if kind == 5:
            # A batch of two requests and a notification.
            a, b = self.new_id(), self.new_id()
            self.expect(a, "status")
            self.expect(b, "nope", -32601)
            members = [self.request(a, "status", {"collection": self.random_collection()}),
                       self.request(b, "nope"),
                       self.notification("status", {"collection": "s00"})]
            return "[" + ",".join(members) + "]"
        # A batch with an invalid member.
        a = self.new_id()
        self.expect(a, "status")
        self.expect_null(-32600)
        return "[" + self.request(a, "status", {"collection": self.random_collection()}) + ",17]"

    def next_line(self):
        """The next line of the session; counts it when it is a request."""
        rng = self.rng
        roll = rng.random()
        self.sent += 1
        if roll < 0.05 and self.recent_ids:
            return self.notification("$/cancelRequest", {"id": json.loads(rng.choice(self.recent_ids))})
        if roll < 0.06:
            return self.notification("loadNext", {"collection": self.random_collection()})
        if roll < 0.14:
            return self.garbage()
        return self.paging_request()

    # ---------------------------------------------------------------- reader

    def check_reply(self, message):
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            self.violation("not a JSON-RPC 2.0 message: %.200r" % (message,))
            return
        if "method" in message:
            if "id" in message or not isinstance(message["method"], str):
                self.violation("bad notification: %.200r" % (message,))
                return
            with self.lock:
                self.notifications[message["method"]] = self.notifications.get(message["method"], 0) + 1
            if message["method"] == "page" and not PAGE_KEYS <= set(message.get("params", {})):
                self.violation("page notification without a Page: %.200r" % (message,))
            return
        if "id" not in message or (("result" in message) == ("error" in message)):
            self.violation("a reply needs an id and exactly one of result/error: %.200r" % (message,))
            return
        error = message.get("error")
        if error is not None and (not isinstance(error.get("code"), int) or not isinstance(error.get("message"), str)):
            self.violation("malformed error: %.200r" % (message,))
            return
        id_value = message["id"]
        if id_value is None:
            code = error["code"] if error else None
            with self.lock:
                self.received_null[code] = self.received_null.get(code, 0) + 1
                self.answered += 1
                self.lock.notify_all()
            return
        id_text = json.dumps(id_value)
        with self.lock:
            expected = self.outstanding.pop(id_text, None)
            if expected is not None:
                self.answered += 1
                self.lock.notify_all()
        if expected is None:
            self.violation("reply to an id that is not waiting (a duplicate, or never sent): %.200r" % (message,))
            return
        method, code = expected
        if code is not None:
            if not error or error["code"] != code:
                self.violation("%s: expected error %d, got %.200r" % (method, code, message))
            return
        if error:
            if not (method in ("loadNext", "load", "loadAll") and error["code"] == -32800):
                self.violation("%s: unexpected error %.200r" % (method, message))
            return
        result = message["result"]
        if method in ("loadNext", "load"):
            ok = isinstance(result, dict) and PAGE_KEYS <= set(result)
        elif method in ("status", "reset", "define"):
            ok = isinstance(result, dict) and STATE_KEYS <= set(result)
        elif method == "items":
            ok = isinstance(result, dict) and isinstance(result.get("items"), list) and isinstance(result.get("count"), int)
        elif method == "collections":
            ok = isinstance(result, list) and len(result) == COLLECTIONS
        elif method == "loadAll":
            ok = isinstance(result, dict) and {"pages", "count", "hasNext", "lastId"} <= set(result)
        else:
            ok = isinstance(result, dict) and "serverInfo" in result
        if not ok:
            self.violation("%s: unexpected result %.200r" % (method, message))

    def read_replies(self, fd):
        pending = b""
        while True:
            with self.lock:
                while not self.reading:
                    self.lock.wait()
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            pending += chunk
            lines = pending.split(b"\n")
            pending = lines.pop()
            for line in lines:
                try:
                    message = json.loads(line)
                except ValueError:
                    self.violation("stdout line is not JSON: %.200r" % line)
                    continue
                for member in (message if isinstance(message, list) else [message]):
                    if isinstance(message, list) and "method" in member:
                        self.violation("a notification inside a batch reply: %.200r" % line)
                    self.check_reply(member)
            with self.lock:
                self.last_progress = time.monotonic()
        if pending:
            self.violation("stdout ended inside a line: %.200r" % pending)
        with self.lock:
            self.reader_done = True
            self.lock.notify_all()

    # ---------------------------------------------------------------- writer

    def write(self, fd, data):
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
            self.bytes_written += n

    def all_answered(self):
        return not self.outstanding and all(
            self.received_null.get(code, 0) >= count for code, count in self.expected_null.items())

    def wait_all_answered(self, what):
        """Waits until every request sent so far is answered; False on a stall."""
        with self.lock:
            while not self.all_answered():
                if self.reader_done:
                    self.violations.append("stdout closed while waiting for %s; %d unanswered" % (what, len(self.outstanding)))
                    return False
                if time.monotonic() - self.last_progress > self.stall_timeout:
                    sample = list(self.outstanding.items())[:5]
                    self.violations.append("no reply for %.0f s while waiting for %s; %d unanswered, e.g. %r" % (
                        self.stall_timeout, what, len(self.outstanding), sample))
                    return False
                self.lock.wait(1)
            return True

    def checkpoint(self, pid, label):
        # The idle server's RSS: the lowest of samples over 1.5 s, so that
        # its twice-a-second return of freed memory to the system has run.
        sample = proc_sample(pid)
        for _ in range(15):
            time.sleep(0.1)
            again = proc_sample(pid)
            if again["rss_kb"] < sample["rss_kb"]:
                sample = again
        sample["requests"] = label
        sample["elapsed"] = time.monotonic() - self.started
        self.checkpoints.append(sample)
        print("  %-14s %7.1f s   RSS %7.1f MB   fds %3d   threads %3d" % (
            label, sample["elapsed"], sample["rss_kb"] / 1024, sample["fds"], sample["threads"]), flush=True)
        return sample

    def send_batch_of_lines(self, fd, count):
        lines = [self.next_line() for _ in range(count)]
        self.write(fd, ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape"))

    # ------------------------------------------------------------ slow reader

    def slow_reader(self, fd, pid, baseline):
        """Stops reading stdout for `slow_seconds` while requests keep coming."""
        print("slow reader: not reading stdout for %.0f s while sending requests" % self.slow_seconds, flush=True)
        with self.lock:
            self.reading = False
        stop = threading.Event()
        written_at = []

        def keep_sending():
            while not stop.is_set():
                lines = []
                for _ in range(200):
                    i = self.new_id()
                    c = self.random_collection()
                    kind = self.rng.random()
                    if kind < 0.5:
                        self.expect(i, "items")
                        lines.append(self.request(i, "items", {"collection": c, "limit": 20}))
                    elif kind < 0.8:
                        self.expect(i, "status")
                        lines.append(self.request(i, "status", {"collection": c}))
                    else:
                        self.expect(i, "loadNext")
                        lines.append(self.request(i, "loadNext", {"collection": c}))
                    self.sent += 1
                try:
                    self.write(fd, ("\n".join(lines) + "\n").encode())
                except OSError as error:
                    self.violation("writing during the slow-reader phase: %s" % error)
                    return

        sender = threading.Thread(target=keep_sending, daemon=True)
        sent_before = self.sent
        sender.start()
        deadline = time.monotonic() + self.slow_seconds
        peak = baseline["rss_kb"]
        while time.monotonic() < deadline:
            time.sleep(0.1)
            peak = max(peak, proc_sample(pid)["rss_kb"])
            written_at.append((time.monotonic(), self.bytes_written))
        # The server stopped reading stdin: the driver's writes made no
        # progress during the last second of the pause.
        last = [b for t, b in written_at if t >= deadline - 1.0]
        stalled = len(last) >= 2 and last[0] == last[-1]
        stop.set()
        with self.lock:
            self.reading = True
            self.last_progress = time.monotonic()
            self.lock.notify_all()
        sender.join(self.stall_timeout)
        caught_up = self.wait_all_answered("the slow-reader requests")
        after = proc_sample(pid)
        print("  sent %d requests while stalled; writes stalled: %s; peak RSS %.1f MB (before %.1f MB); "
              "all answered after: %s; RSS after %.1f MB" % (
                  self.sent - sent_before, "yes" if stalled else "NO", peak / 1024, baseline["rss_kb"] / 1024,
                  "yes" if caught_up else "NO", after["rss_kb"] / 1024), flush=True)
        if not stalled:
            self.violations.append("slow reader: the server kept reading stdin while nobody read its replies")
        if peak - baseline["rss_kb"] > self.slow_growth_kb:
            self.violations.append("slow reader: RSS grew by %.1f MB (limit %d MB)" % (
                (peak - baseline["rss_kb"]) / 1024, self.slow_growth_kb // 1024))

    # ------------------------------------------------------------------- run

    def run(self):
        config = generate(self.data)
        stderr_path = os.path.join(self.data, "server.stderr")
        with open(stderr_path, "wb") as stderr:
            process = subprocess.Popen(
                [self.binary, "--config", config, "--log-level", "warning"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, cwd=self.data)
        in_fd, out_fd = process.stdin.fileno(), process.stdout.fileno()
        reader = threading.Thread(target=self.read_replies, args=(out_fd,), daemon=True)
        reader.start()
        print("soak: %d requests across %d collections (pid %d; checkpoint every %d)" % (
            self.total, COLLECTIONS, process.pid, self.checkpoint_every), flush=True)
        self.started = time.monotonic()
        ok = True
        chunk = 500
        try:
            while self.sent < self.total and ok:
                target = min(self.total, (self.sent // self.checkpoint_every + 1) * self.checkpoint_every)
                while self.sent < target:
                    self.send_batch_of_lines(in_fd, min(chunk, target - self.sent))
                ok = self.wait_all_answered("checkpoint %d" % target)
                if ok:
                    self.checkpoint(process.pid, "%d" % target)
            elapsed = time.monotonic() - self.started
            if ok and self.slow_seconds > 0:
                self.slow_reader(in_fd, process.pid, self.checkpoints[-1])
            process.stdin.close()
        except BrokenPipeError:
            self.violations.append("the server closed its stdin (did it exit?)")
        try:
            status = process.wait(timeout=max(30, self.stall_timeout))
        except subprocess.TimeoutExpired:
            process.kill()
            status = process.wait()
            self.violations.append("the server did not exit after end of input")
        reader.join(10)
        if status != 0:
            self.violations.append("exit status %d after end of input (see %s)" % (status, stderr_path))
        return self.report(elapsed if ok else time.monotonic() - self.started, status)

    def report(self, elapsed, status):
        with self.lock:
            unanswered = len(self.outstanding)
            null_ok = self.received_null == self.expected_null
        print("requests: %d in %.1f s (%.0f/s); replies %d; notifications %s; exit %d" % (
            self.sent, elapsed, self.sent / max(elapsed, 1e-9), self.answered,
            dict(sorted(self.notifications.items())), status))
        print("errors with id null: expected %s, received %s" % (
            dict(sorted(self.expected_null.items())), dict(sorted(self.received_null.items()))))
        if unanswered:
            self.violations.append("%d requests never answered" % unanswered)
        if not null_ok:
            self.violations.append("errors with id null do not match the garbage sent")
        if len(self.checkpoints) >= 2:
            first, last = self.checkpoints[0], self.checkpoints[-1]
            growth = (last["rss_kb"] - first["rss_kb"]) / first["rss_kb"]
            print("RSS: %.1f MB after %s requests, %.1f MB after %s (%+.1f%%, limit %+.0f%%)" % (
                first["rss_kb"] / 1024, first["requests"], last["rss_kb"] / 1024, last["requests"],
                growth * 100, self.rss_tolerance * 100))
            print("fds: %d -> %d; threads: %d -> %d (%s -> %s)" % (
                first["fds"], last["fds"], first["threads"], last["threads"],
                sorted(first["thread_names"].items()), sorted(last["thread_names"].items())))
            if growth > self.rss_tolerance:
                self.violations.append("RSS grew by %.1f%% between %s and %s requests" % (
                    growth * 100, first["requests"], last["requests"]))
            if last["fds"] > first["fds"]:
                self.violations.append("open descriptors grew from %d to %d" % (first["fds"], last["fds"]))
            if last["threads"] > first["threads"]:
                self.violations.append("threads grew from %d to %d" % (first["threads"], last["threads"]))
        if self.violations:
            print("FAILED: %d violation(s):" % len(self.violations))
            for violation in self.violations:
                print("  - " + violation)
            return 1
        print("soak: OK")
        return 0


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    binary, data = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    sys.exit(Soak(binary, data).run())


if __name__ == "__main__":
    main()
