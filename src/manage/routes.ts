import { z } from "zod";
import type { SecretStore } from "./registry.js";
import type { UpstreamPools } from "./provider-check.js";
import { contractRouter, defineRoute } from "../http/openapi.js";
import { confirmQuery, requireUntenanted } from "./common.js";
import { createModel, createModelBody, deleteModel, getModel } from "./models.js";
import { createProject, createProjectBody, deleteProject, listProjectsWithStats, projectDetail, updateProject, updateProjectBody } from "./projects.js";
import { providerTestRoutes } from "./provider-routes.js";
import { listEffectiveModels } from "./registry.js";
import { modelList, modelListQuery, serviceStatus, statusProviders } from "./status.js";
import { Created, DashboardStatus, DeleteAnswer, Model, ModelList, ProjectDetail, ProjectList, Status } from "./schemas.js";

const write = { scope: "write", middleware: [requireUntenanted] } as const;
const conflict = { 409: { description: "the id exists already (in voxgate.yaml or the database)" } };
const notFound = { 404: { description: "no such entity" } };

/**
 * The registry routes of docs/api/manage.md and the dashboard's /api/status and /api/projects (providers,
 * 23-28, live in provider-routes.ts). Reads need "read"; changes need "write" from a key bound to
 * no tenant (providers, models and projects are operator-global).
 */
/** The registry's routes: yaml config and database, the provider-key box, and the pools connectivity tests use. */
export type ManageRouteDeps = SecretStore & { upstreams: UpstreamPools };

export function manageRoutes(deps: ManageRouteDeps) {
  const r = contractRouter();

  defineRoute(
    r,
    { method: "get", path: "/v1/status", tag: "manage", summary: "Providers, model and project counts", scope: "read", responses: { 200: { description: "status", schema: Status } } },
    async (c) => c.json(await serviceStatus(deps, c.var.auth)),
  );

  defineRoute(
    r,
    { method: "get", path: "/api/status", tag: "dashboard", summary: "Providers, models and fallbacks for the web app", scope: "read", responses: { 200: { description: "status", schema: DashboardStatus } } },
    async (c) => {
      const [providers, models] = await Promise.all([statusProviders(deps, c.var.auth), listEffectiveModels(deps)]);
      const f = deps.config.fallbacks;
      return c.json({
        providers,
        models: Object.fromEntries(models.map((m) => [m.modelId, { modality: m.modality, provider: m.providerId }])),
        fallbacks: { stt: f.stt, llm: f.llm, tts: f.tts },
      });
    },
  );

  defineRoute(
    r,
    {
      method: "get",
      path: "/v1/models",
      tag: "models",
      summary: "Models, optionally those of one project's stack",
      scope: "read",
      query: modelListQuery,
      responses: { 200: { description: "models by id", schema: ModelList }, ...notFound },
    },
    async (c, { query }) => c.json(await modelList(deps, query.project)),
  );

  defineRoute(
    r,
    { method: "post", path: "/v1/models", tag: "models", summary: "Add a model", ...write, body: createModelBody, responses: { 200: { description: "created", schema: Created("model_id") }, ...conflict } },
    async (c, { body }) => c.json(await createModel(deps, c.var.auth, body)),
  );

  // A model id holds a slash: `/v1/models/openai/gpt-4o` and `/v1/models/openai%2Fgpt-4o` are one model.
  const modelPaths = [
    { path: "/v1/models/{model_id}", params: z.object({ model_id: z.string().describe("provider_id/model_name, the slash encoded as %2F") }) },
    {
      path: "/v1/models/{provider}/{model}",
      honoPaths: ["/v1/models/:provider/:model{.+}"],
      params: z.object({ provider: z.string(), model: z.string().describe("the model name; may itself hold slashes") }),
    },
  ];
  const modelIdOf = (p: Record<string, string>) => p.model_id ?? `${p.provider ?? ""}/${p.model ?? ""}`;
  for (const { path, params, honoPaths } of modelPaths) {
    defineRoute(
      r,
      { method: "get", path, ...(honoPaths ? { honoPaths } : {}), tag: "models", summary: "One model", scope: "read", params, responses: { 200: { description: "the model", schema: Model }, ...notFound } },
      async (c, { params: p }) => c.json(await getModel(deps, modelIdOf(p))),
    );
    defineRoute(
      r,
      {
        method: "delete",
        path,
        ...(honoPaths ? { honoPaths } : {}),
        tag: "models",
        summary: "Delete a db model (preview without confirm=true)",
        ...write,
        params,
        query: confirmQuery,
        responses: { 200: { description: "preview or deletion", schema: DeleteAnswer(z.object({ model_id: z.string() })) }, ...notFound },
      },
      async (c, { params: p, query }) => c.json(await deleteModel(deps, c.var.auth, modelIdOf(p), query.confirm)),
    );
  }

  for (const [path, tag] of [
    ["/v1/projects", "projects"],
    ["/api/projects", "dashboard"],
  ] as const) {
    defineRoute(
      r,
      { method: "get", path, tag, summary: "Projects with their rolling-24 h cost and requests", scope: "read", responses: { 200: { description: "projects", schema: ProjectList } } },
      async (c) => c.json(await listProjectsWithStats(deps, c.var.auth)),
    );
  }
  const projectParams = z.object({ project_id: z.string() });
  defineRoute(
    r,
    {
      method: "get",
      path: "/v1/projects/{project_id}",
      tag: "projects",
      summary: "One project with today's spend and budget status",
      scope: "read",
      params: projectParams,
      responses: { 200: { description: "the project", schema: ProjectDetail }, ...notFound },
    },
    async (c, { params }) => c.json(await projectDetail(deps, c.var.auth, params.project_id)),
  );
  defineRoute(
    r,
    { method: "post", path: "/v1/projects", tag: "projects", summary: "Add a project", ...write, body: createProjectBody, responses: { 200: { description: "created", schema: Created("project_id") }, ...conflict } },
    async (c, { body }) => c.json(await createProject(deps, c.var.auth, body)),
  );
  defineRoute(
    r,
    {
      method: "patch",
      path: "/v1/projects/{project_id}",
      tag: "projects",
      summary: "Change a db project",
      ...write,
      params: projectParams,
      body: updateProjectBody,
      responses: { 200: { description: "updated", schema: z.object({ project_id: z.string(), updated: z.literal(true) }) }, ...notFound },
    },
    async (c, { params, body }) => c.json(await updateProject(deps, c.var.auth, params.project_id, body)),
  );
  defineRoute(
    r,
    {
      method: "delete",
      path: "/v1/projects/{project_id}",
      tag: "projects",
      summary: "Delete a db project (preview without confirm=true)",
      ...write,
      params: projectParams,
      query: confirmQuery,
      responses: { 200: { description: "preview or deletion", schema: DeleteAnswer(z.object({ project_id: z.string() })) }, ...notFound },
    },
    async (c, { params, query }) => c.json(await deleteProject(deps, c.var.auth, params.project_id, query.confirm)),
  );

  r.route("/", providerTestRoutes(deps));
  return r;
}
