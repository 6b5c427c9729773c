/**
 * The floor of bench:gateway-ws: the least a Node WebSocket relay can do for one Deepgram live
 * stream, in its own process like `voxgate serve`: node's http server and the `ws` package (the same
 * version and socket options as Voxgate, RELAY_SOCKET_OPTIONS), the upstream socket opened
 * before the client's upgrade is accepted, then frames passed both ways as they came (text stays
 * text) and either side's close passed on. No auth, routing, metering or recording. What Voxgate
 * adds over direct minus what this adds is Voxgate's own cost per frame.
 * Usage: `tsx bench/gateway-ws-floor.ts <upstream ws origin> <provider key>`; prints its port.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { WebSocket, WebSocketServer } from "ws";
import { RELAY_SOCKET_OPTIONS } from "../src/gateway/ws/connect.js";

const [origin = "", providerKey = ""] = process.argv.slice(2);
const wss = new WebSocketServer({ ...RELAY_SOCKET_OPTIONS, noServer: true });
const server = createServer((_req, res) => res.writeHead(426).end());
/** 1005/1006/1015 are reported, never sent. */
const sendable = (code: number) => (code === 1005 || code === 1006 || code === 1015 ? 1000 : code);

server.on("upgrade", (req, socket, head) => {
  const path = (req.url ?? "").replace(/^\/(deepgram|openai)\/v1/, "/v1");
  const upstream = new WebSocket(`${origin}${path}`, { ...RELAY_SOCKET_OPTIONS, headers: { authorization: `Token ${providerKey}` } });
  upstream.on("error", () => socket.destroy());
  upstream.once("open", () => {
    wss.handleUpgrade(req, socket, head, (client) => {
      client.on("message", (data, isBinary) => upstream.send(data as Buffer, { binary: isBinary }));
      upstream.on("message", (data, isBinary) => client.send(data as Buffer, { binary: isBinary }));
      client.on("close", (code) => upstream.close(sendable(code)));
      upstream.on("close", (code) => client.close(sendable(code)));
      client.on("error", () => upstream.terminate());
    });
  });
});
server.listen(0, "127.0.0.1", () => process.stdout.write(`${(server.address() as AddressInfo).port}\n`));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
