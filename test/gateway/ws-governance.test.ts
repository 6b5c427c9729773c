import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createTestApp } from "../support/app.js";
import { pseudoAudio } from "../support/stubs/audio.js";
import { DeepgramStub } from "../support/stubs/deepgram.js";
import type { StubServer } from "../support/stubs/vendor-stub.js";
import { ACME_KEY, GLOBEX_KEY, gatewayApp, KEYS_YAML, OPERATOR_KEY, PROVIDER_KEY } from "./support.js";
import { type OpenSocket, openWs, opened, refused, settledStream, waitFor } from "./ws-support.js";

/**
 * Streams as governed sessions (gateway.streams): idle timeout, maximum duration, the per-key cap
 * before any vendor is contacted, backpressure on a side that stops reading, a revoked key closing
 * its open streams on every replica, and the open-streams gauge. Real sockets through a real Voxgate
 * against the loopback Deepgram stub; the limits are set small so each test ends on its own.
 */
const deepgram = new DeepgramStub();
const stubs: StubServer[] = [deepgram];

const YAML = (streams: string) => `${KEYS_YAML}
providers:
  deepgram: { api_key: "${PROVIDER_KEY}", base_url: "${deepgram.url}/v1" }
models:
  stt:
    deepgram/nova-3: { provider: deepgram, model: nova-3 }
projects:
  gov: {}
gateway:
  streams: { ${streams} }
`;

beforeAll(async () => {
  await Promise.all(stubs.map((s) => s.start()));
});
afterAll(async () => {
  await Promise.all(stubs.map((s) => s.stop()));
});
beforeEach(() => {
  for (const s of stubs) s.reset();
});

const LISTEN = "/deepgram/v1/listen?model=nova-3&encoding=linear16&sample_rate=16000&channels=1";
const token = (key = OPERATOR_KEY) => ({ authorization: `Token ${key}`, "x-voxgate-project": "gov" });
const wsBase = (base: string) => base.replace("http://", "ws://");
const requestIdOf = (s: OpenSocket) => String(s.headers["x-voxgate-request-id"]);

async function withApp<T>(streams: string, run: (app: Awaited<ReturnType<typeof gatewayApp>>) => Promise<T>): Promise<T> {
  const app = await gatewayApp(YAML(streams));
  try {
    return await run(app);
  } finally {
    await app.close();
  }
}

describe("limits", () => {
  it("closes a stream with no frame in either direction for idle_timeout_s: 1000 `idle timeout`, recorded", async () => {
    await withApp("idle_timeout_s: 0.3", async (app) => {
      const s = opened(await openWs(`${wsBase(app.base)}${LISTEN}`, { headers: token() }));
      s.ws.send(pseudoAudio(3200));
      await waitFor(s, (m) => String(m).includes("Results"));
      expect(await s.closed).toEqual({ code: 1000, reason: "idle timeout" });
      const [row] = await settledStream(app, requestIdOf(s));
      expect(row).toMatchObject({ status: "success", audio_seconds: 0.1 });
      expect(row?.metadata).toMatchObject({ ended_by: "idle timeout" });
    });
  });

  it("closes a busy stream at max_duration_s: 1000 `max duration`", async () => {
    await withApp("max_duration_s: 0.5", async (app) => {
      const s = opened(await openWs(`${wsBase(app.base)}${LISTEN}`, { headers: token() }));
      const feed = setInterval(() => s.ws.readyState === s.ws.OPEN && s.ws.send(pseudoAudio(320)), 20);
      try {
        expect(await s.closed).toEqual({ code: 1000, reason: "max duration" });
      } finally {
        clearInterval(feed);
      }
      const [row] = await settledStream(app, requestIdOf(s));
      expect(row?.metadata).toMatchObject({ ended_by: "max duration" });
    });
  });

  it("refuses the key's max_per_key+1-th stream with 429 too_many_streams before any vendor is contacted", async () => {
    await withApp("max_per_key: 2", async (app) => {
      const a = opened(await openWs(`${wsBase(app.base)}${LISTEN}`, { headers: token(ACME_KEY) }));
      const b = opened(await openWs(`${wsBase(app.base)}${LISTEN}`, { headers: token(ACME_KEY) }));
      const third = refused(await openWs(`${wsBase(app.base)}${LISTEN}`, { headers: token(ACME_KEY) }));
      expect(third.status).toBe(429);
      expect(third.headers["x-voxgate-error"]).toBe("too_many_streams");
      expect(deepgram.seen).toHaveLength(2);
      // Another key is not counted against this one.
      const other = opened(await openWs(`${wsBase(app.base)}${LISTEN}`, { headers: token(GLOBEX_KEY) }));
      // A closed stream frees its slot.
      a.ws.close(1000);
      await a.closed;
      let again = await openWs(`${wsBase(app.base)}${LISTEN}`, { headers: token(ACME_KEY) });
      while ("status" in again) {
        await new Promise((r) => setTimeout(r, 20));
        again = await openWs(`${wsBase(app.base)}${LISTEN}`, { headers: token(ACME_KEY) });
      }
      for (const s of [b, other, again]) s.ws.close(1000);
    });
  });

  it("pauses a vendor whose client stopped reading (bounded memory), then closes 1013 after the stall timeout", async () => {
    const flood = 64 * 1024 * 1024;
    await withApp("max_buffered_bytes: 262144, stall_timeout_s: 0.5", async (app) => {
      const s = opened(await openWs(`${wsBase(app.base)}${LISTEN}`, { headers: token() }));
      let received = 0;
      s.ws.on("message", (d: Buffer) => {
        received += d.length;
      });
      // The client stops reading its socket; the vendor sends far more than any buffer holds.
      s.ws.pause();
      s.ws.send(JSON.stringify({ type: "Flood", bytes: flood }));
      const vendorSide = await waitForSocket(deepgram);
      // Backpressure: the gateway stops reading the vendor, whose own send queue then grows.
      while (vendorSide.bufferedAmount < 8 * 1024 * 1024) await new Promise((r) => setTimeout(r, 20));
      // Past the stall timeout the stream ends (recorded as error); the client, reading again, gets 1013.
      const [row] = await settledStream(app, requestIdOf(s));
      expect(row).toMatchObject({ status: "error", error_message: "relay buffer full: a side stopped reading" });
      s.ws.resume();
      expect((await s.closed).code).toBe(1013);
      expect(received).toBeLessThan(flood / 2);
    });
  });
});

/** The stub's side of the newest vendor socket. */
async function waitForSocket(stub: StubServer) {
  for (;;) {
    const sock = [...stub.openSockets].at(-1);
    if (sock) return sock;
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe("revocation", () => {
  it("a vk_ key revoked on one replica closes its open stream on the other with 1008 `key revoked`; redials meet 401", async () => {
    const a = await gatewayApp(YAML(""));
    const b = await createTestApp({ yaml: YAML(""), replicaOf: a });
    const bBase = await b.listen();
    try {
      const minted = (await (await a.call("POST", "/v1/api-keys", { key: OPERATOR_KEY, body: { name: "agent", tenant_id: "acme", scopes: ["infer"] } })).json()) as { plaintext: string; id: string };
      const headers = { authorization: `Token ${minted.plaintext}`, "x-voxgate-project": "gov" };
      const s = opened(await openWs(`${wsBase(bBase)}${LISTEN}`, { headers }));
      s.ws.send(pseudoAudio(16_000)); // 0.5 s
      await waitFor(s, (m) => String(m).includes("Results"));
      expect((await a.call("DELETE", `/v1/api-keys/${minted.id}`, { key: OPERATOR_KEY })).status).toBe(204);
      expect(await s.closed).toEqual({ code: 1008, reason: "key revoked" });
      const [row] = await settledStream(b, requestIdOf(s));
      expect(row).toMatchObject({ audio_seconds: 0.5, tenant_id: "acme" });
      expect(row?.metadata).toMatchObject({ ended_by: "key revoked" });
      const redial = refused(await openWs(`${wsBase(bBase)}${LISTEN}`, { headers }));
      expect(redial.status).toBe(401);
    } finally {
      await b.close();
      await a.close();
    }
  });
});

describe("open streams gauge", () => {
  it("/v1/metrics counts open streams per tenant, never per key, and a tenant sees only its own", async () => {
    await withApp("", async (app) => {
      const open = [
        opened(await openWs(`${wsBase(app.base)}${LISTEN}`, { headers: token(ACME_KEY) })),
        opened(await openWs(`${wsBase(app.base)}${LISTEN}`, { headers: token(ACME_KEY) })),
        opened(await openWs(`${wsBase(app.base)}${LISTEN}`, { headers: token(GLOBEX_KEY) })),
      ];
      const operator = await (await app.call("GET", "/v1/metrics", { key: OPERATOR_KEY })).text();
      expect(operator).toContain('voxgate_gateway_open_streams{tenant="acme"} 2');
      expect(operator).toContain('voxgate_gateway_open_streams{tenant="globex"} 1');
      for (const k of [ACME_KEY, GLOBEX_KEY, OPERATOR_KEY]) expect(operator).not.toContain(k);
      const acme = await (await app.call("GET", "/v1/metrics", { key: ACME_KEY })).text();
      expect(acme).toContain('voxgate_gateway_open_streams{tenant="acme"} 2');
      expect(acme).not.toContain("globex");
      for (const s of open) s.ws.close(1000);
      await Promise.all(open.map((s) => s.closed));
      let after = "";
      do after = await (await app.call("GET", "/v1/metrics", { key: OPERATOR_KEY })).text();
      while (after.includes('voxgate_gateway_open_streams{tenant="acme"}'));
    });
  });
});
