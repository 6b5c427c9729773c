import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useTestApp } from "../support/app.js";
import { captureLogger } from "../support/log.js";

// A scrape target's password with a raw `@` never reaches the log.
describe("scrape target credentials in logs", () => {
  const auths: string[] = [];
  const exporter = createServer((req, res) => {
    auths.push(req.headers.authorization ?? "");
    res.writeHead(200, { "content-type": "text/plain" }).end("node_load1 0.5\n");
  });
  const captured = captureLogger();
  beforeAll(async () => {
    await new Promise<void>((r) => exporter.listen(0, "127.0.0.1", () => r()));
  });
  afterAll(async () => {
    await new Promise((r) => exporter.close(r));
  });
  useTestApp(() => {
    const port = (exporter.address() as AddressInfo).port;
    const targets = [`host-exporter:n1=http://u2:RawP@ssSecret2@127.0.0.1:${port}/metrics`, "livekit-server:n2=ftp://u3:Other@Secret3/x@h/"].join(",");
    return { yaml: "workers: { node_scrape_interval_seconds: 0.1 }\n", env: { VOXGATE_NODE_SCRAPE_TARGETS: targets }, log: captured.log };
  });

  it("scrapes with the credentials and logs the URL built from its parsed form, password removed", async () => {
    for (let i = 0; i < 100 && auths.length === 0; i++) await new Promise((r) => setTimeout(r, 50));
    // The WHATWG parser takes the last `@` as the end of the credentials: the password is "RawP@ssSecret2".
    expect(auths[0]).toBe(`Basic ${Buffer.from("u2:RawP@ssSecret2").toString("base64")}`);
    const text = captured.lines.join("");
    expect(text).toContain("http://***@127.0.0.1:");
    for (const secret of ["ssSecret2", "RawP", "u2:", "Secret3", "Other@", "u3:"]) expect(text, secret).not.toContain(secret);
  });
});
