/**
 * The floor of bench:gateway: the least a Node proxy can do for one chat completion, in its own
 * process like `voxgate serve` — node's http server, the request body read, forwarded through an
 * undici Pool (keep-alive, the dispatch API Voxgate uses) with the key swapped, the answer's status,
 * headers and body written back. No auth table, routing, metering or recording. What Voxgate adds
 * over direct minus what this adds is Voxgate's own cost; this is what Node itself costs on this
 * machine. Usage: `tsx bench/gateway-floor.ts <upstream origin> <provider key>`; prints its port.
 */
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { Pool } from "undici";

const [origin = "", providerKey = ""] = process.argv.slice(2);
const pool = new Pool(origin, { connections: 256, keepAliveTimeout: 30_000 });
const DROPPED = new Set(["connection", "keep-alive", "transfer-encoding"]);

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    pool.dispatch(
      {
        method: "POST",
        path: `/v1${(req.url ?? "").replace(/^\/openai\/v1/, "")}`,
        headers: { "content-type": "application/json", authorization: `Bearer ${providerKey}` },
        body: chunks.length === 1 ? chunks[0] : Buffer.concat(chunks),
      },
      {
        onRequestStart() {},
        onResponseStart(_c, status: number, headers: IncomingHttpHeaders) {
          const out: Record<string, string | string[]> = {};
          for (const k in headers) {
            const v = headers[k];
            if (v !== undefined && !DROPPED.has(k)) out[k] = v;
          }
          res.writeHead(status, out);
        },
        onResponseData(_c, chunk: Buffer) {
          res.write(chunk);
        },
        onResponseEnd() {
          res.end();
        },
        onResponseError() {
          if (!res.headersSent) res.writeHead(502);
          res.end();
        },
      },
    );
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => process.stdout.write(`${(server.address() as AddressInfo).port}\n`));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
