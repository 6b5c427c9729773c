import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ACME_KEY, KEYS_YAML, OPERATOR_KEY, PROVIDER_KEY, recordedRows } from "../gateway/support.js";
import { openWs, opened, refused, waitFor } from "../gateway/ws-support.js";
import { useTestApp } from "../support/app.js";
import { captureLogger } from "../support/log.js";
import { DeepgramStub } from "../support/stubs/deepgram.js";
import { ElevenLabsStub } from "../support/stubs/elevenlabs.js";

/**
 * The WebSocket relays, attacked over real sockets against loopback vendors that record every byte:
 * a managed provider whose host name resolves to a blocked address (DNS re-pointed after the
 * base_url was accepted) is refused at connect time as on HTTP, and its stored key never leaves;
 * key-carrying fields of ElevenLabs' messages never reach the vendor; a failed connect tells the
 * tenant no internal address (the operator log has it).
 */
const deepgram = new DeepgramStub();
const elevenlabs = new ElevenLabsStub();
const REBIND_KEY = "dg-managed-provider-key-0123456789";
/** A loopback port nothing listens on (the stub's, after it stopped). */
let deadPort = 0;
beforeAll(async () => {
  await Promise.all([deepgram.start(), elevenlabs.start()]);
  // stream-input: the single-voice protocol whose first message may carry xi_api_key / authorization.
  elevenlabs.ws("/v1/text-to-speech/:voice/stream-input", (ws) => {
    ws.onMessage(() => void ws.send(JSON.stringify({ audio: "AAAA", isFinal: null })));
  });
  const dead = new DeepgramStub();
  await dead.start();
  deadPort = Number(new URL(dead.url).port);
  await dead.stop();
});
afterAll(async () => {
  await Promise.all([deepgram.stop(), elevenlabs.stop()]);
});
const log = captureLogger("warn");
const app = useTestApp(() => ({
  listen: true,
  log: log.log,
  yaml: `${KEYS_YAML}
providers:
  elevenlabs: { api_key: "${PROVIDER_KEY}", base_url: "${elevenlabs.url}/v1" }
  deadvendor: { type: deepgram, api_key: "${PROVIDER_KEY}", base_url: "http://127.0.0.1:${deadPort}/v1" }
models:
  tts:
    elevenlabs/eleven_flash_v2_5: { provider: elevenlabs, model: eleven_flash_v2_5 }
  stt:
    deadvendor/nova-3: { provider: deadvendor, model: nova-3 }
`,
}));
const ws = () => app.base.replace(/^http/, "ws");

describe("WebSocket relays: the connect-time address check", () => {
  it("a managed provider whose name resolves to loopback is refused on WebSocket as on HTTP; its key never leaves", async () => {
    const created = await app.call("POST", "/v1/providers", { key: OPERATOR_KEY, body: { provider_id: "rebind", provider_type: "deepgram", api_key: REBIND_KEY, base_url: "https://dg.rebind.example/v1" } });
    expect(created.status, await created.clone().text()).toBe(200);
    const model = await app.call("POST", "/v1/models", { key: OPERATOR_KEY, body: { modality: "stt", provider_id: "rebind", model_name: "nova-3" } });
    expect(model.status).toBe(200);
    // The name now resolves to 127.0.0.1 (DNS re-pointed after the base_url was accepted): here, localhost.
    await app.services.database.db.execute(sql`UPDATE providers SET base_url = ${`${deepgram.url.replace("127.0.0.1", "localhost")}/v1`} WHERE provider_id = 'rebind'`);
    await app.services.gateway.refresh();
    deepgram.reset();

    const http = await fetch(`${app.base}/deepgram/v1/listen?model=rebind/nova-3`, { method: "POST", headers: { authorization: `Token ${OPERATOR_KEY}`, "content-type": "audio/wav" }, body: new Uint8Array(64) });
    expect(http.status).toBe(502);
    const s = refused(await openWs(`${ws()}/deepgram/v1/listen?model=rebind/nova-3&encoding=linear16&sample_rate=16000`, { headers: { authorization: `Token ${OPERATOR_KEY}` } }));
    expect(s.status).toBe(502);
    expect(deepgram.seen).toHaveLength(0);
  });
});

describe("WebSocket relays: key-carrying message fields", () => {
  it("ElevenLabs stream-input: xi_api_key and authorization in the first message never reach the vendor", async () => {
    elevenlabs.reset();
    const s = opened(await openWs(`${ws()}/elevenlabs/v1/text-to-speech/voice1/stream-input?model_id=eleven_flash_v2_5`, { headers: { "xi-api-key": OPERATOR_KEY } }));
    s.ws.send(JSON.stringify({ text: " ", xi_api_key: ACME_KEY, authorization: `Bearer ${ACME_KEY}`, voice_settings: { stability: 0.5 } }));
    s.ws.send(JSON.stringify({ text: "hello there", try_trigger_generation: true }));
    await waitFor(s, (m) => typeof m === "string" && m.includes("audio"));
    s.ws.close();
    await s.closed;
    const seen = elevenlabs.seen.at(-1);
    expect(seen?.frames.length).toBeGreaterThanOrEqual(2);
    const all = JSON.stringify(seen);
    expect(all).not.toContain(ACME_KEY);
    expect(all).not.toContain(OPERATOR_KEY);
    expect(all).not.toContain("xi_api_key");
    const first = JSON.parse(String(seen?.frames[0]));
    expect(first).toEqual({ text: " ", voice_settings: { stability: 0.5 } });
    expect(seen?.headers["xi-api-key"]).toBe(PROVIDER_KEY);
  });
});

describe("WebSocket relays: failed connects", () => {
  it("the tenant's row and answer name no internal address; the operator log does", async () => {
    const s = refused(await openWs(`${ws()}/deepgram/v1/listen?model=deadvendor/nova-3&encoding=linear16&sample_rate=16000`, { headers: { authorization: `Token ${ACME_KEY}` } }));
    expect(s.status).toBe(502);
    expect(JSON.stringify(s.headers)).not.toContain(String(deadPort));
    const row = (await recordedRows(app)).find((r) => r.model_id === "deadvendor/nova-3");
    expect(row?.status).toBe("error");
    expect(row?.error_message).toMatch(/upstream not reachable \(ECONNREFUSED\)/);
    expect(row?.error_message).not.toContain("127.0.0.1");
    expect(row?.error_message).not.toContain(String(deadPort));
    const tenantView = await app.call("GET", "/v1/logs?limit=50", { key: ACME_KEY });
    expect(await tenantView.text()).not.toContain(`:${deadPort}`);
    expect(log.lines.join("")).toContain(`127.0.0.1:${deadPort}`);
  });
});
