import { beforeAll, describe, expect, it } from "vitest";
import { useTestApp } from "../support/app.js";
import { http, json } from "./http.js";

// A tenant-bound admin key manages its own tenant's keys only.
const OPERATOR = "operator-admin-key-0123456789";
const A_ADMIN = "tenant-a-admin-key-0123456789";
const A_READ = "tenant-a-reader-key-0123456789";

const yaml = `
auth:
  api_keys:
    - ${OPERATOR}
    - { key: ${A_ADMIN}, scopes: [admin], tenant_id: a }
    - { key: ${A_READ}, scopes: [read], tenant_id: a }
`;

interface KeyRow {
  id: string;
  tenant_id: string | null;
  plaintext?: string;
  key_prefix: string;
}

describe("a tenant-bound admin key stays in its tenant", () => {
  let b: KeyRow;
  let operatorKey: KeyRow;
  const t = useTestApp({ yaml });
  beforeAll(async () => {
    b = await json<KeyRow>(http(t, "POST", "/v1/api-keys", { key: OPERATOR, body: { name: "b agents", tenant_id: "b" } }), 201);
    operatorKey = await json<KeyRow>(http(t, "POST", "/v1/api-keys", { key: OPERATOR, body: { name: "ops", role: "admin" } }), 201);
  });

  it("lists only its own tenant's keys", async () => {
    const mine = await json<KeyRow>(http(t, "POST", "/v1/api-keys", { key: A_ADMIN, body: { name: "a agents" } }), 201);
    expect(mine.tenant_id).toBe("a");
    const list = await json<KeyRow[]>(http(t, "GET", "/v1/api-keys", { key: A_ADMIN }), 200);
    expect(list.map((k) => k.id)).toEqual([mine.id]);
    expect(JSON.stringify(list)).not.toContain(b.key_prefix);
    expect(JSON.stringify(list)).not.toContain(operatorKey.key_prefix);
    // The operator still sees every tenant's keys.
    const all = await json<KeyRow[]>(http(t, "GET", "/v1/api-keys", { key: OPERATOR }), 200);
    expect(all.map((k) => k.id)).toEqual(expect.arrayContaining([mine.id, b.id, operatorKey.id]));
  });

  it("answers another tenant's key exactly like a missing one, on get and on revoke", async () => {
    const missing = await http(t, "GET", "/v1/api-keys/key_doesnotexist", { key: A_ADMIN });
    const foreign = await http(t, "GET", `/v1/api-keys/${b.id}`, { key: A_ADMIN });
    expect(foreign.status).toBe(404);
    expect((await foreign.json()) as unknown).toEqual(await missing.json());
    expect((await http(t, "GET", `/v1/api-keys/${operatorKey.id}`, { key: A_ADMIN })).status).toBe(404);

    const revoke = await http(t, "DELETE", `/v1/api-keys/${b.id}`, { key: A_ADMIN });
    expect(revoke.status).toBe(404);
    // b's key still works and is not revoked.
    expect((await http(t, "GET", "/v1/costs", { key: b.plaintext })).status).toBe(200);
    const row = await json<{ revoked_at: string | null }>(http(t, "GET", `/v1/api-keys/${b.id}`, { key: OPERATOR }), 200);
    expect(row.revoked_at).toBeNull();
  });

  it("mints in its own tenant only, and its read keys never see another tenant's key details in the audit log", async () => {
    expect((await http(t, "POST", "/v1/api-keys", { key: A_ADMIN, body: { name: "x", tenant_id: "b" } })).status).toBe(403);
    const b2 = await json<KeyRow>(http(t, "POST", "/v1/api-keys", { key: OPERATOR, body: { name: "b second", tenant_id: "b" } }), 201);
    await http(t, "DELETE", `/v1/api-keys/${b2.id}`, { key: A_ADMIN });
    const own = await json<KeyRow>(http(t, "POST", "/v1/api-keys", { key: A_ADMIN, body: { name: "y" } }), 201);
    expect(own.tenant_id).toBe("a");
    await json(http(t, "DELETE", `/v1/api-keys/${own.id}`, { key: A_ADMIN }), 204);
    const audit = await json<{ entity_id: string; tenant_id: string | null }[]>(http(t, "GET", "/v1/audit-log?limit=500", { key: A_READ }), 200);
    expect(audit.length).toBeGreaterThan(0);
    expect(audit.every((e) => e.tenant_id === "a")).toBe(true);
    expect(JSON.stringify(audit)).not.toContain(b.id);
    expect(JSON.stringify(audit)).not.toContain(b.key_prefix);
    expect(JSON.stringify(audit)).not.toContain(b2.id);
  });
});
