import { describe, expect, it } from "vitest";
import { silentLogger } from "../../src/logging.js";
import { attributionOf } from "../../src/gateway/attribution.js";
import { Cooldowns, retryAfterMs } from "../../src/gateway/cooldown.js";
import { isLoopback } from "../../src/gateway/loopback.js";
import { withModel } from "../../src/gateway/protocols/json-body.js";
import { usageFromSlice } from "../../src/gateway/protocols/openai-chat.js";
import { GatewayRecorder, type GatewayRecord } from "../../src/gateway/recorder.js";
import { fallbackChain, resolveModel } from "../../src/gateway/resolve.js";
import type { RoutingTable } from "../../src/gateway/routing-table.js";

const table: RoutingTable = {
  providers: new Map([
    ["openai", { providerId: "openai", providerType: "openai", baseUrl: "https://api.openai.com/v1", apiKey: "k" }],
    ["groq", { providerId: "groq", providerType: "groq", baseUrl: "https://api.groq.com/openai/v1", apiKey: "k" }],
    ["anthropic", { providerId: "anthropic", providerType: "anthropic", baseUrl: "https://api.anthropic.com/v1", apiKey: "k" }],
  ]),
  models: new Map([
    ["openai/gpt-4.1-mini", { modelId: "openai/gpt-4.1-mini", modality: "llm", providerId: "openai", modelName: "gpt-4.1-mini" }],
    ["groq/llama", { modelId: "groq/llama", modality: "llm", providerId: "groq", modelName: "llama-3.3-70b" }],
    ["anthropic/claude", { modelId: "anthropic/claude", modality: "llm", providerId: "anthropic", modelName: "claude-haiku-4-5" }],
    ["missing/x", { modelId: "missing/x", modality: "llm", providerId: "missing", modelName: "x" }],
  ]),
  stacks: { fast: { llm: "groq/llama" }, nollm: { stt: "deepgram/nova-3" } },
  projects: new Map(),
  fallbacks: { stt: [], llm: ["openai/gpt-4.1-mini", "anthropic/claude", "missing/x", "groq/llama"], tts: [] },
};
const openaiRoute = { modality: "llm" as const, providerTypes: ["openai", "groq", "openai_compatible"] as const };

describe("resolveModel", () => {
  it("resolves ids, bare names, stacks and the default stack", () => {
    expect(resolveModel(table, openaiRoute, "openai/gpt-4.1-mini", null)).toMatchObject({ ok: true, via: "model", target: { modelName: "gpt-4.1-mini" } });
    expect(resolveModel(table, openaiRoute, "llama-3.3-70b", null)).toMatchObject({ ok: true, via: "bare", target: { modelId: "groq/llama" } });
    expect(resolveModel(table, openaiRoute, "stack:fast", null)).toMatchObject({ ok: true, via: "stack", target: { modelId: "groq/llama" } });
    expect(resolveModel(table, openaiRoute, null, "fast")).toMatchObject({ ok: true, via: "default_stack" });
  });

  it("refuses models another prefix speaks, unconfigured providers and bad stacks, listing the routable ids", () => {
    for (const [m, stack] of [["anthropic/claude", null], ["missing/x", null], ["stack:nope", null], ["stack:nollm", null], [null, null]] as const) {
      const r = resolveModel(table, openaiRoute, m, stack);
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.routable.sort()).toEqual(["groq/llama", "openai/gpt-4.1-mini"]);
    }
  });

  it("chains the fallbacks after the primary that this route can speak", () => {
    const r = resolveModel(table, openaiRoute, "openai/gpt-4.1-mini", null);
    if (!r.ok) throw new Error("unresolved");
    expect(fallbackChain(table, openaiRoute, r.target).map((t) => t.modelId)).toEqual(["groq/llama"]);
  });
});

describe("attribution, loopback, cooldown, model rewrite", () => {
  it("takes the path prefix over headers and refuses unstorable values", () => {
    expect(attributionOf({ project: "p", session: "s" }, { "x-voxgate-project": "h" })).toEqual({ ok: true, value: { project: "p", sessionId: "s" } });
    expect(attributionOf({}, {})).toEqual({ ok: true, value: { project: "default", sessionId: null } });
    expect(attributionOf({}, { "x-voxgate-project": "a".repeat(300) }).ok).toBe(false);
  });

  it("knows loopback peers (an unknown peer is not one)", () => {
    expect(["127.0.0.1", "::1", "::ffff:127.0.0.2"].every(isLoopback)).toBe(true);
    expect(["10.0.0.1", "::ffff:10.0.0.1", "192.168.1.1", null].some(isLoopback)).toBe(false);
  });

  it("bounds cooldowns and reads Retry-After", () => {
    let now = 1000;
    const c = new Cooldowns(5000, () => now);
    c.fail("a", "60");
    expect(c.remainingMs("a")).toBe(5000);
    now += 5001;
    expect(c.cooling("a")).toBe(false);
    expect(retryAfterMs("2", 0)).toBe(2000);
    expect(retryAfterMs(new Date(10_000).toUTCString(), 0)).toBe(10_000);
    expect(retryAfterMs("soon", 0)).toBeNull();
  });

  it("rewrites only the model value and adds keys without re-serialising", () => {
    const raw = Buffer.from('{ "model" : "stack:fast", "messages":[{"role":"user","content":"\\"model\\": \\"stack:fast\\""}]}');
    const json = JSON.parse(raw.toString()) as Record<string, unknown>;
    const out = withModel(raw, json, "llama", { stream_options: { include_usage: true } });
    expect(JSON.parse(String(out))).toEqual({ ...json, model: "llama", stream_options: { include_usage: true } });
    expect(withModel(raw, { ...json, model: "llama" }, "llama", {})).toBe(raw);
  });

  it("splices bytes: multi-byte text before the model, the bytes around it kept as sent", () => {
    const body = `{"messages":[{"role":"user","content":"naïve café — 日本語 ${"x".repeat(2000)}"}],\n  "model" :\t"stack:fast","stream":true}`;
    const raw = Buffer.from(body);
    const json = JSON.parse(body) as Record<string, unknown>;
    const out = withModel(raw, json, "llama-3.3-70b", {});
    expect(Buffer.isBuffer(out)).toBe(true);
    expect(String(out)).toBe(body.replace('"stack:fast"', '"llama-3.3-70b"'));
    const added = withModel(raw, json, "llama", { stream_options: { include_usage: true } });
    expect(String(added)).toBe(`{"stream_options":{"include_usage":true},${body.slice(1).replace('"stack:fast"', '"llama"')}`);
  });

  it("re-serialises when the model value is not found exactly once", () => {
    const twice = '{"model":"m","tools":[{"function":{"parameters":{"model":"m"}}}]}';
    const escaped = '{"model":"\\u006d"}'; // "m" spelled as an escape: not found as JSON.stringify writes it
    for (const body of [twice, escaped]) {
      const json = JSON.parse(body) as Record<string, unknown>;
      const out = withModel(Buffer.from(body), json, "vendor-m", {});
      expect(typeof out).toBe("string");
      expect(JSON.parse(String(out))).toEqual({ ...json, model: "vendor-m" });
    }
  });
});

describe("GatewayRecorder", () => {
  const rec = (i: number): GatewayRecord["record"] => ({ id: `${i}`, timestamp: 0, modality: "llm", model_id: "a/b" });

  it("drops and counts beyond its bound, keeps a failed batch, drains on stop", async () => {
    const written: GatewayRecord[] = [];
    let failing = true;
    const r = new GatewayRecorder(
      {
        async write(batch) {
          if (failing) throw new Error("store down");
          written.push(...batch);
        },
      },
      { limit: 3, log: silentLogger },
    );
    for (let i = 0; i < 5; i++) r.record(null, rec(i));
    expect(r.stats()).toMatchObject({ queued: 3, dropped: 2 });
    await r.flush();
    expect(r.stats()).toMatchObject({ queued: 3, failedWrites: 1 });
    failing = false;
    await r.stop();
    expect(written.map((w) => w.record.id)).toEqual(["0", "1", "2"]);
    expect(r.stats()).toMatchObject({ queued: 0, written: 3, dropped: 2 });
  });
});

describe("usageFromSlice (the JSON meter's usage block, read from a slice of the answer)", () => {
  const usage = { prompt_tokens: 7, completion_tokens: 3, prompt_tokens_details: { cached_tokens: 2, note: "a } and a \" inside" } };
  it("finds the last usage key and parses only its object, whatever the spacing", () => {
    const answer = { id: "x", choices: [{ message: { content: 'says "usage": {"prompt_tokens": 999} in its text' } }], usage, system_fingerprint: "fp" };
    expect(usageFromSlice(Buffer.from(JSON.stringify(answer)))).toEqual(usage);
    expect(usageFromSlice(Buffer.from(JSON.stringify(answer, null, 2)))).toEqual(usage);
  });
  it("gives undefined when there is no usage object to slice (the meter then parses the whole answer)", () => {
    expect(usageFromSlice(Buffer.from('{"id":"x","usage":null}'))).toBeUndefined();
    expect(usageFromSlice(Buffer.from('{"id":"x"}'))).toBeUndefined();
    expect(usageFromSlice(Buffer.from('{"usage":{"prompt_tokens":1'))).toBeUndefined();
    expect(usageFromSlice(Buffer.from('{"content":"only \\"usage\\": {\\"prompt_tokens\\": 5} quoted"}'))).toBeUndefined();
  });
});
