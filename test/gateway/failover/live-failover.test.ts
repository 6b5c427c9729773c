import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { DeepgramLiveStub, type LiveLegScript, wordFrame } from "../../support/stubs/deepgram-live.js";
import { gatewayApp, KEYS_YAML, OPERATOR_KEY, PROVIDER_KEY } from "../support.js";
import { opened, openWs } from "../ws-support.js";
import { finalWords, legSeconds, sessionRows, sleep, talk } from "./live-support.js";

/**
 * Live STT failover on Deepgram's `listen` WebSocket, driven by @deepgram/sdk's live client against
 * two scripted Deepgram vendors (primary, then the fallbacks.stt candidate): whatever way the primary
 * fails mid-stream, the client sees one stream, every scripted word once as a final, and each leg is
 * recorded with the audio its vendor was sent.
 */
const primary = new DeepgramLiveStub();
const backup = new DeepgramLiveStub();
const WORDS = 12;

/** stall_ms only as short as the stall case needs: elsewhere a loaded machine's pauses must not read as a stalled vendor. */
const YAML = (stallMs = 2_000) => `${KEYS_YAML}
providers:
  deepgram: { api_key: "${PROVIDER_KEY}", base_url: "${primary.url}/v1" }
  deepgram-b: { type: deepgram, api_key: "${PROVIDER_KEY}", base_url: "${backup.url}/v1" }
models:
  stt:
    deepgram/nova-3: { provider: deepgram, model: nova-3 }
    deepgram-b/nova-3: { provider: deepgram-b, model: nova-3 }
fallbacks:
  stt: [deepgram/nova-3, deepgram-b/nova-3]
projects:
  calls: {}
gateway:
  streams: { stall_ms: ${stallMs} }
`;

beforeAll(async () => {
  await Promise.all([primary.start(), backup.start()]);
});
afterAll(async () => {
  await Promise.all([primary.stop(), backup.stop()]);
});
beforeEach(() => {
  primary.reset();
  backup.reset();
});

describe("live STT failover (Deepgram listen)", () => {
  const cases: Array<[string, LiveLegScript, RegExp, boolean?]> = [
    ["the vendor's connection drops", { how: "drop", afterFrames: 5 }, /upstream connection lost/],
    ["the vendor closes 1011", { how: "close", afterFrames: 4 }, /1011/],
    ["the vendor stalls while audio keeps arriving", { how: "stall", afterFrames: 5 }, /sent nothing for 300 ms/],
    ["the vendor refuses the stream after the upgrade (error frame)", { how: "error", afterFrames: 0 }, /quota exceeded/],
    // The last two words and the CloseStream go unanswered: the next vendor hears both, then the CloseStream.
    ["the vendor stalls on the last words and the client's CloseStream", { how: "stall", afterFrames: WORDS - 1 }, /sent nothing for 300 ms/, false],
  ];
  for (const [name, script, reason, untilBackup = true] of cases) {
    it(`${name}: one stream, every word once, each leg recorded with what its vendor was sent`, async () => {
      primary.legs = [script];
      const app = await gatewayApp(YAML(script.how === "stall" ? 300 : 2_000));
      try {
        const session = `call-${script.how}-${script.afterFrames}`;
        const seen = await talk(app.base, session, { words: WORDS, reached: () => !untilBackup || backup.connections.length > 0 });
        expect(seen.opens).toBe(1);
        expect(seen.closes).toEqual([1000]);
        expect(finalWords(seen.finals)).toBe(seen.words);
        // The finals stay in order on the client's timeline across the seam.
        expect([...seen.starts].sort((a, b) => a - b)).toEqual(seen.starts);
        expect(primary.connections).toHaveLength(1);
        expect(backup.connections).toHaveLength(1);

        const rows = await sessionRows(app, session, 2);
        const failed = rows.find((r) => r.model_id === "deepgram/nova-3" && r.metadata?.checkpoint === undefined);
        const next = rows.find((r) => r.model_id === "deepgram-b/nova-3" && r.metadata?.checkpoint === undefined);
        expect(failed).toMatchObject({ status: "error", provider: "deepgram" });
        expect(failed?.error_message).toMatch(reason);
        expect(next).toMatchObject({ status: "fallback", fallback_from: "deepgram/nova-3", provider: "deepgram-b" });
        expect(next?.metadata).toMatchObject({ stream_id: failed?.id });
        expect(typeof next?.metadata?.failover_gap_ms).toBe("number");
        // Each leg's audio is what its vendor heard (the replay is billed by the vendor that heard it).
        expect(legSeconds(rows, "deepgram/nova-3")).toBeCloseTo(primary.truth[0]?.audioSeconds ?? -1, 6);
        expect(legSeconds(rows, "deepgram-b/nova-3")).toBeCloseTo(backup.truth[0]?.audioSeconds ?? -1, 6);
        // The replay starts right after the last final the client got (the stub finalizes pairs of
        // frames): the backup heard that word and every later one, nothing earlier.
        const replayFrom = script.afterFrames === 0 ? 0 : Math.floor((script.afterFrames - 1) / 2) * 2;
        expect(backup.truth[0]?.audioSeconds).toBeCloseTo((seen.words.split(" ").length - replayFrom) * 0.1, 6);
        // Together the vendors heard every second of the call, the replayed part twice.
        expect(legSeconds(rows, "deepgram/nova-3") + legSeconds(rows, "deepgram-b/nova-3")).toBeGreaterThanOrEqual(seen.words.split(" ").length * 0.1 - 1e-9);

        const metrics = await (await app.call("GET", "/v1/metrics", { key: OPERATOR_KEY })).text();
        expect(metrics).toContain('voxgate_gateway_stream_failovers_total{route="/deepgram/v1/listen",from="deepgram",to="deepgram-b"} 1');
      } finally {
        await app.close();
      }
    });
  }

  it("no candidate left: the client's socket closes 1011, as without failover", async () => {
    primary.legs = [{ how: "drop", afterFrames: 2 }];
    backup.legs = [{ how: "drop", afterFrames: 1 }];
    const app = await gatewayApp(YAML());
    try {
      const s = opened(await openWs(`${app.base.replace("http://", "ws://")}/p/calls/s/call-none/deepgram/v1/listen?model=deepgram/nova-3&encoding=linear16&sample_rate=16000`, { headers: { authorization: `Token ${OPERATOR_KEY}` } }));
      let closed: { code: number; reason: string } | null = null;
      void s.closed.then((c) => {
        closed = c;
      });
      for (let w = 0; w < WORDS && closed === null; w++) {
        s.ws.send(wordFrame(w));
        await sleep(25);
      }
      expect(await s.closed).toMatchObject({ code: 1011 });
      const rows = await sessionRows(app, "call-none", 2);
      expect(rows.filter((r) => r.metadata?.checkpoint === undefined).map((r) => [r.model_id, r.status])).toEqual([
        ["deepgram/nova-3", "error"],
        ["deepgram-b/nova-3", "error"],
      ]);
    } finally {
      await app.close();
    }
  });

  it("a stream with no fallback candidate relays as before (no failover machinery)", async () => {
    primary.legs = [{ how: "drop", afterFrames: 2 }];
    const app = await gatewayApp(YAML().replace("fallbacks:\n  stt: [deepgram/nova-3, deepgram-b/nova-3]", "fallbacks:\n  stt: []"));
    try {
      const s = opened(await openWs(`${app.base.replace("http://", "ws://")}/deepgram/v1/listen?model=deepgram/nova-3&encoding=linear16&sample_rate=16000`, { headers: { authorization: `Token ${OPERATOR_KEY}` } }));
      s.ws.send(wordFrame(0));
      s.ws.send(wordFrame(1));
      expect(await s.closed).toMatchObject({ code: 1011, reason: "upstream connection lost" });
      expect(backup.connections).toHaveLength(0);
    } finally {
      await app.close();
    }
  });
});
