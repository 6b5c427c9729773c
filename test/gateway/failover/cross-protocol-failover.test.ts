import { initializeLogger, stt as lkstt } from "@livekit/agents";
import * as deepgramPlugin from "@livekit/agents-plugin-deepgram";
import * as openaiPlugin from "@livekit/agents-plugin-openai";
import { AudioFrame } from "@livekit/rtc-node";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { DeepgramLiveStub, type LiveLegScript, wordFrame } from "../../support/stubs/deepgram-live.js";
import { OpenAITranscriptionLiveStub, type TranscriptionLegScript } from "../../support/stubs/openai-transcription-live.js";
import { gatewayApp, KEYS_YAML, OPERATOR_KEY, PROVIDER_KEY } from "../support.js";
import { opened, openWs } from "../ws-support.js";
import { finalWords, legSeconds, sessionRows, sleep, talk } from "./live-support.js";

/**
 * Live STT failover across protocols: a @deepgram/sdk live client whose Deepgram vendor fails
 * mid-stream is moved to an OpenAI realtime transcription model of fallbacks.stt (a scripted
 * loopback vendor that hears each 100 ms of its 24 kHz input as one word). The client sees one
 * Deepgram stream: every word once as a final, on its own timeline, then Deepgram's Metadata and a
 * normal close; the OpenAI vendor was sent the replayed and live audio resampled to 24 kHz pcm16.
 */
initializeLogger({ pretty: false, level: "error" });

const deepgram = new DeepgramLiveStub();
const openai = new OpenAITranscriptionLiveStub();
/** A second OpenAI account, for the same-protocol seam of an OpenAI client. */
const openaiB = new OpenAITranscriptionLiveStub();
const WORDS = 12;
/** Bytes of 24 kHz pcm16 in one 100 ms word frame. */
const WORD_BYTES_24K = 4_800;

const YAML = (stallMs = 2_000) => `${KEYS_YAML}
providers:
  deepgram: { api_key: "${PROVIDER_KEY}", base_url: "${deepgram.url}/v1" }
  openai: { api_key: "${PROVIDER_KEY}", base_url: "${openai.url}/v1" }
models:
  stt:
    deepgram/nova-3: { provider: deepgram, model: nova-3 }
    openai/gpt-4o-transcribe: { provider: openai, model: gpt-4o-transcribe }
fallbacks:
  stt: [deepgram/nova-3, openai/gpt-4o-transcribe]
projects:
  calls: {}
gateway:
  streams: { stall_ms: ${stallMs} }
`;

beforeAll(async () => {
  await Promise.all([deepgram.start(), openai.start(), openaiB.start()]);
});
afterAll(async () => {
  await Promise.all([deepgram.stop(), openai.stop(), openaiB.stop()]);
});
beforeEach(() => {
  deepgram.reset();
  openai.reset();
  openaiB.reset();
});

describe("live STT failover from Deepgram to OpenAI realtime transcription", () => {
  const cases: Array<[string, LiveLegScript, RegExp]> = [
    ["the vendor's connection drops", { how: "drop", afterFrames: 5 }, /upstream connection lost/],
    ["the vendor closes 1011", { how: "close", afterFrames: 4 }, /1011/],
    ["the vendor stalls while audio keeps arriving", { how: "stall", afterFrames: 5 }, /sent nothing for 300 ms/],
    ["the vendor refuses the stream after the upgrade (error frame)", { how: "error", afterFrames: 0 }, /quota exceeded/],
  ];
  for (const [name, script, reason] of cases) {
    it(`${name}: one Deepgram stream, every word once, the OpenAI leg sent 24 kHz pcm16 and recorded as it billed`, async () => {
      deepgram.legs = [script];
      const app = await gatewayApp(YAML(script.how === "stall" ? 300 : 2_000));
      try {
        const session = `xcall-${script.how}-${script.afterFrames}`;
        const seen = await talk(app.base, session, { words: WORDS, reached: () => openai.sessions.length > 0 });
        expect(seen.opens).toBe(1);
        expect(seen.closes).toEqual([1000]);
        expect(finalWords(seen.finals)).toBe(seen.words);
        expect([...seen.starts].sort((a, b) => a - b)).toEqual(seen.starts);
        expect(deepgram.connections).toHaveLength(1);
        expect(openai.sessions).toHaveLength(1);

        // The OpenAI session was configured for 24 kHz pcm16 and the candidate's own model.
        const s = openai.sessions[0];
        expect(s?.updates[0]).toMatchObject({
          type: "session.update",
          session: { type: "transcription", audio: { input: { format: { type: "audio/pcm", rate: 24_000 }, transcription: { model: "gpt-4o-transcribe" } } } },
        });
        // It heard the word after the client's last final and every later one, nothing earlier, each
        // as 100 ms of 24 kHz pcm16 holding the word's sample value (the resampled frames).
        const all = seen.words.split(" ");
        const replayFrom = script.afterFrames === 0 ? 0 : Math.floor((script.afterFrames - 1) / 2) * 2;
        expect(s?.words).toEqual(all.slice(replayFrom));
        expect(s?.bytes).toBe((all.length - replayFrom) * WORD_BYTES_24K);
        // Deepgram's closing Metadata carries the new leg's own duration.
        expect(seen.metadata).toHaveLength(1);
        expect(seen.metadata[0]?.duration).toBeCloseTo((all.length - replayFrom) * 0.1, 6);

        const rows = await sessionRows(app, session, 2);
        const failed = rows.find((r) => r.model_id === "deepgram/nova-3" && r.metadata?.checkpoint === undefined);
        const next = rows.find((r) => r.model_id === "openai/gpt-4o-transcribe" && r.metadata?.checkpoint === undefined);
        expect(failed).toMatchObject({ status: "error", provider: "deepgram" });
        expect(failed?.error_message).toMatch(reason);
        expect(next).toMatchObject({ status: "fallback", fallback_from: "deepgram/nova-3", provider: "openai" });
        expect(next?.metadata).toMatchObject({ stream_id: failed?.id });
        expect(typeof next?.metadata?.failover_gap_ms).toBe("number");
        // Each leg's audio is what its vendor billed: Deepgram what it heard, OpenAI its usage.seconds.
        expect(legSeconds(rows, "deepgram/nova-3")).toBeCloseTo(deepgram.truth[0]?.audioSeconds ?? -1, 6);
        expect(legSeconds(rows, "openai/gpt-4o-transcribe")).toBeCloseTo(openai.truth[0]?.audioSeconds ?? -1, 6);
        expect(openai.truth[0]?.audioSeconds).toBeCloseTo((all.length - replayFrom) * 0.1, 6);

        const metrics = await (await app.call("GET", "/v1/metrics", { key: OPERATOR_KEY })).text();
        expect(metrics).toContain('voxgate_gateway_stream_failovers_total{route="/deepgram/v1/listen",from="deepgram",to="openai"} 1');
      } finally {
        await app.close();
      }
    });
  }

  it("the LiveKit Deepgram plugin's STT stream goes on across the seam: every word once as a final transcript", async () => {
    deepgram.legs = [{ how: "drop", afterFrames: 5 }];
    const app = await gatewayApp(YAML());
    try {
      const plugin = new deepgramPlugin.STT({ apiKey: OPERATOR_KEY, baseUrl: `${app.base}/p/calls/s/xcall-livekit/deepgram`, model: "deepgram/nova-3", sampleRate: 16_000, interimResults: true, language: "en-US" });
      const stream = plugin.stream();
      const finals: string[] = [];
      const events = (async () => {
        for await (const ev of stream) if (ev.type === lkstt.SpeechEventType.FINAL_TRANSCRIPT) finals.push(ev.alternatives?.[0]?.text ?? "");
      })();
      // Words from 200 up: the plugin drops frames it hears as silence once its first second is over.
      const words: string[] = [];
      for (let w = 0; w < WORDS || openai.sessions.length === 0; w++) {
        const pcm = wordFrame(200 + w);
        stream.pushFrame(new AudioFrame(new Int16Array(pcm.buffer, pcm.byteOffset, 1_600), 16_000, 1, 1_600));
        words.push(`w${200 + w}`);
        await sleep(25);
      }
      // The plugin's Finalize and CloseStream end the stream once the vendor has answered them.
      stream.endInput();
      await events;
      expect(finalWords(finals)).toBe(words.join(" "));
      expect(deepgram.connections).toHaveLength(1);
      expect(openai.sessions).toHaveLength(1);
    } finally {
      await app.close();
    }
  });

  it("the OpenAI candidate refuses after connect and none is left: the client gets Deepgram's Error frame, then 1011", async () => {
    deepgram.legs = [{ how: "drop", afterFrames: 3 }];
    openai.failAtConnect = true;
    const app = await gatewayApp(YAML());
    try {
      const s = opened(await openWs(`${app.base.replace("http://", "ws://")}/p/calls/s/xcall-none/deepgram/v1/listen?model=deepgram/nova-3&encoding=linear16&sample_rate=16000`, { headers: { authorization: `Token ${OPERATOR_KEY}` } }));
      let closed = false;
      void s.closed.then(() => {
        closed = true;
      });
      for (let w = 0; w < WORDS && !closed; w++) {
        s.ws.send(wordFrame(w));
        await sleep(25);
      }
      expect(await s.closed).toMatchObject({ code: 1011 });
      const texts = s.received.filter((m): m is string => typeof m === "string");
      expect(JSON.parse(texts.at(-1) ?? "{}")).toMatchObject({ type: "Error", description: "stub: you exceeded your current quota" });
      const rows = await sessionRows(app, "xcall-none", 2);
      const finals = rows.filter((r) => r.metadata?.checkpoint === undefined);
      expect(finals.map((r) => [r.model_id, r.status])).toEqual([
        ["deepgram/nova-3", "error"],
        ["openai/gpt-4o-transcribe", "error"],
      ]);
      expect(finals[1]?.error_message).toMatch(/exceeded your current quota/);
    } finally {
      await app.close();
    }
  });

  it("a stream whose audio does not translate (mulaw) skips the OpenAI candidate: no failover, 1011 as before", async () => {
    deepgram.legs = [{ how: "drop", afterFrames: 2 }];
    const app = await gatewayApp(YAML());
    try {
      const s = opened(await openWs(`${app.base.replace("http://", "ws://")}/deepgram/v1/listen?model=deepgram/nova-3&encoding=mulaw&sample_rate=8000`, { headers: { authorization: `Token ${OPERATOR_KEY}` } }));
      s.ws.send(Buffer.alloc(800, 0x7f));
      s.ws.send(Buffer.alloc(800, 0x7f));
      expect(await s.closed).toMatchObject({ code: 1011, reason: "upstream connection lost" });
      expect(openai.sessions).toHaveLength(0);
    } finally {
      await app.close();
    }
  });
});

/**
 * The LiveKit OpenAI plugin's realtime STT stream speaking 50 ms word frames (each append one word to
 * both scripted vendors) until at least WORDS and `reached()`, an even count (both vendors finalize
 * pairs); its input ends once every word is final (the plugin closes its socket when input ends).
 */
async function speakOpenAi(base: string, session: string, reached: () => boolean) {
  const plugin = new openaiPlugin.STT({ apiKey: OPERATOR_KEY, baseURL: `${base}/p/calls/s/${session}/openai/v1`, model: "openai/gpt-4o-transcribe", useRealtime: true });
  const stream = plugin.stream();
  const finals: string[] = [];
  const events = (async () => {
    for await (const ev of stream) if (ev.type === lkstt.SpeechEventType.FINAL_TRANSCRIPT) finals.push(ev.alternatives?.[0]?.text ?? "");
  })();
  const words: string[] = [];
  for (let w = 0; w < WORDS || !reached() || w % 2 === 1; w++) {
    const pcm = wordFrame(200 + w, 2_400);
    stream.pushFrame(new AudioFrame(new Int16Array(pcm.buffer, pcm.byteOffset, 1_200), 24_000, 1, 1_200));
    words.push(`w${200 + w}`);
    await sleep(25);
  }
  while (finalWords(finals).split(" ").length < words.length) await sleep(10);
  stream.endInput();
  await events;
  return { finals, words };
}

/** fallbacks.stt the other way round: an OpenAI model first, a Deepgram one after it. */
const BACK_YAML = () =>
  YAML()
    .replace("stt: [deepgram/nova-3, openai/gpt-4o-transcribe]", "stt: [openai/gpt-4o-transcribe, deepgram/nova-3]")
    .replace(/gateway:\n.*\n$/, "");

describe("live STT failover from OpenAI realtime transcription to Deepgram (and back)", () => {
  const cases: Array<[string, TranscriptionLegScript, RegExp]> = [
    ["drops its connection", { how: "drop", afterAppends: 5 }, /upstream connection lost/],
    ["answers a server error", { how: "error", afterAppends: 5 }, /the server had an error/],
  ];
  for (const [name, script, reason] of cases) {
    it(`the OpenAI vendor ${name}: the LiveKit OpenAI plugin's stream goes on on Deepgram, every word once, each leg recorded`, async () => {
      openai.legs = [script];
      // The plugin appends 50 ms at a time: each append is one word for both vendors.
      openai.wordBytes = 2_400;
      const app = await gatewayApp(BACK_YAML());
      try {
        const session = `xback-${script.how}`;
        const { finals, words } = await speakOpenAi(app.base, session, () => deepgram.connections.length > 0);
        expect(finalWords(finals)).toBe(words.join(" "));
        expect(openai.sessions).toHaveLength(1);
        expect(deepgram.connections).toHaveLength(1);
        // Deepgram was told the session's audio as it is: linear16 at 24 kHz, one channel.
        expect(Object.fromEntries(deepgram.seen[0]?.query ?? [])).toMatchObject({ model: "nova-3", encoding: "linear16", sample_rate: "24000", channels: "1" });

        const rows = await sessionRows(app, session, 2);
        const failed = rows.find((r) => r.model_id === "openai/gpt-4o-transcribe" && r.metadata?.checkpoint === undefined);
        const next = rows.find((r) => r.model_id === "deepgram/nova-3" && r.metadata?.checkpoint === undefined);
        expect(failed).toMatchObject({ status: "error", provider: "openai" });
        expect(failed?.error_message).toMatch(reason);
        expect(next).toMatchObject({ status: "fallback", fallback_from: "openai/gpt-4o-transcribe", provider: "deepgram" });
        expect(next?.metadata).toMatchObject({ stream_id: failed?.id });
        expect(typeof next?.metadata?.failover_gap_ms).toBe("number");
        // The OpenAI leg bills its completed items' usage.seconds, the Deepgram leg the audio it heard.
        expect(legSeconds(rows, "openai/gpt-4o-transcribe")).toBeCloseTo(openai.truth[0]?.audioSeconds ?? -1, 6);
        expect(legSeconds(rows, "deepgram/nova-3")).toBeCloseTo(deepgram.truth[0]?.audioSeconds ?? -1, 6);
        // Deepgram heard the words after the last final the client got (two items of two words), and every later one.
        expect(deepgram.truth[0]?.audioSeconds).toBeCloseTo((words.length - 4) * 0.05, 6);

        const metrics = await (await app.call("GET", "/v1/metrics", { key: OPERATOR_KEY })).text();
        expect(metrics).toContain('voxgate_gateway_stream_failovers_total{route="/openai/v1/realtime",from="openai",to="deepgram"} 1');
      } finally {
        await app.close();
      }
    });
  }

  it("an OpenAI client fails over to another OpenAI provider: the new vendor gets the client's session update, its model its own", async () => {
    openai.legs = [{ how: "drop", afterAppends: 5 }];
    openai.wordBytes = 2_400;
    openaiB.wordBytes = 2_400;
    const yaml = BACK_YAML()
      .replace("  deepgram: {", `  openai-b: { type: openai, api_key: "${PROVIDER_KEY}", base_url: "${openaiB.url}/v1" }\n  deepgram: {`)
      .replace("    deepgram/nova-3:", "    openai-b/gpt-4o-mini-transcribe: { provider: openai-b, model: gpt-4o-mini-transcribe }\n    deepgram/nova-3:")
      .replace("stt: [openai/gpt-4o-transcribe, deepgram/nova-3]", "stt: [openai/gpt-4o-transcribe, openai-b/gpt-4o-mini-transcribe, deepgram/nova-3]");
    const app = await gatewayApp(yaml);
    try {
      const { finals, words } = await speakOpenAi(app.base, "xback-openai", () => openaiB.sessions.length > 0);
      expect(finalWords(finals)).toBe(words.join(" "));
      expect(deepgram.connections).toHaveLength(0);
      expect(openaiB.sessions[0]?.updates[0]).toMatchObject({ type: "session.update", session: { type: "transcription", audio: { input: { transcription: { model: "gpt-4o-mini-transcribe" } } } } });
      expect(openaiB.sessions[0]?.words).toEqual(words.slice(4));
      const rows = await sessionRows(app, "xback-openai", 2);
      expect(rows.find((r) => r.model_id === "openai-b/gpt-4o-mini-transcribe" && r.metadata?.checkpoint === undefined)).toMatchObject({ status: "fallback", fallback_from: "openai/gpt-4o-transcribe" });
    } finally {
      await app.close();
    }
  });

  it("an OpenAI vendor silent while nobody speaks is not failed: the stall clock counts its socket's pongs", async () => {
    openai.silent = true;
    const app = await gatewayApp(BACK_YAML().replace("projects:", "gateway:\n  streams: { stall_ms: 200 }\nprojects:"));
    try {
      const plugin = new openaiPlugin.STT({ apiKey: OPERATOR_KEY, baseURL: `${app.base}/p/calls/s/xback-silent/openai/v1`, model: "openai/gpt-4o-transcribe", useRealtime: true });
      const stream = plugin.stream();
      const events = (async () => {
        for await (const _ev of stream) {
          // nothing is said
        }
      })();
      // A second of audio, five stall windows, with not one vendor frame.
      for (let w = 0; w < 40; w++) {
        const pcm = wordFrame(200, 1_200);
        stream.pushFrame(new AudioFrame(new Int16Array(pcm.buffer, pcm.byteOffset, 600), 24_000, 1, 600));
        await sleep(25);
      }
      while ((openai.sessions[0]?.bytes ?? 0) < 40 * 1_200) await sleep(10);
      stream.endInput();
      await events;
      expect(deepgram.connections).toHaveLength(0);
      const rows = await sessionRows(app, "xback-silent", 1);
      expect(rows.filter((r) => r.metadata?.checkpoint === undefined).map((r) => [r.model_id, r.status])).toEqual([["openai/gpt-4o-transcribe", "success"]]);
    } finally {
      await app.close();
    }
  });
});
