import { describe, expect, it } from "vitest";
import { useTestApp } from "../support/app.js";
import { authYaml, KEYS } from "../support/fixtures.js";

const ADMIN = KEYS.ops;
const READER = KEYS.reader;
const ACME_WRITER = KEYS.acmeWriter;

const yaml = authYaml("ops", "reader", "acmeWriter");

describe("virtual API keys", () => {
  const t = useTestApp({ yaml });

  it("mints a vk_ key with 201, returns the plaintext once and never the hash", async () => {
    const res = await t.call("POST", "/v1/api-keys", { key: ADMIN, body: { name: "agent fleet", tenant_id: "acme" } });
    expect(res.status).toBe(201);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body.plaintext).toMatch(/^vk_[0-9A-Za-z]{44}$/);
    expect(body.tenant_id).toBe("acme");
    expect(body.role).toBe("tenant");
    expect(body.scopes).toEqual(["*"]);
    expect(String(body.plaintext).startsWith(String(body.key_prefix))).toBe(true);
    expect(JSON.stringify(body)).not.toMatch(/\$2[aby]\$/);

    const list = (await (await t.call("GET", "/v1/api-keys", { key: ADMIN })).json()) as Record<string, unknown>[];
    const text = JSON.stringify(list);
    expect(text).not.toContain(String(body.plaintext));
    expect(text).not.toMatch(/\$2[aby]\$/);
    expect(list.some((k) => k.id === body.id)).toBe(true);
  });

  it("authenticates with a minted key, and refuses it at once after revoke (204, row kept)", async () => {
    const minted = (await (await t.call("POST", "/v1/api-keys", { key: ADMIN, body: { name: "temp" } })).json()) as {
      id: string;
      plaintext: string;
    };
    // The minted key works on an authenticated route (a tenant-role key cannot list keys: 403, not 401).
    expect((await t.call("GET", "/v1/api-keys", { key: minted.plaintext })).status).toBe(403);

    const del = await t.call("DELETE", `/v1/api-keys/${minted.id}`, { key: ADMIN });
    expect(del.status).toBe(204);
    expect((await t.call("GET", "/v1/api-keys", { key: minted.plaintext })).status).toBe(401);

    const row = (await (await t.call("GET", `/v1/api-keys/${minted.id}`, { key: ADMIN })).json()) as {
      revoked_at: string | null;
    };
    expect(row.revoked_at).not.toBeNull();
    const active = (await (await t.call("GET", "/v1/api-keys?include_revoked=false", { key: ADMIN })).json()) as {
      id: string;
    }[];
    expect(active.some((k) => k.id === minted.id)).toBe(false);
  });

  it("404s for a missing key id in the error envelope", async () => {
    const res = await t.call("GET", "/v1/api-keys/key_nope", { key: ADMIN });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: { code: "not_found", message: expect.any(String) } });
  });

  it("requires admin: 401 without a key, 403 for read and tenant keys", async () => {
    expect((await t.call("GET", "/v1/api-keys")).status).toBe(401);
    expect((await t.call("GET", "/v1/api-keys", { key: "junk" })).status).toBe(401);
    expect((await t.call("GET", "/v1/api-keys", { key: READER })).status).toBe(403);
    expect((await t.call("POST", "/v1/api-keys", { key: ACME_WRITER, body: { name: "x" } })).status).toBe(403);
  });

  it("a tenant-role vk_ key cannot mint keys", async () => {
    const minted = (await (await t.call("POST", "/v1/api-keys", { key: ADMIN, body: { name: "t", tenant_id: "globex" } })).json()) as {
      plaintext: string;
    };
    const res = await t.call("POST", "/v1/api-keys", { key: minted.plaintext, body: { name: "escalate", role: "admin" } });
    expect(res.status).toBe(403);
  });

  it("rejects bad bodies with 400/422 and writes nothing", async () => {
    const before = ((await (await t.call("GET", "/v1/api-keys", { key: ADMIN })).json()) as unknown[]).length;
    expect((await t.call("POST", "/v1/api-keys", { key: ADMIN, raw: "{not json", headers: { "content-type": "application/json" } })).status).toBe(400);
    const missing = await t.call("POST", "/v1/api-keys", { key: ADMIN, body: { tenant_id: "acme" } });
    expect(missing.status).toBe(422);
    expect(((await missing.json()) as { error: { details: { path: string }[] } }).error.details[0]?.path).toBe("name");
    expect((await t.call("POST", "/v1/api-keys", { key: ADMIN, body: { name: 5 } })).status).toBe(422);
    expect((await t.call("POST", "/v1/api-keys", { key: ADMIN, body: [] })).status).toBe(422);
    const after = ((await (await t.call("GET", "/v1/api-keys", { key: ADMIN })).json()) as unknown[]).length;
    expect(after).toBe(before);
  });
});
