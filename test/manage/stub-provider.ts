import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface StubHit {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
}

/**
 * A real loopback HTTP server standing in for a provider. Paths under /ok answer 200, /denied 401,
 * /echo 500 with the Authorization header in the body, /redirect 302 to `redirectTo`, /hang never.
 */
export async function startStubProvider(redirectTo = "http://169.254.169.254/latest/meta-data/") {
  const hits: StubHit[] = [];
  const server: Server = createServer((req, res) => {
    hits.push({ method: req.method ?? "", path: req.url ?? "", headers: req.headers });
    const path = req.url ?? "";
    if (path.startsWith("/hang")) return;
    if (path.startsWith("/ok")) return void res.writeHead(200, { "content-type": "application/json" }).end('{"data":[]}');
    if (path.startsWith("/denied")) return void res.writeHead(401).end('{"error":"bad key"}');
    if (path.startsWith("/echo")) return void res.writeHead(500).end(`bad key ${req.headers.authorization ?? ""}`);
    if (path.startsWith("/redirect")) return void res.writeHead(302, { location: redirectTo }).end();
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const port = (server.address() as AddressInfo).port;
  return {
    hits,
    url: (path: string) => `http://127.0.0.1:${port}${path}`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
