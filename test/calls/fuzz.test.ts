import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { useTestApp } from "../support/app.js";
import { authYaml, KEYS, LIVEKIT_ENV } from "../support/fixtures.js";
import { countOf, exampleEvents, signBody } from "./support.js";

const KEY = KEYS.acmeIngest;
const yaml = `
serve: { body_limit_bytes: 1048576 }
${authYaml("acmeIngest")}`;

/** Deterministic PRNG (mulberry32) so a failure reproduces. */
function prng(seed: number) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FIELDS = ["origin", "room_sid", "attempt_id", "room_name", "legs", "started_at_ms", "ended_at_ms", "participant_sid", "kind", "event", "id", "room", "participant", "sid", "createdAt", "joinedAtMs", "attributes", "track", "tenant_id", "is_probe", "__proto__", "constructor"];

function randomValue(rnd: () => number, depth = 0): unknown {
  const r = rnd();
  if (depth > 4 || r < 0.3) {
    const pick = Math.floor(rnd() * 12);
    return [
      null,
      true,
      -1767225600000,
      1767225600,
      1767225600000 + Math.floor(rnd() * 1e6),
      1767225600000000,
      1e308,
      "RM_fuzz",
      "x".repeat(Math.floor(rnd() * 3000)),
      "\u0000\ud800",
      "SIP",
      "participant_left",
    ][pick];
  }
  if (r < 0.55) return Array.from({ length: Math.floor(rnd() * 5) }, () => randomValue(rnd, depth + 1));
  const o: Record<string, unknown> = {};
  for (let i = Math.floor(rnd() * 6); i > 0; i--) o[FIELDS[Math.floor(rnd() * FIELDS.length)] ?? "x"] = randomValue(rnd, depth + 1);
  return o;
}

/** Mutates a valid report/event a little, so fuzzing reaches past the first check. */
function mutate(rnd: () => number, base: Record<string, unknown>): Record<string, unknown> {
  const o: Record<string, unknown> = JSON.parse(JSON.stringify(base));
  const keys = Object.keys(o);
  const k = rnd() < 0.7 ? (keys[Math.floor(rnd() * keys.length)] ?? "x") : (FIELDS[Math.floor(rnd() * FIELDS.length)] ?? "x");
  o[k] = randomValue(rnd);
  return o;
}

describe("fuzzing the call routes: 4xx, alive, nothing partially written", () => {
  const t = useTestApp({ yaml, env: LIVEKIT_ENV });

  const counts = async () => ({ calls: await countOf(t, "calls"), legs: await countOf(t, "call_legs"), events: await countOf(t, "call_events") });

  it("signed random and mutated webhook events never 500, and refused ones write nothing", async () => {
    const rnd = prng(38);
    const ev = exampleEvents("RM_fuzzbase");
    const bases = [ev.roomStarted, ev.sipJoined, ev.trackPublished, ev.sipLeft, ev.webAborted, ev.roomFinished] as Record<string, unknown>[];
    for (let i = 0; i < 300; i++) {
      const base = bases[i % bases.length] ?? {};
      const value = i % 3 === 0 ? randomValue(rnd) : { ...mutate(rnd, base), id: `EV_fuzz_${i}` };
      const raw = JSON.stringify(value) ?? "null";
      const before = await counts();
      const res = await t.call("POST", "/v1/livekit/webhook", {
        raw,
        headers: { authorization: await signBody(raw), "content-type": "application/webhook+json" },
      });
      expect(res.status, raw.slice(0, 300)).not.toBeGreaterThanOrEqual(500);
      if (res.status >= 400) {
        expect(((await res.json()) as { error: { code: string } }).error.code).toBeTypeOf("string");
        expect(await counts()).toEqual(before);
      }
    }
    expect((await t.call("GET", "/health")).status).toBe(200);
  });

  it("random and mutated observations never 500, and the flusher never fails on what was accepted", async () => {
    const rnd = prng(39);
    const base = { origin: "agent", room_sid: "RM_fuzzobs", started_at_ms: 1767225600000, legs: [{ participant_sid: "PA_f", kind: "SIP", joined_at_ms: 1767225600000 }] };
    for (let i = 0; i < 300; i++) {
      const value = i % 2 === 0 ? randomValue(rnd) : mutate(rnd, base);
      const res = await t.call("POST", "/v1/calls/observations", { key: KEY, raw: JSON.stringify(value) ?? "null", headers: { "content-type": "application/json" } });
      expect(res.status).not.toBeGreaterThanOrEqual(500);
      expect([202, 400, 422]).toContain(res.status);
    }
    await t.services.callObservations.flushed();
    expect(t.services.callObservations.stats().failed).toBe(0);
    expect((await t.call("GET", "/health")).status).toBe(200);
  });

  it("hostile bodies: deep nesting, huge strings, big arrays, invalid UTF-8, gzip bombs, NUL and lone surrogates", async () => {
    const deep = (n: number) => `${"[".repeat(n)}${"]".repeat(n)}`;
    const hostile: { name: string; raw: string | Uint8Array; gzip?: boolean }[] = [
      { name: "deep array", raw: deep(100_000) },
      { name: "deep in an event", raw: `{"event":"room_started","id":"EV_deep","room":{"sid":"RM_deep"},"x":${deep(50_000)}}` },
      { name: "deep in a report", raw: `{"origin":"agent","room_sid":"RM_deep","legs":${deep(50_000)}}` },
      { name: "huge string", raw: JSON.stringify({ event: "room_started", id: "EV_huge", origin: "agent", room_sid: "RM_huge", room: { sid: "RM_huge", name: "n".repeat(900_000) }, room_name: "n".repeat(900_000) }) },
      { name: "10k legs", raw: JSON.stringify({ origin: "agent", room_sid: "RM_10k", legs: Array.from({ length: 10_000 }, (_, i) => ({ participant_sid: `PA_${i}` })) }) },
      { name: "10k attributes", raw: JSON.stringify({ event: "participant_joined", id: "EV_attrs", room: { sid: "RM_attrs" }, participant: { sid: "PA_attrs", attributes: Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`k${i}`, "v"])) } }) },
      { name: "invalid UTF-8", raw: new Uint8Array([0x7b, 0x22, 0x65, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]) },
      { name: "NUL", raw: JSON.stringify({ event: "room_started", id: "EV_nul", origin: "agent", room_sid: "RM_\u0000", room: { sid: "RM_nul", name: "a\u0000b" } }) },
      { name: "lone surrogate", raw: '{"event":"room_started","id":"EV_sur","origin":"agent","room_sid":"RM_\\ud800","room":{"sid":"RM_sur","name":"\\udc00"}}' },
      { name: "far-future webhook time", raw: JSON.stringify({ event: "room_finished", id: "EV_future", room: { sid: "RM_future" }, createdAt: "9223372036854775807" }) },
      { name: "negative webhook time", raw: JSON.stringify({ event: "room_finished", id: "EV_neg", room: { sid: "RM_neg" }, createdAt: -1767225600 }) },
      { name: "gzip bomb", raw: gzipSync(Buffer.alloc(64 * 1024 * 1024, 0x20)), gzip: true },
      { name: "not gzip", raw: "definitely not gzip", gzip: true },
    ];
    for (const h of hostile) {
      const before = await counts();
      const depth = t.services.callObservations.counters().queued;
      const headers = (extra: Record<string, string>) => ({ "content-type": "application/json", ...(h.gzip ? { "content-encoding": "gzip" } : {}), ...extra });
      const wh = await t.call("POST", "/v1/livekit/webhook", { raw: h.raw, headers: headers({ authorization: await signBody(h.raw) }) });
      expect(wh.status, `webhook: ${h.name}`).toBeGreaterThanOrEqual(400);
      expect(wh.status, `webhook: ${h.name}`).toBeLessThan(500);
      const ob = await t.call("POST", "/v1/calls/observations", { raw: h.raw, headers: headers({ authorization: `Bearer ${KEY}` }) });
      expect(ob.status, `observation: ${h.name}`).toBeGreaterThanOrEqual(400);
      expect(ob.status, `observation: ${h.name}`).toBeLessThan(500);
      expect(await counts(), h.name).toEqual(before);
      expect(t.services.callObservations.counters().queued).toBe(depth);
    }
    expect((await t.call("GET", "/health")).status).toBe(200);
  });
});
