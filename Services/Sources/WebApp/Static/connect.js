// A small client for the Connect protocol with the JSON codec (connectrpc.com/docs/protocol):
// unary calls and server streams over fetch, nothing else. Messages are plain objects in the
// proto3 JSON mapping, so fields at their default value are absent: callers must not assume
// any field is present.

const textEncoder = new TextEncoder();
const textDecoder = new TextDecoder();

// An envelope's flags: its message is compressed (never, as none is asked for), or it is the
// stream's last one, the end-of-stream message with the status.
const COMPRESSED = 0x01;
const END_STREAM = 0x02;

export class ConnectError extends Error {
  constructor(code, message, metadata = {}) {
    super(message ? `${code}: ${message}` : code);
    this.code = code;
    this.rawMessage = message || "";
    this.metadata = metadata;
  }
}

// When a response carries no Connect error of its own (a proxy's page, a dropped connection),
// the spec says how to read its HTTP status.
function codeForHTTPStatus(status) {
  switch (status) {
    case 400: return "internal";
    case 401: return "unauthenticated";
    case 403: return "permission_denied";
    case 404: return "unimplemented";
    case 429: case 502: case 503: case 504: return "unavailable";
    default: return "unknown";
  }
}

function errorFromJSON(json, fallbackCode) {
  const code = json && typeof json.code === "string" ? json.code : fallbackCode;
  return new ConnectError(code, json && typeof json.message === "string" ? json.message : "", json && json.metadata);
}

// A fetch failure (no response at all) is the network's fault: retryable, like gRPC's
// UNAVAILABLE. An abort by our own signal stays "canceled" so callers can tell it apart.
function networkError(error, signal) {
  if (signal && signal.aborted) return new ConnectError("canceled", "the call was canceled");
  return new ConnectError("unavailable", String(error && error.message || error));
}

function envelope(json) {
  const payload = textEncoder.encode(JSON.stringify(json));
  const frame = new Uint8Array(5 + payload.length);
  new DataView(frame.buffer).setUint32(1, payload.length); // flag 0: an uncompressed message
  frame.set(payload, 5);
  return frame;
}

// Reads envelopes from a fetch body as they arrive; a chunk may hold several envelopes or a
// piece of one, so bytes are kept until a whole envelope is there.
async function* envelopes(body) {
  const reader = body.getReader();
  let buffer = new Uint8Array(0);
  try {
    for (;;) {
      while (buffer.length >= 5) {
        const length = new DataView(buffer.buffer, buffer.byteOffset, 5).getUint32(1);
        if (buffer.length < 5 + length) break;
        yield { flags: buffer[0], data: buffer.subarray(5, 5 + length) };
        buffer = buffer.slice(5 + length);
      }
      const { done, value } = await reader.read();
      if (done) {
        if (buffer.length > 0) throw new ConnectError("unavailable", "the stream ended inside a message");
        return;
      }
      const joined = new Uint8Array(buffer.length + value.length);
      joined.set(buffer);
      joined.set(value, buffer.length);
      buffer = joined;
    }
  } finally {
    // A caller that stops reading early (break, an exception) lets go of the connection.
    reader.cancel().catch(() => {});
  }
}

/**
 * createClient({baseUrl, headers}) → {unary, stream}
 *   baseUrl: where the services are; default this page's origin.
 *   headers: sent with every call (e.g. {authorization: "Bearer alice-token"}).
 */
export function createClient({ baseUrl = location.origin, headers = {} } = {}) {
  const root = baseUrl.replace(/\/+$/, "");

  // unary("orders.v1.OrderTracking", "GetOrder", {orderId}, {timeoutMs, signal}) → response
  async function unary(service, method, request, { timeoutMs = 10000, signal } = {}) {
    const controller = new AbortController();
    const abort = () => controller.abort();
    signal && signal.addEventListener("abort", abort);
    // The server enforces the deadline too (connect-timeout-ms); ours only guards a dead link.
    const timer = setTimeout(abort, timeoutMs + 1000);
    try {
      let response;
      try {
        response = await fetch(`${root}/${service}/${method}`, {
          method: "POST",
          headers: { ...headers, "content-type": "application/json", "connect-protocol-version": "1",
                     "connect-timeout-ms": String(timeoutMs) },
          body: JSON.stringify(request),
          signal: controller.signal,
        });
      } catch (error) {
        throw controller.signal.aborted && !(signal && signal.aborted)
          ? new ConnectError("deadline_exceeded", `no answer in ${timeoutMs} ms`) : networkError(error, signal);
      }
      const text = await response.text();
      let json = null;
      try { json = text ? JSON.parse(text) : {}; } catch { /* not JSON: judged by status below */ }
      if (response.status !== 200) throw errorFromJSON(json, codeForHTTPStatus(response.status));
      if (json === null) throw new ConnectError("internal", "the response is not JSON");
      return json;
    } finally {
      clearTimeout(timer);
      signal && signal.removeEventListener("abort", abort);
    }
  }

  // for await (const message of stream(service, method, request, {signal, onOpen})) ...
  // Ends normally on an OK end-of-stream; throws ConnectError otherwise, including when the
  // body ends without an end-of-stream message (the connection was lost: "unavailable").
  // onOpen() runs once the server has accepted the call (status 200), before any message:
  // a quiet stream (an order nothing happens to) is still a live one.
  async function* stream(service, method, request, { signal, onOpen } = {}) {
    let response;
    try {
      response = await fetch(`${root}/${service}/${method}`, {
        method: "POST",
        headers: { ...headers, "content-type": "application/connect+json", "connect-protocol-version": "1" },
        body: envelope(request),
        signal,
      });
    } catch (error) {
      throw networkError(error, signal);
    }
    if (response.status !== 200) {
      let json = null;
      try { json = await response.json(); } catch { /* judged by status */ }
      throw errorFromJSON(json, codeForHTTPStatus(response.status));
    }
    if (onOpen) onOpen();
    try {
      for await (const { flags, data } of envelopes(response.body)) {
        if (flags & COMPRESSED) throw new ConnectError("internal", "compressed message, none was asked for");
        const json = JSON.parse(textDecoder.decode(data));
        if (flags & END_STREAM) {
          if (json.error) throw errorFromJSON(json.error, "unknown");
          return;
        }
        yield json;
      }
    } catch (error) {
      if (error instanceof ConnectError) throw error;
      if (error instanceof SyntaxError) throw new ConnectError("internal", `a message is not JSON: ${error.message}`);
      throw networkError(error, signal);
    }
    throw new ConnectError("unavailable", "the stream ended without an end-of-stream message");
  }

  return { unary, stream };
}

// Exponential backoff with jitter: attempt 0, 1, 2... waits between half and all of
// min(cap, base·2^n), so pages that lost the same server do not all come back in the same
// instant, yet none retries in a tight loop.
export function backoffDelay(attempt, { baseMs = 200, capMs = 2000 } = {}) {
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.min(attempt, 20));
  return ceiling / 2 + Math.random() * ceiling / 2;
}

// Waits `ms`, or less if `signal` aborts.
export function sleep(ms, signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal && signal.addEventListener("abort", () => { clearTimeout(timer); resolve(); }, { once: true });
  });
}

// The API's base URL: ?api=URL for development against servers on another origin (they must
// allow it with --cors-origins); otherwise this page's own origin. Only http(s) URLs count.
export function apiBase() {
  const wanted = new URLSearchParams(location.search).get("api");
  try {
    if (wanted && ["http:", "https:"].includes(new URL(wanted).protocol)) return wanted;
  } catch { /* not a URL: this origin */ }
  return location.origin;
}
