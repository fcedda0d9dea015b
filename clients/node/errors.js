// The errors a nextpage client throws. An error reply from the server is an
// RPCError carrying the JSON-RPC `code`, `message` and `data` (README,
// "Methods"; Schemas/openrpc.json), one class per code; trouble with the
// process itself (not nextpage, ended, no reply in time) is a ClientError.

/** Anything that went wrong talking to nextpage. */
export class NextPageError extends Error {
  constructor(message, options) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** An error reply: `code`, `message` and `data` as the server sent them, and the `method` called. */
export class RPCError extends NextPageError {
  /** @param {number} code @param {string} message @param {unknown} [data] @param {string} [method] */
  constructor(code, message, data, method) {
    super(`${method ? `${method}: ` : ""}${message} (${code})`);
    this.code = code;
    this.rpcMessage = message;
    this.data = data;
    this.method = method;
  }
}

/** -32700: the server could not parse a message as JSON. */
export class ParseError extends RPCError {}
/** -32600: not a valid JSON-RPC request object. */
export class InvalidRequest extends RPCError {}
/** -32601: no such method; `data` is `{method}`. */
export class MethodNotFound extends RPCError {}
/** -32602: bad params; `data` is `{field, expected}`. */
export class InvalidParams extends RPCError {}
/** -32603: the server failed in a way it did not foresee. */
export class InternalError extends RPCError {}
/** -32001: no collection by that name; `data` is `{collection, known}`. */
export class UnknownCollection extends RPCError {}
/** -32002: the source failed (network, status, timeout); `data` is `{collection, status?, attempts, retryable, message}`. */
export class UpstreamFailed extends RPCError {}
/** -32003: a page was not JSON or lacked a pointer; `data` is `{collection, pointer?, line?, column?}`. */
export class PageNotUnderstood extends RPCError {}
/** -32004: `define` got an invalid collection; `data` is `{field, expected}`. */
export class InvalidDefinition extends RPCError {}
/** -32800: cancelled by `$/cancelRequest`, `reset` or `load`. */
export class RequestCancelled extends RPCError {}
/** -32801: the server is shutting down. */
export class ShuttingDown extends RPCError {}

/** The class of each error code. */
export const errorClasses = new Map([
  [-32700, ParseError], [-32600, InvalidRequest], [-32601, MethodNotFound], [-32602, InvalidParams],
  [-32603, InternalError], [-32001, UnknownCollection], [-32002, UpstreamFailed], [-32003, PageNotUnderstood],
  [-32004, InvalidDefinition], [-32800, RequestCancelled], [-32801, ShuttingDown],
]);

/** The error for the `error` member of a reply. @param {any} error @param {string} [method] */
export function errorForReply(error, method) {
  if (typeof error !== "object" || error === null || !Number.isInteger(error.code)) {
    return new InternalError(-32603, `malformed error reply: ${JSON.stringify(error)}`, undefined, method);
  }
  const ErrorClass = errorClasses.get(error.code) ?? RPCError;
  return new ErrorClass(error.code, typeof error.message === "string" ? error.message : "", error.data, method);
}

/** The process, not a reply: it could not be started, is not nextpage, ended, or did not answer in time. */
export class ClientError extends NextPageError {}

/** No nextpage executable: neither the path given, nor `$NEXTPAGE`, nor `nextpage` on `PATH`. */
export class NextPageNotFound extends ClientError {}

/** The program wrote something a nextpage server never writes. */
export class NotNextPage extends ClientError {}

/**
 * The server ended (or closed its output) while calls were waiting, or before one was sent.
 * `status` is its exit status and `signal` the signal that killed it (each `null` when not so);
 * `stderr` holds its last lines on stderr, when they were captured.
 */
export class ServerExited extends ClientError {
  /** @param {string} message @param {{status?: number|null, signal?: string|null, stderr?: string}} [details] */
  constructor(message, { status = null, signal = null, stderr = "" } = {}) {
    super(stderr ? `${message}; its last words on stderr:\n${stderr}` : message);
    this.status = status;
    this.signal = signal;
    this.stderr = stderr;
  }
}

/** A call got no reply in time; the client sent `$/cancelRequest` for it. */
export class RequestTimeout extends ClientError {}
