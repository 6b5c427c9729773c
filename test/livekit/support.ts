import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { connect, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer as createTlsServer } from "node:tls";
import type { TestApp } from "../support/app.js";
import { type RequestRowView, recordedRows } from "../gateway/support.js";

/** Polls the recorded rows until `pred` finds enough of them (the gateway records when a stream ends). */
export async function rowsWhere(app: TestApp, pred: (r: RequestRowView) => boolean, atLeast = 1): Promise<RequestRowView[]> {
  for (;;) {
    const rows = (await recordedRows(app)).filter(pred);
    if (rows.length >= atLeast) return rows;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * A TLS terminator on loopback in front of a plain server: Cartesia's plugin speaks HTTPS to its
 * base URL's host whatever the scheme, as a TLS proxy in front of Voxgate would take it. The
 * certificate is made for this run (openssl) and trusted through the returned PEM.
 */
export async function tlsTerminator(targetPort: number): Promise<{ port: number; ca: string; close(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), "voxgate-tls-"));
  const key = join(dir, "key.pem");
  const cert = join(dir, "cert.pem");
  execFileSync(
    "openssl",
    ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", key, "-out", cert],
    { stdio: "ignore" },
  );
  const pem = readFileSync(cert, "utf8");
  const server: Server = createTlsServer({ key: readFileSync(key), cert: pem }, (tlsSocket) => {
    const upstream = connect(targetPort, "127.0.0.1");
    tlsSocket.pipe(upstream).pipe(tlsSocket);
    tlsSocket.on("error", () => upstream.destroy());
    upstream.on("error", () => tlsSocket.destroy());
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    port,
    ca: pem,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
      }),
  };
}
