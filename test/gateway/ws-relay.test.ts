import type { AddressInfo } from "node:net";
import { guardedLookup } from "../../src/manage/url-policy.js";
import { type ServerType, serve, upgradeWebSocket } from "@hono/node-server";
import { Hono } from "hono";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { deepgramAudioFormat } from "../../src/gateway/audio/stt-units.js";
import { deepgramListenMeter } from "../../src/gateway/audio/stream-meters.js";
import type { Units } from "../../src/gateway/protocol.js";
import { type RelaySummary, relay } from "../../src/gateway/ws/relay.js";
import { connectFailure, connectFirst, createWebSocketServer, holdUpstream, upgradeRefusal } from "../../src/gateway/ws/upgrade.js";
import { DomainError } from "../../src/errors.js";
import { pseudoAudio, sha256 } from "../support/stubs/audio.js";
import { DeepgramStub } from "../support/stubs/deepgram.js";

/**
 * The relay plumbing on its own: a minimal Hono app on node-server v2's upgradeWebSocket in front of
 * the Deepgram stub, with no gateway policy. The gateway routes (test/gateway/audio-*.test.ts) use it.
 */
const stub = new DeepgramStub();
let server: ServerType;
let base = "";
const ends: RelaySummary[] = [];
const checkpoints: Units[] = [];
let onEnd: (s: RelaySummary) => void = () => {};

beforeAll(async () => {
  await stub.start();
  const app = new Hono();
  app.get("/refuse", () => upgradeRefusal(new DomainError("budget_exceeded", "over budget"), { "retry-after": "60" }));
  app.get(
    "/v1/listen",
    upgradeWebSocket(async (c) => {
      const url = new URL(c.req.url);
      const format = deepgramAudioFormat(url.searchParams);
      const outcome = await connectFirst([stub.wsUrl, "ws://127.0.0.1:1"].reverse(), (base) => ({
        url: `${base}/v1/listen${url.search}`,
        headers: { authorization: "Token provider-key" },
        timeoutMs: 2000,
        lookup: guardedLookup(true),
      }));
      if (!outcome.opened) {
        const last = outcome.failures.at(-1);
        throw last ? connectFailure(last.error) : new Error("no target");
      }
      const held = holdUpstream(outcome.opened.upstream);
      return {
        onOpen(_evt, ws) {
          relay(ws.raw as Parameters<typeof relay>[0], held.take(), {
            meter: deepgramListenMeter(format),
            checkpointMs: 20,
            onCheckpoint: (u) => checkpoints.push(u),
            onEnd: (s) => {
              ends.push(s);
              onEnd(s);
            },
          });
        },
      };
    }),
  );
  app.onError((err) => (err instanceof DomainError ? upgradeRefusal(err) : new Response(null, { status: 500 })));
  server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1", websocket: { server: createWebSocketServer() } }, () => resolve(s));
  });
  base = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
  await stub.stop();
});

beforeEach(() => {
  stub.reset();
  ends.length = 0;
  checkpoints.length = 0;
});

function open(path: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${base}${path}`);
    ws.once("open", () => resolve(ws));
    ws.once("unexpected-response", (_req, res) => reject(Object.assign(new Error(`status ${res.statusCode}`), { status: res.statusCode, headers: res.headers })));
    ws.once("error", reject);
  });
}

const closed = (ws: WebSocket) => new Promise<{ code: number; reason: string }>((r) => ws.once("close", (code, reason) => r({ code, reason: reason.toString() })));
const ended = () => new Promise<RelaySummary>((r) => (onEnd = r));

describe("WebSocket relay", () => {
  it("passes audio frames through unchanged both ways and meters them from the wire", async () => {
    const done = ended();
    const ws = await open("/v1/listen?encoding=linear16&sample_rate=16000&channels=1");
    const received: string[] = [];
    ws.on("message", (d, isBinary) => {
      expect(isBinary).toBe(false);
      received.push(d.toString());
    });
    const frames = Array.from({ length: 25 }, (_, i) => pseudoAudio(3200, i + 1));
    for (const f of frames) ws.send(f);
    ws.send(JSON.stringify({ type: "CloseStream" }));
    const close = await closed(ws);
    const summary = await done;

    const stubFrames = stub.seen[0]?.frames ?? [];
    const sentBinary = stubFrames.filter((f): f is Uint8Array => typeof f !== "string");
    expect(sha256(Buffer.concat(sentBinary))).toBe(sha256(Buffer.concat(frames)));
    expect(stubFrames.at(-1)).toBe(JSON.stringify({ type: "CloseStream" }));
    expect(received.filter((m) => m.includes('"Results"'))).toHaveLength(25);
    expect(JSON.parse(received.at(-1) ?? "{}")).toMatchObject({ type: "Metadata", duration: 2.5 });
    expect(close.code).toBe(1000);
    expect(summary).toMatchObject({ endedBy: "upstream", closeCode: 1000, framesIn: 26, framesOut: 26, units: { audioSeconds: 2.5 } });
    expect(summary.ttfbMs).not.toBeNull();
    expect(summary.ttfbMs ?? -1).toBeLessThanOrEqual(summary.totalMs);
    // The relay swapped nothing in: the stub saw the provider's key only.
    expect(stub.seen[0]?.headers.authorization).toBe("Token provider-key");
  });

  it("closes the vendor stream when the client leaves, passing its close code", async () => {
    const done = ended();
    const ws = await open("/v1/listen?encoding=linear16&sample_rate=16000");
    ws.send(pseudoAudio(3200));
    await new Promise((r) => ws.once("message", r));
    const stubSide = [...stub.openSockets][0];
    expect(stubSide).toBeDefined();
    const stubClosed = new Promise<number>((r) => stubSide?.once("close", (code) => r(code)));
    ws.close(4000, "agent done");
    expect(await stubClosed).toBe(4000);
    const summary = await done;
    expect(summary.endedBy).toBe("client");
    // Cut before Deepgram's Metadata: the bytes of linear16 audio are the units.
    expect(summary.units.audioSeconds).toBe(0.1);
  });

  it("gives the client a 1011 when the vendor drops mid-stream, and the vendor's own close codes otherwise", async () => {
    stub.reset({ dropAfter: 2 });
    let done = ended();
    let ws = await open("/v1/listen?encoding=linear16&sample_rate=16000");
    for (let i = 0; i < 5; i++) ws.send(pseudoAudio(320, i + 1));
    expect((await closed(ws)).code).toBe(1011);
    expect((await done).endedBy).toBe("upstream_error");

    stub.reset({ close: { code: 4008, reason: "DATA-0000", afterFrames: 1 } });
    done = ended();
    ws = await open("/v1/listen?encoding=linear16&sample_rate=16000");
    ws.send(pseudoAudio(320));
    expect(await closed(ws)).toEqual({ code: 4008, reason: "DATA-0000" });
    expect((await done).endedBy).toBe("upstream");
  });

  it("passes a text frame on unchecked: the vendor's 1007 for invalid UTF-8 comes back to the client", async () => {
    const done = ended();
    const ws = await open("/v1/listen?encoding=linear16&sample_rate=16000");
    ws.send(Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), { binary: false });
    expect((await closed(ws)).code).toBe(1007);
    expect(await done).toMatchObject({ endedBy: "upstream", closeCode: 1007 });
  });

  it("answers a failed vendor handshake as HTTP before the upgrade, after trying the next target", async () => {
    stub.reset({ statuses: [429], retryAfter: "7" });
    const err = await open("/v1/listen").then(
      () => null,
      (e: { status?: number; headers?: Record<string, string> }) => e,
    );
    expect(err?.status).toBe(429);
    expect(err?.headers?.["x-voxgate-error"]).toBe("too_many_requests");
    // The first target (a closed port) failed over to the stub, which refused with its 429.
    expect(stub.seen).toHaveLength(1);

    stub.reset({ statuses: [503] });
    const bad = await open("/v1/listen").then(
      () => null,
      (e: { status?: number }) => e,
    );
    expect(bad?.status).toBe(502);

    const budget = await open("/refuse").then(
      () => null,
      (e: { status?: number; headers?: Record<string, string> }) => e,
    );
    expect(budget?.status).toBe(429);
    expect(budget?.headers?.["x-voxgate-error"]).toBe("budget_exceeded");
    expect(budget?.headers?.["retry-after"]).toBe("60");
  });

  it("writes usage checkpoints while a stream runs", async () => {
    const ws = await open("/v1/listen?encoding=linear16&sample_rate=16000");
    for (let i = 0; i < 10; i++) {
      ws.send(pseudoAudio(3200, i + 1));
      await new Promise((r) => setTimeout(r, 15));
    }
    while (checkpoints.length < 2) await new Promise((r) => setTimeout(r, 10));
    ws.close(1000);
    await closed(ws);
    const seconds = checkpoints.map((u) => u.audioSeconds ?? 0);
    expect(seconds).toEqual([...seconds].sort((a, b) => a - b));
    expect(new Set(seconds).size).toBe(seconds.length);
  });
});
