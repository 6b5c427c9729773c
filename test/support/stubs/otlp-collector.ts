import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";
import { decodeTraces } from "../../../src/otlp/decode.js";
import { ALL_ATTRIBUTES, encodeExportResponse } from "../../../src/otlp/proto.js";
import type { Attrs, Span } from "../../../src/otlp/spans.js";

/** One export as the collector received it: headers, the raw (un-gzipped) body, and its spans. */
export interface ReceivedExport {
  headers: IncomingHttpHeaders;
  body: Buffer;
  spans: Array<Span & { resource: Attrs }>;
}

/**
 * A real OTLP/HTTP trace collector on loopback: POST /v1/traces, protobuf or JSON, decoded with
 * Voxgate's own receiver decoder (src/otlp/decode.ts) and answered with an empty
 * ExportTraceServiceResponse, as a collector does. `decode: false` only counts (bench:gateway).
 */
export class OtlpCollector {
  readonly exports: ReceivedExport[] = [];
  /** Export requests received (decoded or not). */
  received = 0;
  private server: Server | null = null;
  port = 0;

  constructor(private readonly opts: { decode: boolean } = { decode: true }) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get spans(): Array<Span & { resource: Attrs }> {
    return this.exports.flatMap((e) => e.spans);
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        this.received++;
        if (req.method !== "POST" || req.url !== "/v1/traces") return void res.writeHead(404).end();
        const raw = Buffer.concat(chunks);
        const body = req.headers["content-encoding"] === "gzip" ? gunzipSync(raw) : raw;
        if (this.opts.decode) {
          const decoded = decodeTraces(body, req.headers["content-type"] ?? "", ALL_ATTRIBUTES);
          const spans = decoded.batches.flatMap((b) => b.spans.map((s) => ({ ...s, resource: b.resource })));
          this.exports.push({ headers: req.headers, body, spans });
        }
        res.writeHead(200, { "content-type": "application/x-protobuf" }).end(encodeExportResponse(0, ""));
      });
    });
    await new Promise<void>((r) => this.server?.listen(0, "127.0.0.1", r));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  async close(): Promise<void> {
    const s = this.server;
    if (s) await new Promise<void>((r) => s.close(() => r()));
  }
}
