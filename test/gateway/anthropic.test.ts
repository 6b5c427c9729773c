import Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useTestApp } from "../support/app.js";
import { ANTHROPIC_PIECES, anthropicStub } from "../support/stubs/anthropic.js";
import type { StubServer } from "../support/stubs/stub-server.js";
import { KEYS_YAML, OPERATOR_KEY, PROVIDER_KEY, recordedRows } from "./support.js";

let stub: StubServer;

beforeAll(async () => {
  stub = await anthropicStub().start();
});
afterAll(async () => {
  await stub?.close();
});
const app = useTestApp(() => ({
  listen: true,
  yaml: `${KEYS_YAML}
providers:
  anthropic: { api_key: "${PROVIDER_KEY}", base_url: "${stub.url}/v1" }
models:
  llm:
    anthropic/claude-haiku-4-5: { provider: anthropic, model: claude-haiku-4-5 }
`,
}));

const client = () => new Anthropic({ apiKey: OPERATOR_KEY, baseURL: `${app.base}/anthropic`, maxRetries: 0 });
// (9 uncached × 1 + 3 cached × 0.1 + 6 out × 5) / 1e6 at the catalog's claude-haiku-4-5 list prices.
const EXPECTED = { input_tokens: 12, cached_input_tokens: 3, output_tokens: 6, cost_usd: "0.0000393000", rated_price_usd: "0.0000491250" };

describe("Anthropic messages through Voxgate", () => {
  it("answers JSON with the provider's key upstream and records exact units and price", async () => {
    const before = stub.hits.length;
    const { data, response } = await client()
      .messages.create({ model: "anthropic/claude-haiku-4-5", max_tokens: 64, messages: [{ role: "user", content: "hi" }] })
      .withResponse();
    expect(data.content[0]?.type === "text" && data.content[0].text).toBe(ANTHROPIC_PIECES.join(""));
    const hit = stub.hits[before];
    expect(hit?.headers["x-api-key"]).toBe(PROVIDER_KEY);
    expect(hit?.headers["anthropic-version"]).toBeTruthy();
    expect(JSON.stringify(hit?.headers)).not.toContain(OPERATOR_KEY);
    expect(JSON.parse(hit?.body ?? "{}").model).toBe("claude-haiku-4-5");
    const row = (await recordedRows(app)).find((r) => r.id === response.headers.get("x-voxgate-request-id"));
    expect(row).toMatchObject({ status: "success", model_id: "anthropic/claude-haiku-4-5", ...EXPECTED });
  });

  it("relays the SSE stream and records its usage", async () => {
    const stream = client().messages.stream({ model: "claude-haiku-4-5", max_tokens: 64, messages: [{ role: "user", content: "hi" }] });
    let text = "";
    stream.on("text", (t) => {
      text += t;
    });
    const final = await stream.finalMessage();
    expect(text).toBe(ANTHROPIC_PIECES.join(""));
    expect(final.usage.output_tokens).toBe(6);
    const rows = await recordedRows(app);
    expect(rows.at(-1)).toMatchObject({ status: "success", ...EXPECTED });
    expect(rows.at(-1)?.ttfb_ms).toBeGreaterThanOrEqual(0);
  });

  it("answers errors in Anthropic's shape: unknown model 404, malformed bodies 4xx", async () => {
    const err = await client()
      .messages.create({ model: "claude-nope", max_tokens: 8, messages: [{ role: "user", content: "x" }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.NotFoundError);
    for (const body of ["", "{", "[1]", '{"model":"claude-haiku-4-5"}', '{"model":7,"messages":[]}']) {
      const res = await fetch(`${app.base}/anthropic/v1/messages`, { method: "POST", headers: { "x-api-key": OPERATOR_KEY, "content-type": "application/json" }, body });
      expect(res.status, body).toBeGreaterThanOrEqual(400);
      expect(res.status, body).toBeLessThan(500);
      const json = (await res.json()) as { type?: string; error?: { type?: string } };
      expect(json.type).toBe("error");
    }
  });

  it("sends the caller's anthropic-version and anthropic-beta upstream, and only the JSON type headers of its own", async () => {
    const before = stub.hits.length;
    const sent = { "anthropic-version": "2023-06-01", "anthropic-beta": "token-efficient-tools-2025-02-19" };
    await client().messages.create({ model: "anthropic/claude-haiku-4-5", max_tokens: 64, messages: [{ role: "user", content: "hi" }] }, { headers: sent });
    expect(stub.hits[before]?.headers).toMatchObject({ ...sent, "content-type": "application/json", accept: "application/json", "x-api-key": PROVIDER_KEY });
  });
});
