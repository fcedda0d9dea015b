// The Node client against the real nextpage binary ($NEXTPAGE). Each test
// runs in a fresh folder (no nextpage.json: the built-in demo is served).
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { closeSync, constants, mkdirSync, mkdtempSync, openSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, test } from "node:test";

import {
  InvalidDefinition, InvalidParams, MethodNotFound, NextPage, NextPageNotFound, NotNextPage, PageNotUnderstood,
  RequestCancelled, RequestTimeout, RPCError, ServerExited, UnknownCollection, UpstreamFailed,
} from "../index.js";

const binary = process.env.NEXTPAGE;
if (!binary) throw new Error("set NEXTPAGE to the nextpage binary under test");
const version = execFileSync(binary, ["--version"], { encoding: "utf8" }).trim();
const range = (from, to) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const quiet = () => {};
// A test that hangs (a reply that never comes) fails instead of hanging the run.
const bounded = { timeout: 60_000 };

let folder;
beforeEach(() => { folder = mkdtempSync(join(tmpdir(), "nextpage-node-")); });
afterEach(() => rmSync(folder, { recursive: true, force: true }));

const start = (options = {}) => NextPage.spawn({ path: binary, cwd: folder, onStderr: quiet, ...options });

/** Collection "c" whose first page is a FIFO: the server's read waits until the test gives the page. */
function blockedPage() {
  mkdirSync(join(folder, "pages"));
  writeFileSync(join(folder, "pages", "p2.json"), JSON.stringify({ items: [{ id: 3 }], next_cursor: null }));
  const path = join(folder, "pages", "first.json");
  execFileSync("mkfifo", [path]);
  writeFileSync(join(folder, "blocked.json"), JSON.stringify({ collections: { c: {
    source: { type: "file", dir: "pages" }, paging: { strategy: "cursor", items: "/items", next: "/next_cursor" } } } }));
  let holder = null;
  return {
    args: ["--config", join(folder, "blocked.json")],
    /** Resolves once the server has opened the page to read it (the fetch is in flight). */
    async waitForReader() { holder = await open(path, "w"); },
    /** Puts a regular first page in place of the FIFO; a read still waiting ends. */
    async release() {
      // An open still waiting finds a writer (this one), then end of file.
      const writer = holder ? null : openSync(path, constants.O_RDWR | constants.O_NONBLOCK);
      writeFileSync(`${path}.tmp`, JSON.stringify({ items: [{ id: 1 }, { id: 2 }], next_cursor: "p2" }));
      renameSync(`${path}.tmp`, path);
      if (holder) await holder.close();
      else closeSync(writer);
      holder = null;
    },
  };
}

describe("paging", () => {
  test("items yields every demo item once, in order", bounded, async () => {
    const np = await start();
    assert.deepEqual(np.serverInfo, { name: "nextpage", version });
    const ids = [];
    for await (const item of np.items("demo")) ids.push(item.id);
    assert.deepEqual(ids, range(1, 250));
    assert.equal((await np.status("demo")).count, 250);
    assert.equal(await np.close(), 0);
  });

  test("pages follow the cursor to the end; restart starts again", bounded, async () => {
    const np = await start();
    const pages = [];
    for await (const page of np.pages("demo")) pages.push(page);
    assert.deepEqual(pages.map((p) => p.page), range(1, 10));
    assert.deepEqual(pages.map((p) => p.hasNext), [...Array(9).fill(true), false]);
    for await (const page of np.pages("demo", { restart: true })) {
      assert.equal(page.items[0].id, 1);
      break;
    }
    await np.close();
  });

  test("the typed methods", bounded, async () => {
    const np = await start();
    assert.equal((await np.loadNext("demo")).count, 25);
    assert.deepEqual((await np.itemSlice("demo", { offset: 10, limit: 2 })).items.map((i) => i.id), [11, 12]);
    assert.equal((await np.load("demo")).page, 1);
    assert.equal((await np.reset("demo")).count, 0);
    assert.deepEqual((await np.collections()).map((s) => s.collection), ["demo"]);
    assert.equal((await np.define("copy", { source: { type: "file", dir: folder }, paging: { strategy: "cursor" } })).collection, "copy");
    await np.close();
  });

  test("concurrent calls on one collection get successive pages", bounded, async () => {
    const np = await start();
    const pages = await Promise.all(range(1, 10).map(() => np.loadNext("demo")));
    assert.deepEqual(pages.map((p) => p.page), range(1, 10));
    await np.close();
  });

  test("loadAll reports pages and progress through callbacks; on() stops when asked", bounded, async () => {
    const np = await start();
    const pages = [], progress = [], seen = [];
    const stop = np.on("page", (page) => seen.push(page.page));
    const result = await np.loadAll("demo", { maxPages: 3, onPage: (p) => pages.push(p), onProgress: (p) => progress.push(p) });
    assert.deepEqual(result, { collection: "demo", pages: 3, count: 75, hasNext: true, lastId: "page-4" });
    assert.deepEqual(pages.map((p) => p.page), [1, 2, 3]);
    assert.deepEqual(progress.map((p) => p.kind), ["begin", "report", "report", "report", "end"]);
    stop();
    await np.loadAll("demo", { maxPages: 1 });
    assert.deepEqual(seen, [1, 2, 3]);
    await np.close();
  });
});

describe("errors", () => {
  test("error replies reject with the class of their code, carrying data", bounded, async () => {
    const np = await start();
    await assert.rejects(np.status("nope"), (error) => {
      assert.ok(error instanceof UnknownCollection && error instanceof RPCError);
      assert.equal(error.code, -32001);
      assert.deepEqual(error.data, { collection: "nope", known: ["demo"] });
      assert.equal(error.method, "status");
      return true;
    });
    await assert.rejects(np.call("noSuchMethod"), (e) => e instanceof MethodNotFound && e.data.method === "noSuchMethod");
    await assert.rejects(np.itemSlice("demo", { offset: "ten" }), (e) => e instanceof InvalidParams && e.data.field === "offset");
    await assert.rejects(np.define("x", { source: { type: "file", dir: "." }, paging: { strategy: "curser" } }),
      (e) => e instanceof InvalidDefinition && e.code === -32004 && e.data.field === "paging.strategy");
    assert.equal((await np.loadNext("demo")).page, 1, "the server keeps serving");
    await np.close();
  });

  test("upstream errors carry their data", bounded, async () => {
    mkdirSync(join(folder, "empty"));
    mkdirSync(join(folder, "bad"));
    writeFileSync(join(folder, "bad", "first.json"), '{"items": [1,');
    writeFileSync(join(folder, "broken.json"), JSON.stringify({ collections: {
      missing: { source: { type: "file", dir: "empty" }, paging: { strategy: "cursor" } },
      garbled: { source: { type: "file", dir: "bad" }, paging: { strategy: "cursor" } },
    } }));
    const np = await start({ args: ["--config", join(folder, "broken.json")] });
    await assert.rejects(np.loadNext("missing"), (e) => e instanceof UpstreamFailed && e.code === -32002 && e.data.collection === "missing");
    await assert.rejects(np.loadNext("garbled"), (e) => e instanceof PageNotUnderstood && e.code === -32003 && "line" in e.data);
    await np.close();
  });

  test("a program that echoes its input is not nextpage", bounded, async () => {
    await assert.rejects(NextPage.spawn({ path: "/bin/cat" }), (e) => e instanceof NotNextPage && /it sent a request/.test(e.message));
  });

  test("a program that exits at once is reported with its status", bounded, async () => {
    await assert.rejects(NextPage.spawn({ path: "/bin/true" }), (e) => e instanceof ServerExited && e.status === 0);
  });

  test("a server that cannot start shows its stderr", bounded, async () => {
    const lines = [];
    await assert.rejects(start({ args: ["--config", "missing.json"], onStderr: (l) => lines.push(l) }),
      (e) => e instanceof ServerExited && e.status === 2 && e.stderr.includes("missing.json"));
    assert.ok(lines.some((l) => l.startsWith("nextpage: config")));
  });

  test("a missing executable says how to get one", bounded, async () => {
    await assert.rejects(NextPage.spawn({ path: join(folder, "no-such-nextpage") }), (e) => e instanceof NextPageNotFound);
    const saved = process.env.NEXTPAGE;
    process.env.NEXTPAGE = "no-such-nextpage-anywhere";
    try {
      await assert.rejects(NextPage.spawn(), (e) => e instanceof NextPageNotFound && /on PATH/.test(e.message));
    } finally {
      process.env.NEXTPAGE = saved;
    }
  });
});

describe("cancellation and ending", () => {
  test("aborting a call cancels it on the server", bounded, async () => {
    const page = blockedPage();
    const np = await start({ args: page.args });
    const controller = new AbortController();
    const call = np.loadNext("c", {}, { signal: controller.signal });
    await page.waitForReader();
    controller.abort();
    await assert.rejects(call, (e) => e.name === "AbortError");
    await page.release();
    // The cancelled call's page never landed: the walk starts at the first page.
    const ids = [];
    for await (const item of np.items("c")) ids.push(item.id);
    assert.deepEqual(ids, [1, 2, 3]);
    await np.close();
  });

  test("$/cancelRequest ends the call with RequestCancelled", bounded, async () => {
    const page = blockedPage();
    const np = await start({ args: page.args });
    const call = np.call("loadNext", { collection: "c" });
    await page.waitForReader();
    np.notify("$/cancelRequest", { id: 2 }); // initialize was 1
    await assert.rejects(call, (e) => e instanceof RequestCancelled && e.code === -32800);
    assert.equal((await np.status("c")).isLoading, false);
    await page.release();
    await np.close();
  });

  test("a call that times out is cancelled on the server", bounded, async () => {
    const page = blockedPage();
    const np = await start({ args: page.args });
    await assert.rejects(np.loadNext("c", {}, { timeout: 200 }), (e) => e instanceof RequestTimeout);
    await page.release();
    // Not cancelled, the call would have landed the first page and this would start at the second.
    const ids = [];
    for await (const item of np.items("c")) ids.push(item.id);
    assert.deepEqual(ids, [1, 2, 3]);
    await np.close();
  });

  test("a server killed mid-call rejects instead of hanging", bounded, async () => {
    const page = blockedPage();
    const np = await start({ args: page.args });
    const call = np.loadNext("c");
    await page.waitForReader();
    np.child.kill("SIGKILL");
    await assert.rejects(call, (e) => e instanceof ServerExited && e.signal === "SIGKILL" && /killed by signal SIGKILL/.test(e.message));
    await assert.rejects(np.status("c"), (e) => e instanceof ServerExited, "later calls fail at once");
    assert.equal(await np.close(), null);
  });

  test("close sends shutdown and exit; twice is harmless", bounded, async () => {
    const np = await start();
    await np.loadNext("demo");
    assert.equal(await np.close(), 0);
    assert.equal(await np.close(), 0);
  });

  test("attach drives a process started elsewhere", bounded, async () => {
    const child = spawn(binary, ["--log-level", "warning"], { cwd: folder, stdio: ["pipe", "pipe", "inherit"] });
    const exited = new Promise((resolve) => child.on("exit", resolve));
    const np = await NextPage.attach(child.stdin, child.stdout);
    assert.equal(np.serverInfo.name, "nextpage");
    assert.equal((await np.loadNext("demo")).page, 1);
    assert.equal(await np.close(), null);
    assert.equal(await exited, 0);
  });
});
