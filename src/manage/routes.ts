import { Hono } from "hono";
import { z } from "zod";
import { requireScope } from "../auth/gate.js";
import { ApiError, parseOrThrow } from "../http/errors.js";
import type { AppEnv } from "../http/app-env.js";
import { readJson } from "../http/body.js";
import { confirmQuery, requireUntenanted } from "./common.js";
import { createModel, createModelBody, deleteModel, getModel } from "./models.js";
import { createProject, createProjectBody, deleteProject, listProjectsWithStats, projectDetail, updateProject, updateProjectBody } from "./projects.js";
import { providerTestRoutes } from "./provider-routes.js";
import { listEffectiveModels, listEffectiveProjects, listEffectiveProviders, findEffectiveProject, stackModelIds } from "./registry.js";
import type { Services } from "../services.js";
import type { TenantScope } from "../auth/context.js";

const read = requireScope("read");
const write = [requireScope("write"), requireUntenanted] as const;

/** The status view of providers: operator keys only; a tenant key sees `{}` (provider setup is the operator's). */
async function statusProviders(services: Services, auth: TenantScope) {
  if (auth.tenantId !== null) return {};
  return Object.fromEntries(
    (await listEffectiveProviders(services)).map((p) => [p.providerId, { configured: p.configured, type: p.location }]),
  );
}

/**
 * Endpoints 2, 3, 18-22, 29-30 and the dashboard's /api/status and /api/projects (providers,
 * 23-28, live in provider-routes.ts). Reads need "read"; changes need "write" from a key bound to
 * no tenant (providers, models and projects are operator-global).
 */
export function manageRoutes() {
  const r = new Hono<AppEnv>();

  r.get("/v1/status", read, async (c) => {
    const { services } = c.var;
    const [providers, models, projects] = await Promise.all([
      statusProviders(services, c.var.auth),
      listEffectiveModels(services),
      listEffectiveProjects(services),
    ]);
    return c.json({ providers, model_count: models.length, project_count: projects.length });
  });

  r.get("/api/status", read, async (c) => {
    const { services } = c.var;
    const [providers, models] = await Promise.all([statusProviders(services, c.var.auth), listEffectiveModels(services)]);
    const f = services.config.fallbacks;
    return c.json({
      providers,
      models: Object.fromEntries(models.map((m) => [m.modelId, { modality: m.modality, provider: m.providerId }])),
      fallbacks: { stt: f.stt, llm: f.llm, tts: f.tts },
    });
  });

  r.get("/v1/models", read, async (c) => {
    const { services } = c.var;
    // `?project=` (empty) means no project, like leaving it out.
    const q = parseOrThrow(
      z.strictObject({ project: z.string().max(200).optional().transform((p) => (p === "" ? undefined : p)) }),
      c.req.query(),
    );
    let models = await listEffectiveModels(services);
    if (q.project !== undefined) {
      const project = await findEffectiveProject(services, q.project);
      if (!project) throw new ApiError("not_found", `no project ${q.project}`);
      const inStack = stackModelIds(services.config, project);
      models = models.filter((m) => inStack.has(m.modelId));
    }
    return c.json({
      models: Object.fromEntries(models.map((m) => [m.modelId, { modality: m.modality, provider: m.providerId, model: m.modelName }])),
      project: q.project ?? null,
    });
  });

  r.post("/v1/models", ...write, async (c) => {
    const { services } = c.var;
    const body = parseOrThrow(createModelBody, await readJson(c, services.config.serve.body_limit_bytes));
    return c.json(await createModel(services, c.var.auth, body));
  });

  // A model id holds a slash: `/v1/models/openai/gpt-4o` and `/v1/models/openai%2Fgpt-4o` are one model.
  const modelIdOf = (c: { req: { param(name: string): string | undefined } }) => {
    const single = c.req.param("model_id");
    return single ?? `${c.req.param("provider") ?? ""}/${c.req.param("model") ?? ""}`;
  };
  for (const path of ["/v1/models/:model_id", "/v1/models/:provider/:model{.+}"]) {
    r.get(path, read, async (c) => c.json(await getModel(c.var.services, modelIdOf(c))));
    r.delete(path, ...write, async (c) => {
      const q = parseOrThrow(confirmQuery, c.req.query());
      return c.json(await deleteModel(c.var.services, c.var.auth, modelIdOf(c), q.confirm));
    });
  }

  const listProjects = read;
  r.get("/v1/projects", listProjects, async (c) => c.json(await listProjectsWithStats(c.var.services, c.var.auth)));
  r.get("/api/projects", listProjects, async (c) => c.json(await listProjectsWithStats(c.var.services, c.var.auth)));
  r.get("/v1/projects/:project_id", read, async (c) =>
    c.json(await projectDetail(c.var.services, c.var.auth, c.req.param("project_id"))),
  );
  r.post("/v1/projects", ...write, async (c) => {
    const { services } = c.var;
    const body = parseOrThrow(createProjectBody, await readJson(c, services.config.serve.body_limit_bytes));
    return c.json(await createProject(services, c.var.auth, body));
  });
  r.patch("/v1/projects/:project_id", ...write, async (c) => {
    const { services } = c.var;
    const body = parseOrThrow(updateProjectBody, await readJson(c, services.config.serve.body_limit_bytes));
    return c.json(await updateProject(services, c.var.auth, c.req.param("project_id"), body));
  });
  r.delete("/v1/projects/:project_id", ...write, async (c) => {
    const q = parseOrThrow(confirmQuery, c.req.query());
    return c.json(await deleteProject(c.var.services, c.var.auth, c.req.param("project_id"), q.confirm));
  });

  r.route("/", providerTestRoutes());
  return r;
}
