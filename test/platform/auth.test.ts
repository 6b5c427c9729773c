import { describe, expect, it } from "vitest";
import { allows, type AuthContext } from "../../src/auth/context.js";
import { useTestApp } from "../support/app.js";

const ctx = (over: Partial<AuthContext>): AuthContext => ({
  kind: "static",
  actor: "t",
  tenantId: null,
  scopes: ["*"],
  role: "admin",
  ...over,
});

describe("scope rules", () => {
  it("ingest admits telemetry writes only; write admits both; read only reads", () => {
    const ingest = ctx({ scopes: ["ingest"] });
    expect([allows(ingest, "ingest"), allows(ingest, "write"), allows(ingest, "read"), allows(ingest, "admin")]).toEqual([
      true,
      false,
      false,
      false,
    ]);
    const write = ctx({ scopes: ["write"] });
    expect([allows(write, "ingest"), allows(write, "write"), allows(write, "read")]).toEqual([true, true, false]);
    const read = ctx({ scopes: ["read"] });
    expect([allows(read, "read"), allows(read, "ingest")]).toEqual([true, false]);
  });

  it("a tenant-role * key is everything but admin; admin scope or an untenanted * key is admin", () => {
    const tenantStar = ctx({ kind: "virtual", scopes: ["*"], role: "tenant", tenantId: "acme" });
    expect([allows(tenantStar, "read"), allows(tenantStar, "write"), allows(tenantStar, "admin")]).toEqual([
      true,
      true,
      false,
    ]);
    expect(allows(ctx({ scopes: ["*"], role: "admin" }), "admin")).toBe(true);
    expect(allows(ctx({ scopes: ["admin"], role: "admin" }), "read")).toBe(true);
  });
});

describe("auth off (no keys configured)", () => {
  const t = useTestApp();

  it("the gate does nothing: admin routes answer without a key", async () => {
    expect((await t.call("GET", "/v1/api-keys")).status).toBe(200);
    expect((await t.call("GET", "/v1/api-keys", { key: "anything-at-all" })).status).toBe(200);
  });

  it("a minted key still carries its tenant, and a revoked one is refused", async () => {
    const minted = (await (await t.call("POST", "/v1/api-keys", { body: { name: "acme", tenant_id: "acme" } })).json()) as {
      id: string;
      plaintext: string;
    };
    expect((await t.call("GET", "/v1/api-keys", { key: minted.plaintext })).status).toBe(403);
    await t.call("DELETE", `/v1/api-keys/${minted.id}`);
    expect((await t.call("GET", "/v1/api-keys", { key: minted.plaintext })).status).toBe(401);
  });
});

describe("hostile credentials", () => {
  const t = useTestApp({ env: { VOXGATE_API_KEY: "the-only-key-0123456789" } });

  it("junk, SQL in the token, wrong scheme and lookalike vk_ keys are 401, never 500", async () => {
    const tokens = [
      "x",
      "' OR 1=1 --",
      "vk_' OR '1'='1",
      `vk_${"A".repeat(44)}`,
      `vk_${"A".repeat(10000)}`,
      "the-only-key-012345678",
      "the-only-key-0123456789x",
    ];
    for (const token of tokens) {
      const res = await t.call("GET", "/v1/api-keys", { key: token });
      expect(res.status, token).toBe(401);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("unauthorized");
    }
    for (const header of ["Basic dXNlcjpwYXNz", "the-only-key-0123456789", "Bearer", "Bearer a b"]) {
      const res = await t.call("GET", "/v1/api-keys", { headers: { authorization: header } });
      expect(res.status, header).toBe(401);
    }
    expect((await t.call("GET", "/v1/api-keys", { key: "the-only-key-0123456789" })).status).toBe(200);
  });

  it("errors never echo the presented key", async () => {
    const res = await t.call("GET", "/v1/api-keys", { key: "secret-looking-token-xyz" });
    expect(await res.text()).not.toContain("secret-looking-token-xyz");
  });
});
