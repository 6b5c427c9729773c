import { createServer, type IncomingMessage } from "node:http";
import { connect } from "node:net";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { answerHeaders, BodyTooLarge, readIncoming, relayHeaders } from "../../src/gateway/exchange.js";
import { GATEWAY_SECURITY_HEADERS } from "../../src/http/security-headers.js";

/** What answerHeaders must equal: the three groups assigned into one object in turn, as entries. */
function reference(base: Record<string, string | string[] | undefined>, extra: Record<string, string>, requestId: string, drop: ReadonlySet<string> = new Set()) {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(base)) if (v !== undefined && !drop.has(k)) out[k] = v;
  Object.assign(out, extra, { "x-voxgate-request-id": requestId }, GATEWAY_SECURITY_HEADERS);
  return Object.entries(out).flat();
}

describe("answerHeaders", () => {
  it("lists the same names, values and order as assigning base, extra, the request id and the security headers in turn", () => {
    const cases: [Record<string, string | string[] | undefined>, Record<string, string>][] = [
      [{ "content-type": "application/json", "content-length": "12", date: "x" }, {}],
      [{ "content-type": "text/event-stream", "cache-control": "no-cache", "x-frame-options": "SAMEORIGIN" }, { "x-voxgate-budget-warning": "over" }],
      [{ "x-voxgate-request-id": "forged", "retry-after": "3", vary: ["a", "b"], constructor: "c" }, { "retry-after": "5", "x-voxgate-budget-warning": "w" }],
      [{ a: undefined, b: "1" }, { "cache-control": "private" }],
    ];
    for (const [base, extra] of cases) expect(answerHeaders(base, extra, "rid")).toEqual(reference(base, extra, "rid"));
  });

  it("drops the upstream's connection headers and cookies when relaying", () => {
    const upstream = { "content-type": "application/json", connection: "keep-alive", "keep-alive": "timeout=5", "set-cookie": ["a=1"], "transfer-encoding": "chunked" };
    const drop = new Set(["connection", "keep-alive", "transfer-encoding", "set-cookie", "proxy-authenticate", "trailer", "upgrade"]);
    expect(relayHeaders(upstream, {}, "rid")).toEqual(reference(upstream, {}, "rid", drop));
  });
});

/** One raw HTTP request to a server whose handler reads the body with readIncoming; parts are written `gapMs` apart. */
async function readThrough(parts: string[], gapMs: number, limit = 1024, inListener = false): Promise<string> {
  let seen: (req: IncomingMessage) => void = () => {};
  const got = new Promise<string>((resolve) => {
    seen = (req) => {
      const read = readIncoming(req, limit);
      // A body read whole still lets the request end and close, as the listeners' path does.
      const closed = new Promise((r) => req.once("close", r));
      void Promise.resolve(read).then(
        (b) => void closed.then(() => resolve(`${read instanceof Promise ? "async" : "sync"}:${b.toString()}`)),
        (err: unknown) => resolve(err instanceof BodyTooLarge ? "too large" : String(err)),
      );
    };
  });
  const server = createServer((req, res) => {
    // As the gateway does: in the listener (a static key), or after an await (a vk_ key looked up).
    if (inListener) seen(req);
    else void Promise.resolve().then(() => seen(req));
    void got.then(() => res.end("ok"));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const socket = connect((server.address() as AddressInfo).port, "127.0.0.1");
  try {
    for (const p of parts) {
      socket.write(p);
      await new Promise((r) => setTimeout(r, gapMs));
    }
    return await got;
  } finally {
    socket.destroy();
    await new Promise((r) => server.close(r));
  }
}

describe("readIncoming", () => {
  const head = (len: number) => `POST / HTTP/1.1\r\nhost: x\r\ncontent-length: ${len}\r\n\r\n`;
  it("takes a body that came with the headers at once, and waits for one still arriving", async () => {
    expect(await readThrough([`${head(11)}hello world`], 0)).toBe("sync:hello world");
    expect(await readThrough([`${head(11)}hello`, " world"], 30)).toBe("async:hello world");
    expect(await readThrough([head(0)], 0)).toBe("sync:");
    expect(await readThrough(["POST / HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"], 0)).toBe("async:hello");
  });
  it("read in the request listener, before node pushed the head's packet's body: the same bodies and refusals", async () => {
    expect(await readThrough([`${head(11)}hello world`], 0, 1024, true)).toBe("async:hello world");
    expect(await readThrough([`${head(11)}hello`, " world"], 30, 1024, true)).toBe("async:hello world");
    expect(await readThrough([head(0)], 0, 1024, true)).toBe("sync:");
    expect(await readThrough(["POST / HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"], 0, 1024, true)).toBe("async:hello");
    expect(await readThrough([`${head(11)}hello world`], 0, 5, true)).toBe("too large");
    expect(await readThrough([`${head(11)}hello`, " world"], 30, 5, true)).toBe("too large");
  });
  it("refuses a body over the limit either way", async () => {
    expect(await readThrough([`${head(11)}hello world`], 0, 5)).toBe("too large");
    expect(await readThrough(["POST / HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\nb\r\nhello world\r\n0\r\n\r\n"], 0, 5)).toBe("too large");
  });
});
