import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auditLog, models, providers } from "../../src/db/schema/index.js";
import { useTestApp } from "../support/app.js";
import { ACME_WRITER, ADMIN, OPENAI_KEY, READER, SECRET_ENV, WRITER, json, manageYaml } from "./fixtures.js";
import { startStubProvider } from "./stub-provider.js";

const KEY = "sk-stub-provider-key-0123456789abcdef";

describe("providers over loopback stubs", () => {
  let stub: Awaited<ReturnType<typeof startStubProvider>>;
  let target: Awaited<ReturnType<typeof startStubProvider>>;
  beforeAll(async () => {
    target = await startStubProvider();
    stub = await startStubProvider(target.url("/ok/stolen"));
  });
  afterAll(async () => {
    await stub.close();
    await target.close();
  });
  const t = useTestApp({ yaml: manageYaml('serve: { provider_base_url_hosts: ["127.0.0.1"] }'), env: SECRET_ENV });

  it("creates a provider (201); the key is stored sealed and only ever shown masked", async () => {
    const res = await t.call("POST", "/v1/providers", {
      key: WRITER,
      body: { provider_id: "local-llm", provider_type: "openai_compatible", api_key: KEY, base_url: stub.url("/ok/v1/") },
    });
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body).toMatchObject({ provider_id: "local-llm", source: "db", api_key_masked: "…cdef" });
    expect(JSON.stringify(body)).not.toContain(KEY);

    const [row] = await t.services.database.db.select().from(providers).where(eq(providers.providerId, "local-llm"));
    expect(row?.apiKeyEncrypted).toMatch(/^vgk:v1:[0-9a-f]{12}:/);
    expect(row?.apiKeyEncrypted).not.toContain(KEY);
    expect(row?.baseUrl).toBe(stub.url("/ok/v1"));

    const list = await t.call("GET", "/v1/providers", { key: READER });
    const text = await list.text();
    expect(text).not.toContain(KEY);
    expect(text).not.toContain(OPENAI_KEY);
    const parsed = JSON.parse(text) as { providers: Record<string, unknown>[] };
    expect(parsed.providers.map((p) => [p.provider_id, p.source])).toEqual([
      ["openai", "yaml"],
      ["deepgram", "yaml"],
      ["gpu-box", "yaml"],
      ["local-llm", "db"],
    ]);
    expect(parsed.providers[3]).toMatchObject({ api_key_masked: "…cdef", base_url: stub.url("/ok/v1") });

    const audit = await t.services.database.db.select().from(auditLog).where(eq(auditLog.entityId, "local-llm"));
    expect(JSON.stringify(audit)).not.toContain(KEY);
    expect(audit[0]).toMatchObject({ action: "create", entityType: "provider", actor: expect.stringMatching(/^static:/) });
  });

  it("tests a stored provider with a real call carrying the decrypted key", async () => {
    stub.hits.length = 0;
    const res = await t.call("POST", "/v1/providers/local-llm/test", { key: WRITER });
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body).toEqual({ status: "ok", latency_ms: expect.any(Number) });
    expect(Number.isInteger(body.latency_ms)).toBe(true);
    expect(stub.hits).toHaveLength(1);
    expect(stub.hits[0]).toMatchObject({ method: "GET", path: "/ok/v1/models" });
    expect(stub.hits[0]?.headers.authorization).toBe(`Bearer ${KEY}`);
    expect((await t.call("POST", "/v1/providers/nope/test", { key: WRITER })).status).toBe(404);
  });

  it("reports failures without echoing the key, and never follows a redirect", async () => {
    for (const path of ["/denied/v1", "/echo/v1", "/redirect/v1"]) {
      target.hits.length = 0;
      const res = await t.call("POST", "/v1/providers/test", {
        key: WRITER,
        body: { provider_type: "openai_compatible", api_key: KEY, base_url: stub.url(path) },
      });
      expect(res.status).toBe(200);
      const body = await json<{ status: string; message: string }>(res);
      expect(body.status).toBe("failed");
      expect(body.message).toEqual(expect.any(String));
      expect(JSON.stringify(body)).not.toContain(KEY);
      expect(target.hits).toHaveLength(0);
    }
    // A dead port: connection refused, still no key.
    const dead = await t.call("POST", "/v1/providers/test", {
      key: WRITER,
      body: { provider_type: "openai_compatible", api_key: KEY, base_url: "http://127.0.0.1:1/v1" },
    });
    const deadBody = await json(dead);
    expect(deadBody).toMatchObject({ status: "failed" });
    expect(JSON.stringify(deadBody)).not.toContain(KEY);
  });

  it("tests a type + credential before saving (28); validates type and base_url", async () => {
    const ok = await t.call("POST", "/v1/providers/test", {
      key: WRITER,
      body: { provider_type: "openai_compatible", api_key: KEY, base_url: stub.url("/ok") },
    });
    expect(await json(ok)).toMatchObject({ status: "ok" });
    const unknownType = await t.call("POST", "/v1/providers/test", { key: WRITER, body: { provider_type: "acme-ai", api_key: KEY } });
    expect(unknownType.status).toBe(422);
    expect((await json<{ error: { message: string } }>(unknownType)).error.message).toContain("openai_compatible");
    expect((await t.call("POST", "/v1/providers/test", { key: WRITER, body: { provider_type: "openai_compatible", api_key: KEY } })).status).toBe(422);
    const meta = await t.call("POST", "/v1/providers/test", {
      key: WRITER,
      body: { provider_type: "openai", api_key: KEY, base_url: "http://169.254.169.254/latest" },
    });
    expect(meta.status).toBe(400);
    expect(await json(meta)).toMatchObject({ error: { code: "unpermitted_base_url" } });
  });

  it("a sealed key copied into another provider's row does not decrypt there", async () => {
    await t.call("POST", "/v1/providers", {
      key: WRITER,
      body: { provider_id: "other", provider_type: "openai_compatible", api_key: "sk-other-0123456789abcdef", base_url: stub.url("/ok") },
    });
    const db = t.services.database.db;
    const [src] = await db.select().from(providers).where(eq(providers.providerId, "local-llm"));
    await db.update(providers).set({ apiKeyEncrypted: src?.apiKeyEncrypted }).where(eq(providers.providerId, "other"));
    stub.hits.length = 0;
    const res = await json<{ status: string; message: string }>(await t.call("POST", "/v1/providers/other/test", { key: WRITER }));
    expect(res.status).toBe("failed");
    expect(res.message).toContain("cannot be decrypted");
    expect(stub.hits).toHaveLength(0);
  });

  it("PATCH: api_key alone rotates the key; provider_type and base_url keep stored values when omitted", async () => {
    const NEW = "sk-rotated-key-abcdefghijklmnop";
    const res = await t.call("PATCH", "/v1/providers/local-llm", { key: WRITER, body: { api_key: NEW } });
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body).toMatchObject({ provider_id: "local-llm", updated: true, base_url: stub.url("/ok/v1"), api_key_masked: "…mnop" });
    expect(JSON.stringify(body)).not.toContain(NEW);
    stub.hits.length = 0;
    await t.call("POST", "/v1/providers/local-llm/test", { key: WRITER });
    expect(stub.hits[0]?.headers.authorization).toBe(`Bearer ${NEW}`);
  });

  it("403 for PATCH/DELETE of yaml providers; 409 for existing ids; 404 for unknown", async () => {
    expect((await t.call("PATCH", "/v1/providers/openai", { key: ADMIN, body: { api_key: "sk-xxxxxxxxxxxxxxxx" } })).status).toBe(403);
    expect((await t.call("DELETE", "/v1/providers/openai?confirm=true", { key: ADMIN })).status).toBe(403);
    const body = { provider_type: "openai", api_key: "sk-abcdefabcdefabcdef" };
    expect((await t.call("POST", "/v1/providers", { key: WRITER, body: { ...body, provider_id: "openai" } })).status).toBe(409);
    expect((await t.call("POST", "/v1/providers", { key: WRITER, body: { ...body, provider_id: "local-llm" } })).status).toBe(409);
    expect((await t.call("PATCH", "/v1/providers/nope", { key: WRITER, body: { api_key: "k" } })).status).toBe(404);
    expect((await t.call("DELETE", "/v1/providers/nope", { key: WRITER })).status).toBe(404);
    const unknown = await t.call("POST", "/v1/providers", { key: WRITER, body: { ...body, provider_id: "x1", provider_type: "skynet" } });
    expect(unknown.status).toBe(422);
    expect(JSON.stringify(await unknown.json())).toContain("deepgram");
  });

  it("tenant-bound and read-only keys cannot change or test providers; tenant keys cannot read them either", async () => {
    const body = { provider_id: "t1", provider_type: "openai", api_key: "sk-abcdefabcdefabcdef" };
    expect((await t.call("POST", "/v1/providers", { key: ACME_WRITER, body })).status).toBe(403);
    expect((await t.call("POST", "/v1/providers", { key: READER, body })).status).toBe(403);
    expect((await t.call("POST", "/v1/providers", { body })).status).toBe(401);
    expect((await t.call("PATCH", "/v1/providers/local-llm", { key: ACME_WRITER, body: { api_key: "x" } })).status).toBe(403);
    expect((await t.call("DELETE", "/v1/providers/local-llm?confirm=true", { key: ACME_WRITER })).status).toBe(403);
    expect((await t.call("POST", "/v1/providers/local-llm/test", { key: ACME_WRITER })).status).toBe(403);
    expect((await t.call("POST", "/v1/providers/local-llm/test", { key: READER })).status).toBe(403);
    expect((await t.call("GET", "/v1/providers", { key: ACME_WRITER })).status).toBe(403);
    expect((await t.call("GET", "/v1/providers", { key: READER })).status).toBe(200);
  });

  it("DELETE previews the provider and the db models that use it; confirm removes both", async () => {
    const created = await t.call("POST", "/v1/models", {
      key: WRITER,
      body: { modality: "llm", provider_id: "local-llm", model_name: "meta-llama/Llama-3.1-8B" },
    });
    expect(created.status).toBe(200);
    const preview = await t.call("DELETE", "/v1/providers/local-llm", { key: WRITER });
    expect(await preview.json()).toEqual({ would_delete: { provider_id: "local-llm", models: ["local-llm/meta-llama/Llama-3.1-8B"] } });
    expect((await t.services.database.db.select().from(models)).length).toBe(1);

    const del = await t.call("DELETE", "/v1/providers/local-llm?confirm=true", { key: WRITER });
    expect(await del.json()).toEqual({ deleted: "local-llm", deleted_models: ["local-llm/meta-llama/Llama-3.1-8B"] });
    expect(await t.services.database.db.select().from(models)).toEqual([]);
    expect((await t.call("GET", "/v1/providers/local-llm", { key: READER })).status).toBe(404);
    const audit = await json<{ entity_type: string; action: string }[]>(await t.call("GET", "/v1/audit-log?action=delete", { key: READER }));
    expect(audit.map((a) => a.entity_type)).toEqual(["provider", "model"]);
  });
});

describe("base_url rules without loopback permitted (SSRF)", () => {
  const t = useTestApp({ yaml: manageYaml('serve: { provider_base_url_hosts: ["llm.internal.example"] }'), env: SECRET_ENV });

  const bad = [
    "http://127.0.0.1:8000/v1",
    "http://127.1/v1",
    "http://[::1]/v1",
    "http://[::ffff:127.0.0.1]/v1",
    "http://localhost:11434/v1",
    "http://169.254.169.254/latest/meta-data",
    "http://metadata.google.internal/computeMetadata/v1",
    "http://2130706433/v1",
    "http://0x7f000001/v1",
    "http://0177.0.0.1/v1",
    "http://0.0.0.0/v1",
    "http://user@api.openai.com/v1",
    "http://api.openai.com@evil.example/v1",
    "http://evil.example#@api.openai.com/v1",
    "https://api.openai.com/v1#frag",
    "ftp://api.openai.com/v1",
    "file:///etc/passwd",
    "javascript:alert(1)",
    "not a url",
    "http://api.openai.com\\@evil.example/",
    "http://api.openai.com/v1?x=1",
  ];

  it("refuses loopback, metadata, odd IP forms, userinfo, fragments and other schemes on create", async () => {
    for (const base_url of bad) {
      const res = await t.call("POST", "/v1/providers", {
        key: WRITER,
        body: { provider_id: "p-ssrf", provider_type: "openai", api_key: "sk-abcdefabcdefabcdef", base_url },
      });
      expect(res.status, base_url).toBe(400);
      const body = await json<{ error: { code: string; message: string } }>(res);
      expect(body.error.code).toBe("unpermitted_base_url");
      expect(body.error.message).toContain("serve.provider_base_url_hosts");
    }
    expect(await t.services.database.db.select().from(providers)).toEqual([]);
  });

  it("PATCH moving base_url without a new key: current host, vendor default or listed only", async () => {
    const create = await t.call("POST", "/v1/providers", {
      key: WRITER,
      body: { provider_id: "oa", provider_type: "openai", api_key: "sk-abcdefabcdefabcdef", base_url: "https://proxy.example.com/v1" },
    });
    expect(create.status).toBe(200);
    const moved = await t.call("PATCH", "/v1/providers/oa", { key: WRITER, body: { base_url: "https://evil.example.net/v1" } });
    expect(moved.status).toBe(400);
    const err = await json<{ error: { code: string; message: string } }>(moved);
    expect(err.error).toMatchObject({ code: "unpermitted_base_url" });
    expect(err.error.message).toContain("serve.provider_base_url_hosts");
    const [row] = await t.services.database.db.select().from(providers).where(eq(providers.providerId, "oa"));
    expect(row?.baseUrl).toBe("https://proxy.example.com/v1");

    for (const base_url of ["https://proxy.example.com/v2", "https://api.openai.com/v1", "http://llm.internal.example:8000/v1", null]) {
      expect((await t.call("PATCH", "/v1/providers/oa", { key: WRITER, body: { base_url } })).status, String(base_url)).toBe(200);
    }
    // A new key travels with the move: the host rule does not apply (the SSRF rule still does).
    const withKey = await t.call("PATCH", "/v1/providers/oa", {
      key: WRITER,
      body: { base_url: "https://elsewhere.example.org/v1", api_key: "sk-newnewnewnewnewnew" },
    });
    expect(withKey.status).toBe(200);
    expect((await t.call("PATCH", "/v1/providers/oa", { key: WRITER, body: { base_url: "http://169.254.169.254/", api_key: "sk-newnewnewnewnewnew" } })).status).toBe(400);
    // A provider stored without a key is unaffected by the host rule.
    await t.call("POST", "/v1/providers", { key: WRITER, body: { provider_id: "nokey", provider_type: "openai", base_url: "https://a.example.com/v1" } });
    expect((await t.call("PATCH", "/v1/providers/nokey", { key: WRITER, body: { base_url: "https://b.example.com/v1" } })).status).toBe(200);
  });

  it("a trailing-dot localhost is still localhost", async () => {
    const res = await t.call("POST", "/v1/providers/test", {
      key: WRITER,
      body: { provider_type: "openai_compatible", api_key: "sk-abcdefabcdefabcdef", base_url: "http://localhost.:9/v1" },
    });
    expect(res.status).toBe(400);
  });
});

describe("yaml providers are operator-trusted", () => {
  let stub: Awaited<ReturnType<typeof startStubProvider>>;
  beforeAll(async () => {
    stub = await startStubProvider();
  });
  afterAll(async () => {
    await stub.close();
  });
  const t = useTestApp(() => {
    const base = stub.url("/ok/v1").replace("127.0.0.1", "localhost");
    return { yaml: manageYaml().replace("providers:\n", `providers:\n  ollama: { type: openai_compatible, base_url: "${base}" }\n`), env: SECRET_ENV };
  });

  it("tests a yaml provider on localhost (written by the operator) without listing it", async () => {
    const res = await json(await t.call("POST", "/v1/providers/ollama/test", { key: WRITER }));
    expect(res).toMatchObject({ status: "ok" });
    expect(stub.hits.map((h) => h.path)).toEqual(["/ok/v1/models"]);
    // A host the operator's own voxgate.yaml uses is trusted for new providers too…
    const create = await t.call("POST", "/v1/providers", {
      key: WRITER,
      body: { provider_id: "second", provider_type: "openai_compatible", base_url: stub.url("/ok/v2").replace("127.0.0.1", "localhost") },
    });
    expect(create.status).toBe(200);
    // …but not another loopback name no provider uses.
    const other = await t.call("POST", "/v1/providers", {
      key: WRITER,
      body: { provider_id: "sneaky", provider_type: "openai_compatible", base_url: stub.url("/ok/v1") },
    });
    expect(other.status).toBe(400);
  });
});
