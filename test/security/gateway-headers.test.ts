import { request } from "node:http";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ACME_KEY, GLOBEX_KEY, KEYS_YAML, OPERATOR_KEY, PROVIDER_KEY, recordedRows } from "../gateway/support.js";
import { useTestApp } from "../support/app.js";
import { pseudoAudio, wavFile } from "../support/stubs/audio.js";
import { DeepgramStub } from "../support/stubs/deepgram.js";
import { OpenAIAudioStub } from "../support/stubs/openai-audio.js";
import { StubServer } from "../support/stubs/vendor-stub.js";

/**
 * Headers across the gateway, attacked over real sockets: what a caller sends reaches the vendor only
 * on the vendor's allowlist (Expect and hop-by-hop never, and a request the caller made unsendable
 * never cools the provider down for other tenants); what the vendor answers reaches the caller only
 * on its allowlist, and never the provider's key (in a header, an error body or a streamed body).
 */
const openaiStub = new OpenAIAudioStub();
const backupStub = new OpenAIAudioStub();
const deepgram = new DeepgramStub();
/** A vendor whose answers are chosen by the model name: it echoes the provider's key in various places. */
const leaky = new StubServer();
leaky.http("POST", "/v1/chat/completions", async ({ req, answer }) => {
  const model = (JSON.parse(Buffer.from(req.body).toString()) as { model: string }).model;
  const key = (req.headers.authorization ?? "").replace(/^Bearer /, "");
  const ok = { id: "c1", object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } };
  if (model === "headers") {
    await answer(
      200,
      {
        "content-type": "application/json",
        "x-request-id": "req-123",
        "x-ratelimit-remaining-requests": "99",
        "openai-organization": "org-operator-secret",
        "openai-project": "proj_operator",
        "set-cookie": "session=operator",
        "x-internal-debug": "backend-7.internal",
        server: "internal-proxy/1.2",
      },
      [JSON.stringify(ok)],
    );
  } else if (model === "key-header") await answer(200, { "content-type": "application/json", "x-debug-auth": `Bearer ${key}` }, [JSON.stringify(ok)]);
  else if (model === "key-error") await answer(401, { "content-type": "application/json" }, [JSON.stringify({ error: { message: `Incorrect API key provided: ${key}`, type: "invalid_request_error" } })]);
  else if (model === "key-stream") {
    const event = (content: string) => `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", choices: [{ index: 0, delta: { content } }] })}\n\n`;
    // The key split across two chunks: found only by looking across the seam.
    const leak = event(`your key is ${key}`);
    const cut = leak.indexOf(key) + 5;
    await answer(200, { "content-type": "text/event-stream" }, [event("Hello"), leak.slice(0, cut), leak.slice(cut), "data: [DONE]\n\n"]);
  } else await answer(200, { "content-type": "application/json" }, [JSON.stringify(ok)]);
});

beforeAll(async () => {
  await Promise.all([openaiStub.start(), backupStub.start(), deepgram.start(), leaky.start()]);
});
afterAll(async () => {
  await Promise.all([openaiStub.stop(), backupStub.stop(), deepgram.stop(), leaky.stop()]);
});
const app = useTestApp(() => ({
  listen: true,
  yaml: `${KEYS_YAML}
providers:
  openai: { api_key: "${PROVIDER_KEY}", base_url: "${openaiStub.url}/v1" }
  backup: { type: openai_compatible, api_key: "sk-backup-key-0123456789", base_url: "${backupStub.url}/v1" }
  deepgram: { api_key: "${PROVIDER_KEY}", base_url: "${deepgram.url}/v1" }
  leaky: { type: openai_compatible, api_key: "${PROVIDER_KEY}", base_url: "${leaky.url}/v1" }
models:
  stt:
    openai/whisper-1: { provider: openai, model: whisper-1 }
    backup/whisper-1: { provider: backup, model: whisper-1 }
    deepgram/nova-3: { provider: deepgram, model: nova-3 }
  tts:
    openai/tts-1: { provider: openai, model: tts-1 }
  llm:
    leaky/headers: { provider: leaky, model: headers }
    leaky/key-header: { provider: leaky, model: key-header }
    leaky/key-error: { provider: leaky, model: key-error }
    leaky/key-stream: { provider: leaky, model: key-stream }
fallbacks:
  stt: [openai/whisper-1, backup/whisper-1]
gateway:
  max_cooldown_ms: 60000
`,
}));
beforeEach(() => {
  for (const s of [openaiStub, backupStub, deepgram, leaky]) s.reset();
});

interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One request over a real socket; with `expectContinue` the body waits for the server's 100 Continue, as curl does. */
function send(path: string, headers: Record<string, string>, body: Buffer, expectContinue = false): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const url = new URL(path, app.base);
    const req = request(url, { method: "POST", headers: { ...headers, "content-length": String(body.byteLength), ...(expectContinue && { expect: "100-continue" }) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      // A cut answer settles with what arrived before the cut.
      const done = () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() });
      res.on("end", done);
      res.on("close", done);
      res.on("error", () => {});
    });
    req.on("error", reject);
    if (expectContinue) req.on("continue", () => req.end(body));
    else req.end(body);
  });
}

const wav16k = (seconds: number) => wavFile(pseudoAudio(seconds * 32_000), 16_000);

/** A multipart transcription upload of `seconds` of WAV (1 s = 32 KB at 16 kHz mono). */
function transcriptionForm(seconds: number): { body: Buffer; type: string } {
  const boundary = "----vgtest";
  const wav = Buffer.from(wav16k(seconds));
  const body = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nopenai/whisper-1\r\n`),
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\n`),
    wav,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return { body, type: `multipart/form-data; boundary=${boundary}` };
}

const CALLER_HEADERS = {
  "openai-organization": "org-attacker",
  "openai-project": "proj_attacker",
  "x-forwarded-for": "203.0.113.7",
  "user-agent": "attacker-agent/1.0",
  cookie: "a=b",
  "x-custom-vendor-flag": "on",
};

describe("caller headers to the vendor (allowlist)", () => {
  it("an upload with Expect: 100-continue is answered, and the provider is not cooled down for other tenants", async () => {
    const form = transcriptionForm(40); // > 1 MiB, as curl sends it
    expect(form.body.byteLength).toBeGreaterThan(1024 * 1024);
    const first = await send("/openai/v1/audio/transcriptions", { authorization: `Bearer ${ACME_KEY}`, "content-type": form.type }, form.body, true);
    expect(first.status, first.body).toBe(200);
    expect(openaiStub.seen.at(-1)?.headers.expect).toBeUndefined();
    // Another tenant right after: still served by the primary, not the fallback.
    const second = await send("/openai/v1/audio/transcriptions", { authorization: `Bearer ${GLOBEX_KEY}`, "content-type": form.type }, form.body);
    expect(second.status, second.body).toBe(200);
    expect(openaiStub.seen).toHaveLength(2);
    expect(backupStub.seen).toHaveLength(0);
    const rows = (await recordedRows(app)).filter((r) => r.model_id.endsWith("whisper-1"));
    expect(rows.every((r) => r.status === "success" && r.model_id === "openai/whisper-1")).toBe(true);
  });

  it("OpenAI-Organization, OpenAI-Project, X-Forwarded-For, User-Agent and other caller headers never reach the vendor on audio routes", async () => {
    const form = transcriptionForm(1);
    const stt = await send("/openai/v1/audio/transcriptions", { ...CALLER_HEADERS, authorization: `Bearer ${OPERATOR_KEY}`, "content-type": form.type }, form.body);
    expect(stt.status, stt.body).toBe(200);
    const tts = await send(
      "/openai/v1/audio/speech",
      { ...CALLER_HEADERS, authorization: `Bearer ${OPERATOR_KEY}`, "content-type": "application/json" },
      Buffer.from(JSON.stringify({ model: "openai/tts-1", input: "hello", voice: "alloy" })),
    );
    expect(tts.status, tts.body).toBe(200);
    const dg = await send("/deepgram/v1/listen?model=nova-3", { ...CALLER_HEADERS, authorization: `Token ${OPERATOR_KEY}`, "content-type": "audio/wav" }, Buffer.from(wav16k(1)));
    expect(dg.status, dg.body).toBe(200);
    for (const seen of [...openaiStub.seen, ...deepgram.seen]) {
      for (const name of Object.keys(CALLER_HEADERS)) expect(seen.headers[name], `${seen.path} ${name}`).toBeUndefined();
      expect(seen.headers["content-type"]).toBeDefined();
    }
    expect(openaiStub.seen).toHaveLength(2);
    expect(deepgram.seen).toHaveLength(1);
  });
});

const chat = (model: string, stream = false) =>
  send("/openai/v1/chat/completions", { authorization: `Bearer ${OPERATOR_KEY}`, "content-type": "application/json" }, Buffer.from(JSON.stringify({ model, stream, messages: [{ role: "user", content: "hi" }] })));

function expectNoKey(a: RawAnswer) {
  expect(JSON.stringify(a.headers)).not.toContain(PROVIDER_KEY);
  expect(a.body).not.toContain(PROVIDER_KEY);
}

describe("vendor answers to the caller (allowlist, never the provider key)", () => {
  it("relays the vendor's request id and rate-limit headers, not its organisation, cookies or internals", async () => {
    const a = await chat("leaky/headers");
    expect(a.status).toBe(200);
    expect(a.headers["x-request-id"]).toBe("req-123");
    expect(a.headers["x-ratelimit-remaining-requests"]).toBe("99");
    for (const name of ["openai-organization", "openai-project", "set-cookie", "x-internal-debug", "server"]) expect(a.headers[name], name).toBeUndefined();
  });

  it("an answer whose header echoes the provider key becomes a neutral 502", async () => {
    const a = await chat("leaky/key-header");
    expect(a.status).toBe(502);
    expectNoKey(a);
    expect(JSON.parse(a.body).error.code).toBe("upstream_unavailable");
  });

  it("an error body quoting the provider key becomes a neutral 502", async () => {
    const a = await chat("leaky/key-error");
    expect(a.status).toBe(502);
    expectNoKey(a);
    const rows = await recordedRows(app);
    const row = rows.find((r) => r.model_id === "leaky/key-error");
    expect(row?.status).toBe("error");
    expect(row?.error_message).not.toContain(PROVIDER_KEY);
  });

  it("a streamed answer that reaches the provider key (split across chunks) is cut before it", async () => {
    const a = await chat("leaky/key-stream", true);
    expect(a.body).toContain("Hello");
    expectNoKey(a);
    const rows = await recordedRows(app);
    expect(rows.find((r) => r.model_id === "leaky/key-stream")?.status).toBe("error");
  });
});
