import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp } from "../support/app.js";
import { pseudoAudio } from "../support/stubs/audio.js";
import { DeepgramStub } from "../support/stubs/deepgram.js";
import { gatewayApp, KEYS_YAML, OPERATOR_KEY, PROVIDER_KEY, type RequestRowView, recordedRows } from "./support.js";
import { type OpenSocket, openWs, opened, refused, settledStream, sum } from "./ws-support.js";

/**
 * Budgets as reservations on streams (gateway.streams.reserve_seconds): a Deepgram stream sending
 * audio 50× faster than real time against a `block` budget worth a little under 3 increments, on one
 * replica and on two replicas sharing one Postgres. Real sockets through real Voxgate apps against
 * the loopback Deepgram stub.
 */
const deepgram = new DeepgramStub();

/** deepgram/nova-3 is $0.0077 a minute: one 15 s increment is $0.001925; the budget is 2.9 of them. */
const INCREMENT = (15 / 60) * 0.0077;
const BUDGET = 2.9 * INCREMENT;

const YAML = () => `${KEYS_YAML}
providers:
  deepgram: { api_key: "${PROVIDER_KEY}", base_url: "${deepgram.url}/v1" }
models:
  stt:
    deepgram/nova-3: { provider: deepgram, model: nova-3 }
projects:
  capped: { daily_budget: ${BUDGET}, budget_action: block }
`;

beforeAll(async () => {
  await deepgram.start();
});
afterAll(async () => {
  await deepgram.stop();
});

const LISTEN = "/deepgram/v1/listen?model=nova-3&encoding=linear16&sample_rate=16000&channels=1";
const HEADERS = { authorization: `Token ${OPERATOR_KEY}`, "x-voxgate-project": "capped" };
const wsUrl = (base: string) => `${base.replace("http://", "ws://")}${LISTEN}`;
/** One second of 16 kHz linear16 audio. */
const SECOND = 32_000;

/** Sends one second of audio every 20 ms (50× real time) until the gateway closes the stream. */
async function feedUntilClosed(s: OpenSocket): Promise<{ code: number; reason: string }> {
  const feed = setInterval(() => {
    if (s.ws.readyState === s.ws.OPEN) s.ws.send(pseudoAudio(SECOND));
  }, 20);
  try {
    return await s.closed;
  } finally {
    clearInterval(feed);
  }
}

const cost = (rows: RequestRowView[]) => sum(rows, (r) => r.cost_usd);

describe("stream budgets as reservations", () => {
  it("one replica: a Deepgram stream at 50× real time ends 1008 budget_exceeded within one increment of the budget; the redial meets 402", async () => {
    const app = await gatewayApp(YAML());
    try {
      const s = opened(await openWs(wsUrl(app.base), { headers: HEADERS }));
      expect(await feedUntilClosed(s)).toEqual({ code: 1008, reason: "budget_exceeded" });
      // Deepgram's own error frame came first (the SDK's `error` event), naming the reason.
      const error = s.received.map(String).find((m) => m.includes('"Error"'));
      expect(JSON.parse(error ?? "{}")).toMatchObject({ type: "Error", message: "budget_exceeded" });

      const rows = await settledStream(app, String(s.headers["x-voxgate-request-id"]));
      // The increments were settled as checkpoint rows while the stream ran; the final row says why it ended.
      expect(rows.length).toBeGreaterThan(1);
      const final = rows.find((r) => r.id === s.headers["x-voxgate-request-id"]);
      expect(final).toMatchObject({ status: "error", error_message: expect.stringContaining("budget_exceeded") });
      const spent = cost(rows);
      expect(spent).toBeGreaterThan(BUDGET - INCREMENT);
      expect(spent).toBeLessThanOrEqual(BUDGET + INCREMENT);
      // Units are what the vendor was sent.
      expect(sum(rows, (r) => r.audio_seconds)).toBeCloseTo(deepgram.truth.at(-1)?.audioSeconds ?? -1, 6);

      const redial = refused(await openWs(wsUrl(app.base), { headers: HEADERS }));
      expect(redial.status).toBe(402);
      expect(redial.headers["x-voxgate-error"]).toBe("budget_exceeded");
    } finally {
      await app.close();
    }
  });

  it("two replicas on one Postgres: both streams end 1008 and the project's recorded spend stays within one increment per replica of the budget", async () => {
    const a = await gatewayApp(YAML());
    const b = await createTestApp({ yaml: YAML(), replicaOf: a });
    const bBase = await b.listen();
    try {
      const [sa, sb] = [opened(await openWs(wsUrl(a.base), { headers: HEADERS })), opened(await openWs(wsUrl(bBase), { headers: HEADERS }))];
      const closes = await Promise.all([feedUntilClosed(sa), feedUntilClosed(sb)]);
      for (const c of closes) expect(c).toEqual({ code: 1008, reason: "budget_exceeded" });
      await settledStream(a, String(sa.headers["x-voxgate-request-id"]));
      await settledStream(b, String(sb.headers["x-voxgate-request-id"]));
      await b.services.gateway.recorder.flush();
      const spent = cost((await recordedRows(a)).filter((r) => r.project === "capped"));
      // The bound: the budget plus one increment per replica (each replica's last grant).
      expect(spent).toBeLessThanOrEqual(BUDGET + 2 * INCREMENT);
      expect(spent).toBeGreaterThan(BUDGET - INCREMENT);
      for (const base of [a.base, bBase]) expect(refused(await openWs(wsUrl(base), { headers: HEADERS })).status).toBe(402);
    } finally {
      await b.close();
      await a.close();
    }
  });
});
