import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { fastValidator } from "../../src/ingest/record-fast.js";
import { isStorableJson, jsonFits } from "../../src/ingest/fields.js";
import { fastRecord, fastRecordInPlace, requestRecordSchema } from "../../src/ingest/records.js";

const now = Date.now();

function valid(): Record<string, unknown> {
  return {
    id: randomUUID().toUpperCase(),
    timestamp: now / 1000,
    modality: "llm",
    model_id: "openai/gpt-4.1-mini",
    project: "p",
    session_id: "s1",
    room_name: "room",
    agent_id: "agent",
    status: "success",
    ttfb_ms: 120.5,
    total_latency_ms: 400,
    cost_usd: 0.000123,
    input_tokens: 350,
    output_tokens: 60,
    cached_input_tokens: 0,
    is_probe: false,
    cached_input_units: 10,
    revision: "r3",
    turn_index: 2,
    pricing_source: "catalog",
    unknown_key: { ignored: true },
  };
}

/** Values each field gets in turn: good, borderline and bad ones, so both paths see every shape. */
const VARIANTS: Record<string, unknown[]> = {
  id: [randomUUID(), "not-a-uuid", 42, null, undefined, `${randomUUID()}x`],
  timestamp: [now, now / 1000, new Date(now).toISOString(), "2026-13-45", "x".repeat(65), 1e20, -5, 0, Number.NaN, now + 25 * 3600_000, now + 23 * 3600_000, 946684800000, 946684799999, null, true],
  modality: ["stt", "tts", "llm", "video", "", null, undefined, 3],
  model_id: ["m", "", "x".repeat(256), "x".repeat(257), "a\u0000b", "\ud800", 5, null, undefined],
  status: ["success", "error", "fallback", "ok", null, undefined, 1],
  error_message: ["boom", "", "x".repeat(4096), "x".repeat(4097), "\udc00", null, 7],
  fallback_from: ["a", "", null, 9],
  provider: ["openai", "", "x".repeat(257), null, {}],
  project: ["p", "", null, []],
  session_id: ["s", "", "\u0000", null],
  room_name: ["r", null, false],
  agent_id: ["a", null, 1],
  ttfb_ms: [0, -0, 1.5, -1, Number.POSITIVE_INFINITY, "5", null],
  total_latency_ms: [0, 1e12, -0.1, null, "x"],
  cost_usd: [0, 1e9, 1e9 + 1, -1, null, "0.1"],
  input_tokens: [0, 1, 1.5, -1, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER + 1, 2 ** 60, null, "1"],
  output_tokens: [0, 2.5, null],
  cached_input_tokens: [0, -3, null],
  audio_seconds: [0, 3.2, -1, null],
  characters: [140, 1.1, null],
  input_units: [0, 2.5, Number.MAX_SAFE_INTEGER + 2, -1, null],
  output_units: [0, 40, -2, null],
  metadata: [
    { a: 1 },
    {},
    { nested: { b: [1, "two"] } },
    null,
    [],
    "x",
    { big: "x".repeat(17 * 1024) },
    // At the 16 KiB cap exactly (`{"a":"…"}`), one character over, and over only once escaped.
    { a: "x".repeat(16 * 1024 - 8) },
    { a: "x".repeat(16 * 1024 - 7) },
    { a: "\n".repeat(9000) },
    { a: '"'.repeat(5000), n: [1.5, -0.000001234567890123456, null, true] },
    { d: new Date(0) },
    { "\u0000": 1 },
    { a: "\ud800" },
    { deep: [{ k: ["\ud800"] }] },
    new Map(),
  ],
  is_probe: [true, false, null, "true", 0],
  cached_input_units: [0, 12.5, -1, null, "3"],
  revision: ["v1", 7, 1.5, -1, "", "\u0000", null, {}],
  turn_index: [0, 3, 2 ** 31, -1, 1.5, null, "1"],
  pricing_source: ["catalog", "", "x".repeat(257), null, 3],
};

/** What the schema decides: the parsed record, or null when it refuses. */
function viaSchema(raw: unknown) {
  const parsed = requestRecordSchema.safeParse(raw);
  return parsed.success ? parsed.data : null;
}

describe("fastRecord agrees with requestRecordSchema", () => {
  it("parses a well-formed record exactly as the schema does (unknown keys dropped, timestamp a Date)", () => {
    const raw = valid();
    const fast = fastRecord(raw, now);
    expect(fast).not.toBeNull();
    expect(fast).toEqual(viaSchema(raw));
    expect(fast && "unknown_key" in fast).toBe(false);
  });

  it("never accepts what the schema refuses, and when it accepts gives the same record", () => {
    let accepted = 0;
    let cases = 0;
    for (const [key, values] of Object.entries(VARIANTS)) {
      for (const value of values) {
        for (const modality of ["llm", "stt", "tts"]) {
          const raw = { ...valid(), modality, [key]: value };
          if (value === undefined) delete raw[key];
          const fast = fastRecord(raw, now);
          const slow = viaSchema(raw);
          cases++;
          // Ingest reads the record in place (no copy): the same answer as the copy.
          expect(fastRecordInPlace(raw, now), `${key}=${String(value)}`).toEqual(fast);
          if (fast === null) continue; // the caller runs the schema: same answer by construction
          accepted++;
          expect(slow, `${key}=${String(value)}`).not.toBeNull();
          expect(fast, `${key}=${String(value)}`).toEqual(slow);
        }
      }
    }
    // Most variants are well-formed or refused; the fast path must carry the well-formed ones.
    expect(accepted).toBeGreaterThan(cases / 3);
  });

  it("leaves non-plain inputs to the schema", () => {
    for (const raw of [null, undefined, 1, "x", [], [valid()], new Map()]) {
      expect(fastRecord(raw, now)).toBeNull();
      expect(fastRecordInPlace(raw, now)).toBeNull();
    }
  });

  it("is derived from the schema: every field of it has a zod-free reading", () => {
    expect([...fastValidator(requestRecordSchema.shape).keys].sort()).toEqual(Object.keys(requestRecordSchema.shape).sort());
  });

  it("a field whose type it cannot read sends records naming it to the schema (never dropped)", () => {
    const schema = requestRecordSchema.extend({ note: z.string().max(3).nullish() });
    const v = fastValidator(schema.shape);
    expect(v.keys.has("note")).toBe(false);
    expect(v.parse({ ...valid() }, now)).not.toBeNull();
    expect(v.parse({ ...valid(), note: "abc" }, now)).toBeNull();
  });

  it("checks a typed record by the same rules without parsing it", () => {
    const v = fastValidator(requestRecordSchema.shape);
    const typed = { ...valid(), timestamp: now, metadata: { via: "gateway" } };
    expect(v.check(typed, now)).toBe(true);
    expect(v.check({ ...typed, timestamp: new Date(now) }, now)).toBe(true);
    for (const [key, values] of Object.entries(VARIANTS)) {
      if (key === "timestamp") continue;
      for (const value of values) {
        const raw = { ...typed, [key]: value };
        const slow = viaSchema({ ...raw, timestamp: now });
        if (v.check(raw, now)) expect(slow, `${key}=${String(value)}`).not.toBeNull();
      }
    }
    expect(v.check({ ...typed, timestamp: now + 3_600_000 }, now)).toBe(false);
    expect(v.check({ ...typed, model_id: "x".repeat(257) }, now)).toBe(false);
  });

  it("at the very edge of the future-skew window defers to the schema", () => {
    expect(fastRecord({ ...valid(), timestamp: now + 24 * 3600_000 - 1000 }, now)).toBeNull();
  });
});

describe("jsonFits", () => {
  it("answers as the JSON text's length and isStorableJson do, with or without building the text", () => {
    const values: unknown[] = [
      {},
      { a: 1, b: [true, null, "x"], c: { d: -1.7976931348623157e308 } },
      { a: "x".repeat(100) },
      { a: "x".repeat(200) },
      { a: "\u0001".repeat(40) },
      { a: "é😀".repeat(20) },
      { "k\u0000": 1 },
      { a: ["\udc00"] },
      { d: new Date(0), m: new Map([[1, 2]]) },
      { f: () => 1, u: undefined },
      { toJSON: () => "x".repeat(500) },
      Object.assign(Object.create(null), { a: "x" }),
      [1, [2, [3, "four"]]],
    ];
    for (const max of [0, 10, 60, 150, 250, 1000, 16 * 1024]) {
      for (const v of values) expect(jsonFits(v, max), `${JSON.stringify(v)} within ${max}`).toBe(JSON.stringify(v).length <= max && isStorableJson(v));
    }
  });

  it("fails as JSON.stringify does on a value it cannot spell (a cycle, a bigint)", () => {
    const cycle: Record<string, unknown> = { a: "x" };
    cycle.self = cycle;
    expect(() => jsonFits(cycle, 16 * 1024)).toThrow(TypeError);
    expect(() => jsonFits({ n: 1n }, 16 * 1024)).toThrow(TypeError);
  });
});
