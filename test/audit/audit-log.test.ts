import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { auditLog, projects, providers } from "../../src/db/schema/index.js";
import { useTestApp } from "../support/app.js";
import { ACME_READER, ADMIN, INGESTER, READER, SECRET_ENV, WRITER, json, manageYaml } from "../manage/fixtures.js";

interface Entry {
  id: number;
  ts: string;
  actor: string;
  tenant_id: string | null;
  entity_type: string;
  entity_id: string;
  action: string;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
}

const KEY = "sk-audited-provider-key-0123456789";

describe("GET /v1/audit-log", () => {
  const t = useTestApp({ yaml: manageYaml(), env: SECRET_ENV });
  beforeAll(async () => {
    await t.call("POST", "/v1/projects", { key: WRITER, body: { project_id: "p1", name: "One" } });
    await t.call("PATCH", "/v1/projects/p1", { key: WRITER, body: { name: "Uno" } });
    await t.call("POST", "/v1/providers", { key: ADMIN, body: { provider_id: "prov", provider_type: "openai", api_key: KEY } });
    await t.call("PATCH", "/v1/providers/prov", { key: ADMIN, body: { api_key: `${KEY}-2` } });
    await t.call("POST", "/v1/models", { key: WRITER, body: { modality: "llm", provider_id: "prov", model_name: "m" } });
    await t.call("DELETE", "/v1/projects/p1?confirm=true", { key: WRITER });
  });

  it("lists every change newest first with actor, tenant, before/after, secrets masked", async () => {
    const res = await t.call("GET", "/v1/audit-log", { key: READER });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).not.toContain(KEY);
    expect(text).not.toContain("vgk:");
    const entries = JSON.parse(text) as Entry[];
    expect(entries.map((e) => `${e.action}:${e.entity_type}:${e.entity_id}`)).toEqual([
      "delete:project:p1",
      "create:model:prov/m",
      "update:provider:prov",
      "create:provider:prov",
      "update:project:p1",
      "create:project:p1",
    ]);
    const upd = entries.find((e) => e.action === "update" && e.entity_type === "project");
    expect(upd).toMatchObject({ actor: expect.stringMatching(/^static:/), tenant_id: null, before: { name: "One" }, after: { name: "Uno" } });
    expect(new Date(upd?.ts ?? "").toISOString()).toBe(upd?.ts);
    const prov = entries.find((e) => e.action === "update" && e.entity_type === "provider");
    expect(prov?.before?.api_key_masked).toBe("…6789");
    expect(prov?.after?.api_key_masked).toBe("…89-2");
  });

  it("filters by entity_type, entity_id and action; limit within 1-500", async () => {
    const projectsOnly = await json<Entry[]>(await t.call("GET", "/v1/audit-log?entity_type=project", { key: READER }));
    expect(projectsOnly.every((e) => e.entity_type === "project")).toBe(true);
    expect(projectsOnly).toHaveLength(3);
    const one = await json<Entry[]>(await t.call("GET", "/v1/audit-log?entity_id=prov/m&action=create", { key: READER }));
    expect(one.map((e) => e.entity_id)).toEqual(["prov/m"]);
    expect(await json<Entry[]>(await t.call("GET", "/v1/audit-log?limit=1", { key: READER }))).toHaveLength(1);
    expect((await t.call("GET", "/v1/audit-log?limit=500", { key: READER })).status).toBe(200);
    for (const q of ["limit=0", "limit=501", "limit=-1", "limit=abc", "limit=1.5", "entity_type=user", "action=drop", "entity_type=project%27%20OR%201%3D1--"]) {
      const res = await t.call("GET", `/v1/audit-log?${q}`, { key: READER });
      expect(res.status, q).toBe(422);
    }
    const inj = await json<Entry[]>(await t.call("GET", "/v1/audit-log?entity_id=%27%3B%20DELETE%20FROM%20audit_log%3B--", { key: READER }));
    expect(inj).toEqual([]);
    expect((await t.services.database.db.select().from(auditLog)).length).toBe(6);
  });

  it("a rejected change writes no audit row", async () => {
    const before = (await t.services.database.db.select().from(auditLog)).length;
    await t.call("POST", "/v1/projects", { key: WRITER, body: { project_id: "support" } }); // 409
    await t.call("DELETE", "/v1/projects/support?confirm=true", { key: WRITER }); // 403
    await t.call("DELETE", "/v1/models/prov%2Fm", { key: WRITER }); // preview
    expect((await t.services.database.db.select().from(auditLog)).length).toBe(before);
  });

  it("an audit write that fails undoes the change it records (same transaction)", async () => {
    const db = t.services.database.db;
    await db.execute(sql`ALTER TABLE audit_log RENAME TO audit_log_offline`);
    try {
      const res = await t.call("POST", "/v1/projects", { key: WRITER, body: { project_id: "ghost" } });
      expect(res.status).toBe(500);
      expect(JSON.stringify(await res.json())).not.toContain("audit_log");
      const prov = await t.call("POST", "/v1/providers", { key: WRITER, body: { provider_id: "ghost", provider_type: "openai", api_key: KEY } });
      expect(prov.status).toBe(500);
    } finally {
      await db.execute(sql`ALTER TABLE audit_log_offline RENAME TO audit_log`);
    }
    expect(await db.select().from(projects).where(sql`${projects.projectId} = 'ghost'`)).toEqual([]);
    expect(await db.select().from(providers).where(sql`${providers.providerId} = 'ghost'`)).toEqual([]);
  });

  it("needs read; a tenant-bound key sees only its tenant's entries", async () => {
    expect((await t.call("GET", "/v1/audit-log")).status).toBe(401);
    expect((await t.call("GET", "/v1/audit-log", { key: INGESTER })).status).toBe(403);
    expect(await json(await t.call("GET", "/v1/audit-log", { key: ACME_READER }))).toEqual([]);
    await t.services.database.db.insert(auditLog).values({ actor: "vk:x", tenantId: "acme", entityType: "api_key", entityId: "k1", action: "create" });
    const acme = await json<Entry[]>(await t.call("GET", "/v1/audit-log", { key: ACME_READER }));
    expect(acme.map((e) => e.entity_id)).toEqual(["k1"]);
  });

  it("records a minted key's id as the actor; a tenant-bound vk_ key cannot change config", async () => {
    const mint = async (body: Record<string, unknown>) =>
      json<{ id: string; plaintext: string }>(await t.call("POST", "/v1/api-keys", { key: ADMIN, body }));
    const ops = await mint({ name: "ops automation" });
    const acme = await mint({ name: "acme agent", tenant_id: "acme" });
    expect((await t.call("POST", "/v1/projects", { key: acme.plaintext, body: { project_id: "acme-proj" } })).status).toBe(403);
    expect((await t.call("POST", "/v1/projects", { key: ops.plaintext, body: { project_id: "ops-proj" } })).status).toBe(200);
    const [entry] = await json<Entry[]>(await t.call("GET", "/v1/audit-log?entity_type=project&entity_id=ops-proj", { key: READER }));
    expect(entry).toMatchObject({ actor: ops.id, tenant_id: null, action: "create", after: { id: "ops-proj", source: "db" } });
    // The tenant key reads the registry but sees no operator audit entries.
    expect((await t.call("GET", "/v1/projects", { key: acme.plaintext })).status).toBe(200);
    const seen = await json<Entry[]>(await t.call("GET", "/v1/audit-log?entity_type=project", { key: acme.plaintext }));
    expect(seen).toEqual([]);
  });
});
