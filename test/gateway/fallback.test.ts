import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useTestApp } from "../support/app.js";
import { openaiChatStub } from "../support/stubs/openai-chat.js";
import type { StubServer } from "../support/stubs/stub-server.js";
import { KEYS_YAML, OPERATOR_KEY, PROVIDER_KEY, recordedRows } from "./support.js";

let primary: StubServer;
let backup: StubServer;
const BACKUP_KEY = "sk-backup-provider-key-0123456789";

beforeAll(async () => {
  primary = await openaiChatStub().start();
  backup = await openaiChatStub().start();
});
afterAll(async () => {
  await primary?.close();
  await backup?.close();
});
const app = useTestApp(() => ({
  listen: true,
  yaml: `${KEYS_YAML}
providers:
  openai: { api_key: "${PROVIDER_KEY}", base_url: "${primary.url}/v1" }
  backup: { type: openai_compatible, api_key: "${BACKUP_KEY}", base_url: "${backup.url}/v1" }
models:
  llm:
    openai/gpt-4.1-mini: { provider: openai, model: gpt-4.1-mini }
    backup/llama: { provider: backup, model: llama-3.1-8b }
fallbacks:
  llm: [openai/gpt-4.1-mini, backup/llama]
gateway:
  first_byte_timeout_ms: 400
  max_cooldown_ms: 300
`,
}));

const client = () => new OpenAI({ apiKey: OPERATOR_KEY, baseURL: `${app.base}/openai/v1`, maxRetries: 0 });
const ask = () => client().chat.completions.create({ model: "openai/gpt-4.1-mini", messages: [{ role: "user", content: "same body" }] }).withResponse();
const coolOff = () => new Promise((r) => setTimeout(r, 350));

describe("fallback", () => {
  for (const [name, step] of [
    ["a 503", { status: 503 }],
    ["a 429", { status: 429, retryAfter: "1" }],
    ["a reset connection", { reset: true }],
    ["no first byte before the timeout", { hang: true }],
  ] as const) {
    it(`replays the buffered body to the next model after ${name}, recording both attempts`, async () => {
      await coolOff();
      primary.script(step);
      const backupBefore = backup.hits.length;
      const { data, response } = await ask();
      expect(data.choices[0]?.message.content).toBeTruthy();
      const hit = backup.hits[backupBefore];
      expect(hit?.headers.authorization).toBe(`Bearer ${BACKUP_KEY}`);
      expect(JSON.parse(hit?.body ?? "{}")).toMatchObject({ model: "llama-3.1-8b", messages: [{ role: "user", content: "same body" }] });
      const rows = await recordedRows(app);
      const answering = rows.find((r) => r.id === response.headers.get("x-voxgate-request-id"));
      expect(answering).toMatchObject({ status: "fallback", model_id: "backup/llama", fallback_from: "openai/gpt-4.1-mini", output_tokens: 5 });
      const failed = rows.filter((r) => r.model_id === "openai/gpt-4.1-mini" && r.status === "error");
      expect(failed.at(-1)?.error_message).toBeTruthy();
    });
  }

  it("cools a failing provider down (Retry-After, bounded by max_cooldown_ms), then tries it again", async () => {
    await coolOff();
    primary.script({ status: 429, retryAfter: "60" });
    await ask();
    const primaryHits = primary.hits.length;
    await ask(); // within the cooldown: straight to the backup
    expect(primary.hits.length).toBe(primaryHits);
    await coolOff(); // max_cooldown_ms 300 caps the 60 s Retry-After
    await ask();
    expect(primary.hits.length).toBe(primaryHits + 1);
  });

  it("passes the last candidate's own 429 and Retry-After to the client when every model failed", async () => {
    await coolOff();
    primary.script({ status: 503 });
    backup.script({ status: 429, retryAfter: "7" });
    const err = await ask().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect((err as InstanceType<typeof OpenAI.RateLimitError>).headers?.get("retry-after")).toBe("7");
    const rows = await recordedRows(app);
    expect(rows.at(-1)).toMatchObject({ model_id: "backup/llama", status: "error", fallback_from: "openai/gpt-4.1-mini" });
  });
});
