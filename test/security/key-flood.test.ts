import { randomUUID } from "node:crypto";
import bcrypt from "bcryptjs";
import { eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { randomBase62 } from "../../src/auth/virtual-keys.js";
import { apiKeys } from "../../src/db/schema/index.js";
import { type TestApp, useTestApp } from "../support/app.js";
import { KEYS, OPS_YAML } from "../support/fixtures.js";
import { captureLogger } from "../support/log.js";
import { http, json } from "./http.js";

// Wrong vk_ tokens that carry a real key's public prefix cannot make the server do
// slow work; failures are counted in /v1/metrics and logged at warn, rate-limited.
const OPERATOR = KEYS.ops;
const FLOOD = 200;
const IN_FLIGHT = 32;

/** Sends `count` requests with at most `inFlight` outstanding; answers the status counts. */
async function flood(t: TestApp, tokenFor: (i: number) => string, count = FLOOD, inFlight = IN_FLIGHT): Promise<Record<number, number>> {
  const statuses: Record<number, number> = {};
  let next = 0;
  const lane = async () => {
    while (next < count) {
      const i = next++;
      const res = await http(t, "GET", "/v1/costs", { key: tokenFor(i) });
      await res.arrayBuffer();
      statuses[res.status] = (statuses[res.status] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return statuses;
}

function failures(metrics: string): number {
  const m = /^voxgate_auth_failures_total\{credential="virtual"\} (\d+)$/m.exec(metrics);
  if (!m?.[1]) throw new Error(`no voxgate_auth_failures_total{credential="virtual"} in /v1/metrics:\n${metrics}`);
  return Number(m[1]);
}

describe("a flood of wrong vk_ tokens for a known prefix", () => {
  const captured = captureLogger();
  let valid: { id: string; plaintext: string; key_prefix: string };
  const t = useTestApp({ yaml: OPS_YAML, log: captured.log });
  beforeAll(async () => {
    valid = await json(http(t, "POST", "/v1/api-keys", { key: OPERATOR, body: { name: "agents", tenant_id: "acme" } }), 201);
  });

  it("stores a digest, never a slow hash, so a wrong token costs one hash and one index probe", async () => {
    const [row] = await t.services.database.db.select().from(apiKeys).where(eq(apiKeys.id, valid.id));
    expect(row?.keyHash).toBeNull();
    expect(row?.keyDigest).toMatch(/^[0-9a-f]{64}$/);
  });

  it("refuses every forged token, keeps serving the real key, counts each failure and logs them rate-limited", async () => {
    const before = failures(await (await http(t, "GET", "/v1/metrics", { key: OPERATOR })).text());
    const statuses = await flood(t, () => valid.key_prefix + randomBase62(32));
    expect(statuses).toEqual({ 401: FLOOD });
    expect((await http(t, "GET", "/v1/costs", { key: valid.plaintext })).status).toBe(200);

    const after = failures(await (await http(t, "GET", "/v1/metrics", { key: OPERATOR })).text());
    expect(after - before).toBe(FLOOD);
    const warns = captured.lines.filter((l) => l.includes('"level":40') && l.includes("authentication failed"));
    // Logged at warn, but rate-limited (one line per interval, not one per request), naming the
    // public prefix being guessed at and never any secret part of a token.
    expect(warns.length).toBeGreaterThanOrEqual(1);
    expect(warns.length).toBeLessThan(FLOOD / 10);
    expect(warns[0]).toContain(valid.key_prefix);
    expect(captured.lines.join("\n")).not.toContain(valid.plaintext);
  });

  it("a tenant key does not see the service's failure counters", async () => {
    const metrics = await (await http(t, "GET", "/v1/metrics", { key: valid.plaintext })).text();
    expect(metrics).not.toContain("voxgate_auth_failures_total");
  });

  it("a key minted before digests (bcrypt row) still works, gains its digest on first use, and a flood on its prefix is refused", async () => {
    const plaintext = `vk_${randomBase62(44)}`;
    const id = `key_${randomUUID().replaceAll("-", "")}`;
    await t.services.database.db.insert(apiKeys).values({
      id,
      name: "legacy",
      tenantId: "acme",
      keyPrefix: plaintext.slice(0, 15),
      keyHash: await bcrypt.hash(plaintext, 4),
      scopes: ["*"],
      role: "tenant",
    });
    // Forged tokens on the legacy prefix: all refused (most without any bcrypt work: one compare at a time per prefix).
    expect(await flood(t, () => plaintext.slice(0, 15) + randomBase62(32), 64)).toEqual({ 401: 64 });
    // The real key gets through once the prefix's back-off has passed (the flood has stopped), and is
    // then digest-verified.
    const prefix = plaintext.slice(0, 15);
    while (t.services.virtualKeys.legacy.throttled(prefix)) await new Promise((r) => setTimeout(r, 100));
    const status = (await http(t, "GET", "/v1/costs", { key: plaintext })).status;
    expect(status).toBe(200);
    const [row] = await t.services.database.db.select().from(apiKeys).where(eq(apiKeys.id, id));
    expect(row?.keyDigest).toMatch(/^[0-9a-f]{64}$/);
    // From now on a flood on this prefix meets the digest row: refused without bcrypt.
    expect(await flood(t, () => plaintext.slice(0, 15) + randomBase62(32), 32)).toEqual({ 401: 32 });
    expect((await http(t, "GET", "/v1/costs", { key: plaintext })).status).toBe(200);
  });
});
