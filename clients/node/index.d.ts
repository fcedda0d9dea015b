// Types of the nextpage client (index.js); the shapes follow Schemas/openrpc.json.
import type { ChildProcess } from "node:child_process";
import type { Readable, Writable } from "node:stream";

export type Cursor = string | number | null;

/** What `load` and `loadNext` return, and what a `page` notification carries. */
export interface Page<Item = any> {
  collection: string;
  items: Item[];
  /** The 1-based number of this page. */
  page: number;
  hasNext: boolean;
  /** The cursor the next `loadNext` sends. */
  lastId: Cursor;
  /** Items loaded so far. */
  count: number;
  /** `ifLoading: "skip"` found a fetch in flight. */
  skipped?: boolean;
  /** On the page that stopped the source. */
  lastError?: string | null;
}

/** What `status`, `reset`, `define` and `collections` return. */
export interface State {
  collection: string;
  hasNext: boolean;
  isLoading: boolean;
  lastId: Cursor;
  count: number;
  pages: number;
  lastError: string | null;
}

export interface ItemSlice<Item = any> {
  collection: string;
  items: Item[];
  count: number;
  offset: number;
}

export interface LoadAllResult {
  collection: string;
  pages: number;
  count: number;
  hasNext: boolean;
  lastId: Cursor;
}

export interface Progress {
  kind: "begin" | "report" | "end";
  pages: number;
  count: number;
}

export interface CallOptions {
  /** Milliseconds (default: the client's `timeout`; null waits as long as it takes). */
  timeout?: number | null;
  /** Aborting it cancels the call (`$/cancelRequest`) and rejects it with the signal's reason. */
  signal?: AbortSignal;
}

export interface SpawnOptions {
  /** The executable; default `$NEXTPAGE`, else `nextpage` on PATH. */
  path?: string;
  args?: string[];
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Milliseconds a call waits by default (null: as long as it takes). */
  timeout?: number | null;
  /** Milliseconds to wait for the `initialize` reply (default 10 000). */
  startTimeout?: number | null;
  /** Each line the server writes on stderr (default: written to this process's stderr). */
  onStderr?: (line: string) => void;
}

export declare class NextPage {
  static spawn(options?: SpawnOptions): Promise<NextPage>;
  static attach(writable: Writable, readable: Readable, options?: { timeout?: number | null; startTimeout?: number | null }): Promise<NextPage>;

  readonly child: ChildProcess | null;
  timeout: number | null;
  readonly serverInfo: { name: "nextpage"; version: string };

  on(method: "page", callback: (page: Page) => void): () => void;
  on(method: "$/progress", callback: (params: { token: string | number; value: Progress }) => void): () => void;
  on(method: string, callback: (params: any) => void): () => void;

  call<Result = any>(method: string, params?: object, options?: CallOptions): Promise<Result>;
  notify(method: string, params?: object): void;

  loadNext<Item = any>(collection: string, params?: { ifLoading?: "queue" | "skip"; [param: string]: any }, options?: CallOptions): Promise<Page<Item>>;
  load<Item = any>(collection: string, params?: { lastId?: Cursor; [param: string]: any }, options?: CallOptions): Promise<Page<Item>>;
  reset(collection: string, options?: CallOptions): Promise<State>;
  status(collection: string, options?: CallOptions): Promise<State>;
  collections(options?: CallOptions): Promise<State[]>;
  itemSlice<Item = any>(collection: string, params?: { offset?: number; limit?: number; [param: string]: any }, options?: CallOptions): Promise<ItemSlice<Item>>;
  define(name: string, definition: object, options?: CallOptions): Promise<State>;
  loadAll(collection: string, options?: { maxItems?: number; maxPages?: number; onPage?: (page: Page) => void; onProgress?: (progress: Progress) => void } & CallOptions): Promise<LoadAllResult>;
  pages<Item = any>(collection: string, options?: { restart?: boolean } & CallOptions): AsyncGenerator<Page<Item>>;
  items<Item = any>(collection: string, options?: { restart?: boolean } & CallOptions): AsyncGenerator<Item>;

  close(options?: { timeout?: number }): Promise<number | null>;
}

export declare class NextPageError extends Error {}
export declare class RPCError extends NextPageError {
  readonly code: number;
  /** The server's message (`message` adds the method and code). */
  readonly rpcMessage: string;
  readonly data: any;
  readonly method?: string;
}
export declare class ParseError extends RPCError {}
export declare class InvalidRequest extends RPCError {}
export declare class MethodNotFound extends RPCError {}
export declare class InvalidParams extends RPCError {}
export declare class InternalError extends RPCError {}
export declare class UnknownCollection extends RPCError {}
export declare class UpstreamFailed extends RPCError {}
export declare class PageNotUnderstood extends RPCError {}
export declare class InvalidDefinition extends RPCError {}
export declare class RequestCancelled extends RPCError {}
export declare class ShuttingDown extends RPCError {}
export declare class ClientError extends NextPageError {}
export declare class NextPageNotFound extends ClientError {}
export declare class NotNextPage extends ClientError {}
export declare class ServerExited extends ClientError {
  readonly status: number | null;
  readonly signal: string | null;
  readonly stderr: string;
}
export declare class RequestTimeout extends ClientError {}
export declare const errorClasses: Map<number, typeof RPCError>;
export declare function errorForReply(error: unknown, method?: string): RPCError;
