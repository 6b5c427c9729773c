import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { compileCatalog, lookupCatalog } from "../../src/billing/catalog.js";
import { SHIPPED_CATALOG } from "../../src/billing/catalog-data.js";
import { type RatingInput, rateRequest } from "../../src/billing/rate.js";
import type { Modality } from "../../src/config/schema.js";

/**
 * Every model id the README, docs/ and examples/ use, and the current models voice agents use, has a
 * shipped catalog price: a call to any of them is rated, never `unknown` (cost 0) or `unrated`.
 */
const ROOT = join(import.meta.dirname, "../..");
const VENDORS = ["openai", "anthropic", "groq", "deepgram", "elevenlabs", "cartesia", "assemblyai", "gemini", "self-hosted"];
/** Path segments that follow a vendor prefix in URLs, not model names. */
const NOT_MODELS = new Set(["v1", "v1beta", "v3", "tts", "p"]);

function files(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    if (name === "node_modules" || name.startsWith(".")) continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) files(p, out);
    else if (/\.(md|ts|yaml|yml)$/.test(name)) out.push(p);
  }
  return out;
}

/** `<vendor>/<model>` ids in the examples; a `:<voice>` suffix (the LiveKit helpers' spec) is not part of the id. */
function exampleModelIds(): Map<string, string> {
  const ids = new Map<string, string>();
  const re = new RegExp(`(?<![\\w/.@-])(${VENDORS.join("|")})/([A-Za-z0-9][A-Za-z0-9._@-]*)`, "g");
  for (const file of [join(ROOT, "README.md"), ...files(join(ROOT, "docs")), ...files(join(ROOT, "examples"))]) {
    const text = readFileSync(file, "utf8");
    for (const m of text.matchAll(re)) {
      const model = (m[2] ?? "").replace(/[.:]+$/, "");
      if (NOT_MODELS.has(model) || model === "") continue;
      // Prices a doc shows as an override example are the reader's, not the catalog's; model ids in URLs too.
      if (text[(m.index ?? 0) + m[0].length] === "/") continue;
      ids.set(`${m[1]}/${model}`, file.slice(ROOT.length + 1));
    }
  }
  return ids;
}

/** The current voice-agent models of each supported vendor. */
const VOICE_MODELS: Array<[string, Modality]> = [
  ["deepgram/nova-3", "stt"],
  ["deepgram/aura-2-thalia-en", "tts"],
  ["deepgram/aura-2-apollo-en", "tts"],
  ["deepgram/aura-2-celeste-es", "tts"],
  ["openai/gpt-4o-transcribe", "stt"],
  ["openai/gpt-4o-mini-transcribe", "stt"],
  ["openai/gpt-4o-mini-tts", "tts"],
  ["elevenlabs/eleven_flash_v2_5", "tts"],
  ["elevenlabs/eleven_turbo_v2_5", "tts"],
  ["elevenlabs/eleven_multilingual_v2", "tts"],
  ["cartesia/sonic-2", "tts"],
  ["cartesia/sonic-3", "tts"],
  ["assemblyai/universal-streaming-english", "stt"],
  ["assemblyai/universal-streaming-multilingual", "stt"],
  ["gemini/gemini-2.5-flash", "llm"],
  ["gemini/gemini-2.5-flash-lite", "llm"],
];

const catalog = compileCatalog({});
const UNITS: Record<Modality, Partial<RatingInput>> = {
  llm: { inputTokens: 1000, outputTokens: 100 },
  stt: { audioSeconds: 60 },
  tts: { characters: 1000 },
};

function rating(modelId: string, modality: Modality) {
  const provider = modelId.slice(0, modelId.indexOf("/"));
  const input: RatingInput = {
    modality,
    modelId,
    provider,
    tenantId: null,
    status: "success",
    inputTokens: null,
    outputTokens: null,
    cachedInputTokens: null,
    audioSeconds: null,
    characters: null,
    costUsd: null,
    ...UNITS[modality],
  };
  return rateRequest(input, { defaultMarkup: 1.25 }, catalog);
}

describe("catalog coverage", () => {
  it("every model id of the README, docs/ and examples/ is priced (never unknown or unrated)", () => {
    const ids = exampleModelIds();
    expect(ids.size).toBeGreaterThan(5);
    const unpriced: string[] = [];
    for (const [id, file] of ids) {
      const modality = (["llm", "stt", "tts"] as const).find((m) => lookupCatalog(catalog, id, id.split("/")[0] ?? "", m) !== null);
      const r = modality ? rating(id, modality) : null;
      if (r?.pricing !== "priced") unpriced.push(`${id} (${file}): ${r?.pricing ?? "unknown"}`);
    }
    expect(unpriced).toEqual([]);
  });

  it("the current voice-agent models of every vendor are priced, with a source and the date it was read", () => {
    for (const [id, modality] of VOICE_MODELS) {
      const r = rating(id, modality);
      expect({ id, pricing: r.pricing }).toEqual({ id, pricing: "priced" });
      expect(r.costUsd).toBeGreaterThan(0);
      const entry = lookupCatalog(catalog, id, id.split("/")[0] ?? "", modality);
      expect(entry?.source, id).toBeTruthy();
      expect(entry?.asOf, id).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    }
  });

  it("every shipped entry names its source and date", () => {
    for (const [key, e] of Object.entries(SHIPPED_CATALOG)) {
      expect(e.source, key).toBeTruthy();
      expect(e.as_of, key).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    }
  });

  it("Aura-2 voices take the aura-2 price, Aura-1 voices the aura price; an exact key wins over a prefix", () => {
    expect(rating("deepgram/aura-2-thalia-en", "tts").costUsd).toBe(0.03);
    expect(rating("deepgram/aura-asteria-en", "tts").costUsd).toBe(0.015);
    expect(rating("deepgram/nova-3", "stt").costUsd).toBe(0.0077);
  });
});
