import { describe, expect, it } from "vitest";
import { models } from "../../src/db/schema/index.js";
import { useTestApp } from "../support/app.js";
import { ACME_WRITER, ADMIN, INGESTER, READER, SECRET_ENV, WRITER, json, manageYaml } from "./fixtures.js";

describe("status, models and /api/status", () => {
  const t = useTestApp({ yaml: manageYaml(), env: SECRET_ENV });

  it("GET /v1/status: providers with configured/type, model and project counts", async () => {
    const res = await t.call("GET", "/v1/status", { key: READER });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      providers: {
        openai: { configured: true, type: "cloud" },
        deepgram: { configured: false, type: "cloud" },
        "gpu-box": { configured: true, type: "local" },
      },
      model_count: 2,
      project_count: 1,
    });
  });

  it("creates a model (201) whose id is <provider>/<model>; counts follow", async () => {
    const res = await t.call("POST", "/v1/models", {
      key: WRITER,
      body: { modality: "tts", provider_id: "openai", model_name: "gpt-4o", display_name: "GPT-4o voice", default_language: "en" },
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ model_id: "openai/gpt-4o", source: "db", created: true });
    const status = await json(await t.call("GET", "/v1/status", { key: READER }));
    expect(status.model_count).toBe(3);
  });

  it("GET /v1/models lists every model; ?project restricts to its default stack; unknown project 404", async () => {
    const all = await json(await t.call("GET", "/v1/models", { key: READER }));
    expect(all.project).toBeNull();
    expect(all.models).toEqual({
      "deepgram/nova-3": { modality: "stt", provider: "deepgram", model: "nova-3" },
      "openai/gpt-4.1-mini": { modality: "llm", provider: "openai", model: "gpt-4.1-mini" },
      "openai/gpt-4o": { modality: "tts", provider: "openai", model: "gpt-4o" },
    });
    const support = await json(await t.call("GET", "/v1/models?project=support", { key: READER }));
    expect(support.project).toBe("support");
    expect(Object.keys(support.models as object).sort()).toEqual(["deepgram/nova-3", "openai/gpt-4.1-mini"]);
    const nope = await t.call("GET", "/v1/models?project=nope", { key: READER });
    expect(nope.status).toBe(404);
    expect((await t.call("GET", "/v1/models?project=%27%20OR%201%3D1--", { key: READER })).status).toBe(404);
    expect((await t.call("GET", "/v1/models?bogus=1", { key: READER })).status).toBe(422);
    expect(await json(await t.call("GET", "/v1/models?project=", { key: READER }))).toEqual(all);
  });

  it("/api/status: providers, models {modality, provider} and fallbacks per modality", async () => {
    const res = await json(await t.call("GET", "/api/status", { key: READER }));
    expect(res).toEqual({
      providers: expect.objectContaining({ openai: { configured: true, type: "cloud" } }),
      models: {
        "deepgram/nova-3": { modality: "stt", provider: "deepgram" },
        "openai/gpt-4.1-mini": { modality: "llm", provider: "openai" },
        "openai/gpt-4o": { modality: "tts", provider: "openai" },
      },
      fallbacks: { stt: [], llm: ["openai/gpt-4.1-mini", "gpu-box/llama-3.1-8b"], tts: [] },
    });
  });

  it("a model whose provider is not registered is refused, naming the available providers", async () => {
    const res = await t.call("POST", "/v1/models", { key: WRITER, body: { modality: "llm", provider_id: "mystery", model_name: "m1" } });
    expect(res.status).toBe(422);
    const body = await json<{ error: { message: string } }>(res);
    expect(body.error.message).toContain("openai, deepgram, gpu-box");
  });

  it("409 for an existing model id (yaml or db); 422 for bad bodies; nothing written", async () => {
    const before = await t.services.database.db.select().from(models);
    expect((await t.call("POST", "/v1/models", { key: WRITER, body: { modality: "llm", provider_id: "openai", model_name: "gpt-4.1-mini" } })).status).toBe(409);
    expect((await t.call("POST", "/v1/models", { key: WRITER, body: { modality: "tts", provider_id: "openai", model_name: "gpt-4o" } })).status).toBe(409);
    for (const body of [
      { modality: "video", provider_id: "openai", model_name: "x" },
      { modality: "llm", provider_id: "openai" },
      { modality: "llm", provider_id: "openai", model_name: "" },
      { modality: "llm", provider_id: "openai", model_name: "a b" },
      { modality: "llm", provider_id: "openai", model_name: "x", extra: 1 },
    ]) {
      expect((await t.call("POST", "/v1/models", { key: WRITER, body })).status, JSON.stringify(body)).toBe(422);
    }
    expect(await t.services.database.db.select().from(models)).toEqual(before);
  });

  it("a model id with a slash is addressed both as a path and percent-encoded", async () => {
    const a = await t.call("GET", "/v1/models/openai/gpt-4o", { key: READER });
    const b = await t.call("GET", "/v1/models/openai%2Fgpt-4o", { key: READER });
    expect(a.status).toBe(200);
    expect(await a.json()).toEqual(await b.json());
    expect((await t.call("GET", "/v1/models/openai/nope", { key: READER })).status).toBe(404);

    await t.call("POST", "/v1/models", { key: WRITER, body: { modality: "llm", provider_id: "gpu-box", model_name: "meta-llama/Llama-3.1-8B" } });
    const deep = await json(await t.call("GET", "/v1/models/gpu-box/meta-llama/Llama-3.1-8B", { key: READER }));
    expect(deep).toMatchObject({ model_id: "gpu-box/meta-llama/Llama-3.1-8B", model_name: "meta-llama/Llama-3.1-8B", source: "db" });
  });

  it("DELETE previews, then deletes with confirm=true (encoded or slash form); yaml models 403", async () => {
    const preview = await t.call("DELETE", "/v1/models/openai%2Fgpt-4o", { key: WRITER });
    expect(await preview.json()).toEqual({ would_delete: { model_id: "openai/gpt-4o" } });
    expect((await t.call("GET", "/v1/models/openai/gpt-4o", { key: READER })).status).toBe(200);
    const del = await t.call("DELETE", "/v1/models/openai/gpt-4o?confirm=true", { key: WRITER });
    expect(await del.json()).toEqual({ deleted: "openai/gpt-4o" });
    expect((await t.call("DELETE", "/v1/models/openai%2Fgpt-4o?confirm=true", { key: WRITER })).status).toBe(404);
    expect((await t.call("DELETE", "/v1/models/openai/gpt-4.1-mini?confirm=true", { key: ADMIN })).status).toBe(403);
    expect((await t.call("DELETE", "/v1/models/gpu-box/meta-llama/Llama-3.1-8B?confirm=1", { key: WRITER })).status).toBe(200);
  });

  it("auth: reads need read, changes need an untenanted write key", async () => {
    expect((await t.call("GET", "/v1/status")).status).toBe(401);
    expect((await t.call("GET", "/api/status")).status).toBe(401);
    expect((await t.call("GET", "/v1/models", { key: INGESTER })).status).toBe(403);
    expect((await t.call("GET", "/v1/status", { key: ACME_WRITER })).status).toBe(200);
    const body = { modality: "llm", provider_id: "openai", model_name: "tenant-model" };
    expect((await t.call("POST", "/v1/models", { key: ACME_WRITER, body })).status).toBe(403);
    expect((await t.call("POST", "/v1/models", { key: READER, body })).status).toBe(403);
    expect((await t.call("DELETE", "/v1/models/deepgram/nova-3?confirm=true", { key: ACME_WRITER })).status).toBe(403);
  });
});

describe("with auth off (no keys configured)", () => {
  const t = useTestApp({ yaml: "", env: SECRET_ENV });

  it("answers the operator with empty registries", async () => {
    expect(await json(await t.call("GET", "/v1/status"))).toEqual({ providers: {}, model_count: 0, project_count: 0 });
    expect(await json(await t.call("GET", "/v1/projects"))).toEqual({ projects: [], stats: {} });
    expect(await json(await t.call("GET", "/api/status"))).toEqual({ providers: {}, models: {}, fallbacks: { stt: [], llm: [], tts: [] } });
  });
});
