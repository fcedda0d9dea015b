// A client for nextpage, the JSON-RPC server that pages through paginated
// sources: spawns the process (or drives one started elsewhere), matches
// replies to requests by id, and turns notifications into callbacks.
//
//   import { NextPage } from "nextpage";
//   const np = await NextPage.spawn();            // $NEXTPAGE, else `nextpage` on PATH
//   for await (const item of np.items("demo")) console.log(item.id);
//   await np.close();

import { spawn } from "node:child_process";
import { accessSync, constants, statSync } from "node:fs";
import { createInterface } from "node:readline";

import {
  ClientError, NextPageError, NextPageNotFound, NotNextPage, RequestTimeout, ServerExited, errorForReply,
} from "./errors.js";

export * from "./errors.js";

/** Lines of the server's stderr kept for the message of ServerExited. */
const STDERR_LINES_KEPT = 20;

/**
 * @typedef {string | number | null} Cursor
 * @typedef {{collection: string, items: any[], page: number, hasNext: boolean, lastId: Cursor, count: number,
 *   skipped?: boolean, lastError?: string | null}} Page
 * @typedef {{collection: string, hasNext: boolean, isLoading: boolean, lastId: Cursor, count: number, pages: number,
 *   lastError: string | null}} State
 * @typedef {{collection: string, items: any[], count: number, offset: number}} ItemSlice
 * @typedef {{collection: string, pages: number, count: number, hasNext: boolean, lastId: Cursor}} LoadAllResult
 * @typedef {{kind: "begin" | "report" | "end", pages: number, count: number}} Progress
 * @typedef {{timeout?: number | null, signal?: AbortSignal}} CallOptions
 *   `timeout`: milliseconds (default: the client's `timeout`; null waits as long as it takes);
 *   `signal`: aborting it cancels the call (`$/cancelRequest`) and rejects it with the signal's reason.
 */

/** `path`, else `$NEXTPAGE`, else `nextpage` (looked up on PATH when spawned). */
function resolveExecutable(path) {
  const candidate = path || process.env.NEXTPAGE || "nextpage";
  if (candidate.includes("/")) {
    try {
      accessSync(candidate, constants.X_OK);
      if (!statSync(candidate).isDirectory()) return candidate;
    } catch {}
    throw new NextPageNotFound(`nextpage executable not found: ${JSON.stringify(candidate)} is not an executable file`);
  }
  return candidate;
}

function shown(line) {
  return JSON.stringify(line.length > 200 ? `${line.slice(0, 200)}...` : line);
}

/** A nextpage server process spoken to over its stdin and stdout (newline-delimited JSON-RPC 2.0). */
export class NextPage {
  /**
   * Starts nextpage (`path`, else `$NEXTPAGE`, else `nextpage` on PATH) with `args` and checks with
   * `initialize`, within `startTimeout` ms (default 10 000), that it is nextpage. Its stderr lines go
   * to `onStderr` (default: this process's stderr); the last ones are kept for ServerExited.
   * @param {{path?: string, args?: string[], cwd?: string, env?: NodeJS.ProcessEnv, timeout?: number | null,
   *   startTimeout?: number | null, onStderr?: (line: string) => void}} [options]
   * @returns {Promise<NextPage>}
   */
  static async spawn({ path, args = [], cwd, env, timeout = null, startTimeout = 10_000, onStderr } = {}) {
    const executable = resolveExecutable(path);
    const child = spawn(executable, args, { cwd, env, stdio: ["pipe", "pipe", "pipe"] });
    const client = new NextPage(child.stdin, child.stdout, { timeout, child });
    const forward = onStderr ?? ((line) => process.stderr.write(`${line}\n`));
    createInterface({ input: child.stderr, crlfDelay: Infinity }).on("line", (line) => {
      client.#stderrTail.push(line);
      if (client.#stderrTail.length > STDERR_LINES_KEPT) client.#stderrTail.shift();
      try { forward(line); } catch {}
    });
    child.on("error", (error) => {
      client.#fail(error.code === "ENOENT"
        ? new NextPageNotFound(`nextpage executable not found: no ${JSON.stringify(executable)} on PATH; install nextpage (its README, "Install"), set $NEXTPAGE, or pass the path`)
        : new ClientError(`cannot start ${executable}: ${error.message}`, { cause: error }));
    });
    child.on("close", (status, signal) => {
      const what = signal ? `nextpage was killed by signal ${signal}` : `nextpage exited with status ${status}`;
      client.#fail(new ServerExited(what, { status, signal, stderr: client.#stderrTail.join("\n") }));
    });
    await client.#start(startTimeout);
    return client;
  }

  /**
   * Drives a nextpage started elsewhere: requests are written to `writable` (its stdin), replies read
   * from `readable` (its stdout).
   * @param {import("node:stream").Writable} writable @param {import("node:stream").Readable} readable
   * @param {{timeout?: number | null, startTimeout?: number | null}} [options]
   * @returns {Promise<NextPage>}
   */
  static async attach(writable, readable, { timeout = null, startTimeout = 10_000 } = {}) {
    const client = new NextPage(writable, readable, { timeout });
    readable.on("end", () => client.#fail(new ServerExited("nextpage closed its output")));
    await client.#start(startTimeout);
    return client;
  }

  /** The process, when this client started it. @type {import("node:child_process").ChildProcess | null} */
  child;
  /** Milliseconds a call waits for its reply by default (null: as long as it takes). @type {number | null} */
  timeout;
  /** The `serverInfo` of the server's `initialize` reply: `{name: "nextpage", version}`. */
  serverInfo = {};

  #writable;
  #nextId = 1;
  #nextToken = 1;
  /** @type {Map<number, {resolve: (value: any) => void, reject: (error: Error) => void, method: string}>} */
  #pending = new Map();
  /** @type {Map<string, Set<(params: any) => void>>} */
  #handlers = new Map();
  /** @type {NextPageError | null} */
  #failure = null;
  #closed = false;
  /** @type {string[]} */
  #stderrTail = [];
  /** @type {Promise<void>} */
  #ended;
  #end = () => {};

  /** Use `NextPage.spawn` or `NextPage.attach`. */
  constructor(writable, readable, { timeout = null, child = null } = {}) {
    this.#writable = writable;
    this.timeout = timeout;
    this.child = child;
    this.#ended = new Promise((resolve) => { this.#end = resolve; });
    // A write to a process that is gone fails the call; it must not crash the program.
    writable.on("error", () => {});
    createInterface({ input: readable, crlfDelay: Infinity }).on("line", (line) => this.#receive(line));
  }

  async #start(startTimeout) {
    try {
      const result = await this.call("initialize", { clientInfo: { name: "nextpage-node" } }, { timeout: startTimeout });
      const info = result?.serverInfo;
      if (info?.name !== "nextpage") throw new NotNextPage(`not a nextpage server: initialize answered ${JSON.stringify(result).slice(0, 200)}`);
      this.serverInfo = info;
    } catch (error) {
      this.#closed = true;
      this.child?.kill("SIGKILL");
      this.#writable.destroy();
      if (error instanceof RequestTimeout) throw new NotNextPage(`not a nextpage server: no reply to initialize within ${startTimeout} ms`);
      throw error;
    }
  }

  // Notifications

  /**
   * Calls `callback(params)` for each notification `method` (`"page"`, `"$/progress"`); returns a
   * function that stops it. Callbacks run between reads and must not throw.
   * @param {string} method @param {(params: any) => void} callback @returns {() => void}
   */
  on(method, callback) {
    if (!this.#handlers.has(method)) this.#handlers.set(method, new Set());
    this.#handlers.get(method).add(callback);
    return () => this.#handlers.get(method)?.delete(callback);
  }

  // Calls

  /**
   * Sends a request and resolves with its `result`; an error reply rejects with the RPCError subclass of
   * its code. After `timeout` ms the call is cancelled on the server and rejects with RequestTimeout.
   * @param {string} method @param {object} [params] @param {CallOptions} [options] @returns {Promise<any>}
   */
  call(method, params, { timeout = this.timeout, signal } = {}) {
    if (this.#failure) return Promise.reject(this.#failure);
    if (this.#closed && method !== "shutdown") return Promise.reject(new ClientError("the client is closed"));
    if (signal?.aborted) return Promise.reject(signal.reason);
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      let timer;
      const onAbort = () => {
        settle();
        this.#cancel(id);
        reject(signal.reason);
      };
      const settle = () => {
        this.#pending.delete(id);
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
      };
      this.#pending.set(id, {
        method,
        resolve: (value) => { settle(); resolve(value); },
        reject: (error) => { settle(); reject(error); },
      });
      if (timeout != null) {
        timer = setTimeout(() => {
          settle();
          this.#cancel(id);
          reject(new RequestTimeout(`${method}: no reply within ${timeout} ms; the request was cancelled`));
        }, timeout);
      }
      signal?.addEventListener("abort", onAbort, { once: true });
      const message = { jsonrpc: "2.0", id, method };
      if (params !== undefined) message.params = params;
      this.#write(message);
    });
  }

  /** Sends a notification (no reply). @param {string} method @param {object} [params] */
  notify(method, params) {
    const message = { jsonrpc: "2.0", method };
    if (params !== undefined) message.params = params;
    this.#write(message);
  }

  /**
   * The page after the last one loaded (the first on a fresh collection); `ifLoading: "skip"` returns at
   * once with `skipped` when a fetch is in flight. Other params (`fields`) pass through.
   * @param {string} collection @param {{ifLoading?: "queue" | "skip", [param: string]: any}} [params]
   * @param {CallOptions} [options] @returns {Promise<Page>}
   */
  loadNext(collection, params = {}, options) {
    return this.call("loadNext", { ...params, collection }, options);
  }

  /**
   * Resets the collection, then loads its first page (or the page after `lastId`).
   * @param {string} collection @param {{lastId?: Cursor, [param: string]: any}} [params] @param {CallOptions} [options]
   * @returns {Promise<Page>}
   */
  load(collection, params = {}, options) {
    return this.call("load", { ...params, collection }, options);
  }

  /** Forgets the collection's pages and cursor. @param {string} collection @returns {Promise<State>} */
  reset(collection, options) {
    return this.call("reset", { collection }, options);
  }

  /** Where the collection stands. @param {string} collection @returns {Promise<State>} */
  status(collection, options) {
    return this.call("status", { collection }, options);
  }

  /** The State of every defined collection. @returns {Promise<State[]>} */
  collections(options) {
    return this.call("collections", undefined, options);
  }

  /**
   * The `items` method: items loaded so far, from absolute `offset`, at most `limit`.
   * @param {string} collection @param {{offset?: number, limit?: number, [param: string]: any}} [params]
   * @param {CallOptions} [options] @returns {Promise<ItemSlice>}
   */
  itemSlice(collection, params = {}, options) {
    return this.call("items", { ...params, collection }, options);
  }

  /** Defines (or replaces) a collection at run time. @param {string} name @param {object} definition @returns {Promise<State>} */
  define(name, definition, options) {
    return this.call("define", { ...definition, name }, options);
  }

  /**
   * Pages to the end (or a limit) in one call; `onPage` gets each page as it lands, `onProgress` each
   * `$/progress` value (begin, a report per page, end).
   * @param {string} collection
   * @param {{maxItems?: number, maxPages?: number, onPage?: (page: Page) => void,
   *   onProgress?: (progress: Progress) => void} & CallOptions} [options]
   * @returns {Promise<LoadAllResult>}
   */
  async loadAll(collection, { maxItems, maxPages, onPage, onProgress, ...options } = {}) {
    const token = onProgress ? `node-${this.#nextToken++}` : undefined;
    const stops = [];
    if (onPage) stops.push(this.on("page", (page) => { if (page.collection === collection) onPage(page); }));
    if (onProgress) stops.push(this.on("$/progress", (p) => { if (p.token === token) onProgress(p.value); }));
    try {
      const params = { collection };
      if (maxItems !== undefined) params.maxItems = maxItems;
      if (maxPages !== undefined) params.maxPages = maxPages;
      if (token !== undefined) params.progressToken = token;
      return await this.call("loadAll", params, options);
    } finally {
      for (const stop of stops) stop();
    }
  }

  /**
   * Yields pages with `loadNext` (`load` first when `restart`) until `hasNext` is false. A collection
   * already at its end yields one empty page.
   * @param {string} collection @param {{restart?: boolean} & CallOptions} [options] @returns {AsyncGenerator<Page>}
   */
  async *pages(collection, { restart = false, ...options } = {}) {
    let method = restart ? "load" : "loadNext";
    while (true) {
      const page = await this.call(method, { collection }, options);
      yield page;
      if (!page.hasNext) return;
      method = "loadNext";
    }
  }

  /** Yields every item of `pages`, one at a time. @param {string} collection @returns {AsyncGenerator<any>} */
  async *items(collection, options = {}) {
    for await (const page of this.pages(collection, options)) yield* page.items;
  }

  // Ending

  /**
   * Sends `shutdown` and `exit`, closes the server's input and waits (at most `timeout` ms, then kills it)
   * for it to end; resolves with its exit status (null for an attached process, or one killed by a signal).
   * @param {{timeout?: number}} [options] @returns {Promise<number | null>}
   */
  async close({ timeout = 10_000 } = {}) {
    if (!this.#closed) {
      this.#closed = true;
      if (!this.#failure) {
        try {
          await this.call("shutdown", undefined, { timeout });
          this.notify("exit");
        } catch (error) {
          if (!(error instanceof NextPageError)) throw error;
        }
      }
      this.#writable.end();
      if (this.child) {
        const timer = setTimeout(() => this.child.kill("SIGKILL"), timeout);
        await this.#ended;
        clearTimeout(timer);
      }
    } else if (this.child) {
      await this.#ended;
    }
    return this.child ? this.child.exitCode : null;
  }

  async [Symbol.asyncDispose ?? Symbol.for("nodejs.asyncDispose")]() {
    await this.close();
  }

  // Internals

  #write(message) {
    if (this.#writable.destroyed || this.#writable.writableEnded) return;
    this.#writable.write(`${JSON.stringify(message)}\n`);
  }

  #cancel(id) {
    if (!this.#failure) this.#write({ jsonrpc: "2.0", method: "$/cancelRequest", params: { id } });
  }

  #receive(line) {
    if (this.#failure || !line.trim()) return;
    let message;
    try {
      message = JSON.parse(line);
    } catch {
      return this.#fail(new NotNextPage(`not a nextpage server: it wrote ${shown(line)}, which is not JSON`), true);
    }
    if (typeof message !== "object" || message === null || Array.isArray(message) || message.jsonrpc !== "2.0") {
      return this.#fail(new NotNextPage(`not a nextpage server: it wrote ${shown(line)}, which is not a JSON-RPC 2.0 message`), true);
    }
    if ("method" in message) {
      if ("id" in message) {
        return this.#fail(new NotNextPage(`not a nextpage server: it sent a request (${shown(line)}); nextpage only replies and notifies`), true);
      }
      for (const handler of [...(this.#handlers.get(message.method) ?? [])]) {
        try { handler(message.params ?? {}); } catch (error) { process.emitWarning(`nextpage: the callback for ${message.method} failed: ${error}`); }
      }
      return;
    }
    if (!("id" in message) || ("result" in message) === ("error" in message)) {
      return this.#fail(new NotNextPage(`not a nextpage server: it wrote ${shown(line)}, which is neither a reply nor a notification`), true);
    }
    const pending = this.#pending.get(message.id);
    if (!pending) return;
    if ("error" in message) pending.reject(errorForReply(message.error, pending.method));
    else pending.resolve(message.result);
  }

  /** Fails every call waiting, and every later one, with `error`; `kill`: the process is not nextpage. */
  #fail(error, kill = false) {
    if (!this.#failure) {
      this.#failure = error;
      for (const pending of [...this.#pending.values()]) pending.reject(error);
      if (kill) this.child?.kill("SIGKILL");
    }
    if (error instanceof ServerExited || error instanceof NextPageNotFound || !this.child) this.#end();
  }
}
