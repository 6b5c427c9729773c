import { z } from "zod";
import type { TenantScope } from "../auth/context.js";
import { DomainError } from "../errors.js";
import { VERSION } from "../version.js";
import { providerView } from "./providers.js";
import { type ConfigStore, findEffectiveProject, listEffectiveModels, listEffectiveProjects, listEffectiveProviders, stackModelIds } from "./registry.js";

/** GET /health's answer. */
export function health(services: { startedAt: number }) {
  return { status: "ok" as const, uptime_seconds: Math.round((Date.now() - services.startedAt) / 10) / 100, version: VERSION };
}

/** The status view of providers: operator keys only; a tenant key sees `{}` (provider setup is the operator's). */
export async function statusProviders(services: ConfigStore, auth: TenantScope) {
  if (auth.tenantId !== null) return {};
  return Object.fromEntries(
    (await listEffectiveProviders(services)).map((p) => [p.providerId, { configured: p.configured, type: p.location }]),
  );
}

/** GET /v1/status: providers, model and project counts. */
export async function serviceStatus(services: ConfigStore, auth: TenantScope) {
  const [providers, models, projects] = await Promise.all([statusProviders(services, auth), listEffectiveModels(services), listEffectiveProjects(services)]);
  return { providers, model_count: models.length, project_count: projects.length };
}

/** GET /v1/models' query: `?project=` (empty) means no project, like leaving it out. */
export const modelListQuery = z.strictObject({ project: z.string().max(200).optional().transform((p) => (p === "" ? undefined : p)) });

/** GET /v1/models: every model, or those of one project's stack (`project` undefined: all). */
export async function modelList(services: ConfigStore, project: string | undefined) {
  let models = await listEffectiveModels(services);
  if (project !== undefined) {
    const found = await findEffectiveProject(services, project);
    if (!found) throw new DomainError("not_found", `no project ${project}`);
    const inStack = stackModelIds(services.config, found);
    models = models.filter((m) => inStack.has(m.modelId));
  }
  return {
    models: Object.fromEntries(models.map((m) => [m.modelId, { modality: m.modality, provider: m.providerId, model: m.modelName }])),
    project: project ?? null,
  };
}

/** GET /v1/providers: every provider, keys masked (operator keys only: the route's middleware, the tool's check). */
export async function providerList(services: ConfigStore) {
  return { providers: (await listEffectiveProviders(services)).map(providerView) };
}
