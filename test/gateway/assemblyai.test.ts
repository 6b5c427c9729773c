import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { connect, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer as createTlsServer } from "node:tls";
import { StreamingTranscriber } from "assemblyai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assemblyaiBytesPerSecond, assemblyaiMeter, streamingBase } from "../../src/gateway/protocols/assemblyai.js";
import { useTestApp } from "../support/app.js";
import { ASSEMBLYAI_SESSION_SECONDS, AssemblyAIStub } from "../support/stubs/assemblyai.js";
import { presentedKeys } from "../support/stubs/vendor-stub.js";
import { KEYS_YAML, OPERATOR_KEY, PROVIDER_KEY, recordedRows } from "./support.js";

/**
 * AssemblyAI Universal-Streaming through Voxgate with the `assemblyai` SDK's StreamingTranscriber,
 * pointed at Voxgate by `websocketBaseUrl` alone. The SDK insists on wss:, so the test puts a TLS
 * terminator (a self-signed certificate made here) in front of Voxgate's plain listener.
 */
const stub = new AssemblyAIStub();
let tls: Server;
let tlsPort = 0;
const rejectUnauthorized = process.env.NODE_TLS_REJECT_UNAUTHORIZED;

beforeAll(async () => {
  await stub.start();
});
const app = useTestApp(() => ({
  listen: true,
  yaml: `${KEYS_YAML}
providers:
  assemblyai: { api_key: "${PROVIDER_KEY}", base_url: "${stub.url}" }
models:
  stt:
    assemblyai/universal-streaming-english: { provider: assemblyai, model: universal-streaming-english }
stacks:
  voice: { stt: assemblyai/universal-streaming-english }
projects:
  support: { default_stack: voice }
  broke: { daily_budget: 0, budget_action: block, default_stack: voice }
`,
}));

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), "voxgate-tls-"));
  execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem"), "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"], { stdio: "ignore" });
  const voxgatePort = Number(new URL(app.base).port);
  // TLS terminator: decrypts and pipes each connection to Voxgate's plain HTTP listener.
  tls = createTlsServer({ key: readFileSync(join(dir, "key.pem")), cert: readFileSync(join(dir, "cert.pem")) }, (socket) => {
    const upstream = connect(voxgatePort, "127.0.0.1");
    socket.pipe(upstream).pipe(socket);
    socket.on("error", () => upstream.destroy());
    upstream.on("error", () => socket.destroy());
  });
  await new Promise<void>((r) => tls.listen(0, "127.0.0.1", () => r()));
  tlsPort = (tls.address() as { port: number }).port;
  // The certificate is self-signed: the SDK's socket (ws) accepts it only with verification off, in this process only.
  process.env.NODE_TLS_REJECT_UNAUTHORIZED = "0";
});
afterAll(async () => {
  if (rejectUnauthorized === undefined) delete process.env.NODE_TLS_REJECT_UNAUTHORIZED;
  else process.env.NODE_TLS_REJECT_UNAUTHORIZED = rejectUnauthorized;
  await new Promise<void>((r) => (tls ? tls.close(() => r()) : r()));
  await stub.stop();
});

const transcriber = (prefix: string, speechModel?: string) =>
  new StreamingTranscriber({
    websocketBaseUrl: `wss://127.0.0.1:${tlsPort}${prefix}/assemblyai/v3/ws`,
    apiKey: OPERATOR_KEY,
    sampleRate: 16_000,
    ...(speechModel && { speechModel: speechModel as "universal-streaming-english" }),
  });

describe("AssemblyAI Universal-Streaming through Voxgate (assemblyai SDK)", () => {
  it("streams 2 s of audio: Begin, Turns and Termination reach the SDK; audio and session seconds recorded, session billed", async () => {
    stub.reset();
    const t = transcriber("/p/support/s/aai-1", "universal-streaming-english");
    const turns: string[] = [];
    t.on("turn", (turn) => turns.push(turn.transcript));
    const begin = await t.connect();
    expect(begin.id).toBe("sess-1");
    const chunk = new Uint8Array(3_200); // 100 ms of 16 kHz 16-bit PCM
    for (let i = 0; i < 20; i++) t.sendAudio(chunk.buffer.slice(0));
    // Every Turn back before terminating (the SDK stops listening to turns once it closes).
    for (let i = 0; i < 200 && turns.length < 20; i++) await new Promise((r) => setTimeout(r, 10));
    await t.close(true);
    expect(turns).toHaveLength(20);

    const seen = stub.seen.at(-1);
    expect(seen?.path).toBe("/v3/ws");
    expect(seen?.query.get("speech_model")).toBe("universal-streaming-english");
    expect(seen?.query.get("sample_rate")).toBe("16000");
    expect(presentedKeys(seen as NonNullable<typeof seen>)).toEqual([PROVIDER_KEY]);
    expect(JSON.stringify({ h: seen?.headers, q: seen?.query.toString() })).not.toContain(OPERATOR_KEY);

    let row: Awaited<ReturnType<typeof recordedRows>>[number] | undefined;
    for (let i = 0; i < 100 && !row; i++) {
      row = (await recordedRows(app)).find((r) => r.model_id === "assemblyai/universal-streaming-english" && r.status === "success");
      if (!row) await new Promise((r) => setTimeout(r, 50));
    }
    // $0.15 an hour ($0.0025 a minute) on the 7.5 s session, × 1.25.
    expect(row).toMatchObject({ project: "support", session_id: "aai-1", audio_seconds: 2, cost_usd: "0.0003125000", rated_price_usd: "0.0003906250" });
    expect(row?.metadata).toMatchObject({ billed_seconds: ASSEMBLYAI_SESSION_SECONDS });
  });

  it("without speech_model the project's stack decides", async () => {
    stub.reset();
    const t = transcriber("/p/support/s/aai-2");
    await t.connect();
    await t.close(true);
    expect(stub.seen.at(-1)?.query.get("speech_model")).toBe("universal-streaming-english");
  });

  it("refusals arrive as AssemblyAI's: the SDK's StreamingError (not exported: an Error) with Voxgate's message and AssemblyAI's close code, no vendor dialled", async () => {
    stub.reset();
    const refusal = (t: StreamingTranscriber) => t.connect().then(() => expect.unreachable("connected"), (e: unknown) => e as Error & { code?: number });
    // An unknown model: 3006 (input validation), which the SDK retries before giving up.
    const notFound = await refusal(transcriber("", "u3-rt-pro"));
    expect(notFound).toBeInstanceOf(Error);
    expect(notFound.message).toMatch(/^model u3-rt-pro is not routable here/);
    expect(notFound.code).toBe(3006);
    // A spent budget: 4002 (insufficient funds), not retried.
    const broke = await refusal(transcriber("/p/broke/s/s-1"));
    expect(broke).toBeInstanceOf(Error);
    expect(broke.message).toBe("project broke has reached its daily budget");
    expect(broke.code).toBe(4002);
    // A wrong key: 4001 (not authorized).
    const wrongKey = new StreamingTranscriber({ websocketBaseUrl: `wss://127.0.0.1:${tlsPort}/assemblyai/v3/ws`, apiKey: "vk_wrong", sampleRate: 16_000 });
    const unauthorized = await refusal(wrongKey);
    expect(unauthorized.code).toBe(4001);
    expect(unauthorized.message.length).toBeGreaterThan(0);
    expect(stub.seen).toHaveLength(0);
  });

  it("the close alone carries the code and the reason, cut to what a close frame holds", async () => {
    const { WebSocket } = await import("ws");
    const ws = new WebSocket(`wss://127.0.0.1:${tlsPort}/assemblyai/v3/ws?speech_model=${"x".repeat(300)}`, { headers: { authorization: OPERATOR_KEY } });
    const frames: string[] = [];
    ws.on("message", (d) => frames.push(String(d)));
    const [code, reason] = await new Promise<[number, string]>((r) => ws.on("close", (c, why) => r([c, why.toString()])));
    expect(code).toBe(3006);
    expect(Buffer.byteLength(reason)).toBeLessThanOrEqual(123);
    expect(reason).toMatch(/^model x+/);
    expect(JSON.parse(frames[0] ?? "{}")).toMatchObject({ type: "Error", error_code: 3006 });
    expect(JSON.parse(frames[0] ?? "{}").error.length).toBeGreaterThan(300);
  });
});

describe("AssemblyAI streaming units (pure)", () => {
  it("the streaming host replaces the REST API's, /v2 dropped; a custom base is kept", () => {
    expect(streamingBase("https://api.assemblyai.com/v2")).toBe("https://streaming.assemblyai.com");
    expect(streamingBase("http://127.0.0.1:9000")).toBe("http://127.0.0.1:9000");
    expect(streamingBase("https://proxy.example/aai/v2/")).toBe("https://proxy.example/aai");
  });

  it("audio from Termination, else decoded bytes; billed session seconds from Termination, else the meter's clock", () => {
    let now = 0;
    const m = assemblyaiMeter(assemblyaiBytesPerSecond(new URLSearchParams("sample_rate=8000&encoding=pcm_mulaw")), () => now);
    expect(m.client(Buffer.alloc(8000), true)).toBe(true);
    now = 3_000;
    expect(m.units()).toEqual({ audioSeconds: 1, billedSeconds: 3 });
    m.upstream(Buffer.from(JSON.stringify({ type: "Termination", audio_duration_seconds: 1.25, session_duration_seconds: 4 })), false);
    expect(m.units()).toEqual({ audioSeconds: 1.25, billedSeconds: 4 });
  });
});
