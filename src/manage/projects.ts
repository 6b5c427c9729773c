import { eq } from "drizzle-orm";
import { z } from "zod";
import type { AuthContext, TenantScope } from "../auth/context.js";
import { recordAudit } from "../audit/record.js";
import { BUDGET_ACTIONS } from "../config/schema.js";
import { projects } from "../db/schema/index.js";
import { DomainError } from "../errors.js";
import { entityId, yamlForbidden } from "./common.js";
import { type ConfigStore, type EffectiveProject, findEffectiveProject, listEffectiveProjects, projectFromRow } from "./registry.js";
import { projectCostsToday, projectsToday, todayWindow } from "./stats.js";

/** budget_status: ok below 80 % of daily_budget, warning from 80 %, exceeded from 100 %. */
export const BUDGET_WARNING_RATIO = 0.8;
export type BudgetStatus = "ok" | "warning" | "exceeded";

export function budgetStatus(spend: number, budget: number | null): BudgetStatus {
  if (budget === null) return "ok";
  if (budget <= 0) return spend > 0 ? "exceeded" : "ok";
  if (spend >= budget) return "exceeded";
  if (spend >= budget * BUDGET_WARNING_RATIO) return "warning";
  return "ok";
}

const projectFields = {
  name: z.string().trim().min(1).max(200),
  description: z.string().max(2000).nullable(),
  daily_budget: z.number().finite().nonnegative().max(1e9).nullable(),
  budget_action: z.enum(BUDGET_ACTIONS),
  default_stack: z.string().trim().min(1).max(200).nullable(),
  tags: z.array(z.string().trim().min(1).max(64)).max(50),
  accent: z
    .string()
    .regex(/^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/, "must be a hex colour such as #4f46e5")
    .nullable(),
  tenant_id: z.string().trim().min(1).max(256).nullable(),
};

export const createProjectBody = z.strictObject({
  project_id: entityId,
  name: projectFields.name.optional(),
  description: projectFields.description.optional(),
  daily_budget: projectFields.daily_budget.optional(),
  budget_action: projectFields.budget_action.default("warn"),
  default_stack: projectFields.default_stack.optional(),
  tags: projectFields.tags
    .nullish()
    .transform((t) => t ?? []),
  accent: projectFields.accent.optional(),
  tenant_id: projectFields.tenant_id.optional(),
});

export const updateProjectBody = z
  .strictObject({
    // Accepted (so a client can PATCH with the POST body) but must name the project in the path.
    project_id: entityId,
    name: projectFields.name,
    description: projectFields.description,
    daily_budget: projectFields.daily_budget,
    budget_action: projectFields.budget_action,
    default_stack: projectFields.default_stack,
    tags: projectFields.tags,
    accent: projectFields.accent,
    tenant_id: projectFields.tenant_id,
  })
  .partial()
  .refine((b) => Object.keys(b).some((k) => k !== "project_id"), "body must change at least one field");

/** The project as GET /v1/projects lists it (and as audit rows record it). */
export function projectView(p: EffectiveProject) {
  return {
    id: p.id,
    name: p.name,
    description: p.description,
    daily_budget: p.dailyBudget,
    budget_action: p.budgetAction,
    default_stack: p.defaultStack,
    tags: p.tags,
    accent: p.accent,
    tenant_id: p.tenantId,
    source: p.source,
  };
}

/** GET /v1/projects and GET /api/projects: every project plus its rolling-24 h cost and requests. */
export async function listProjectsWithStats(deps: ConfigStore, scope: TenantScope) {
  const all = await listEffectiveProjects(deps);
  const stats = await projectsToday(deps.database.db, { ...scope, projectIds: all.map((p) => p.id), window: todayWindow() });
  return {
    projects: all.map(projectView),
    stats: Object.fromEntries(all.map((p) => [p.id, stats.get(p.id) ?? { cost_today: 0, requests_today: 0 }])),
  };
}

/** GET /v1/projects/{id}: the detail, with today's spend scoped to the caller's tenant. */
export async function projectDetail(deps: ConfigStore, scope: TenantScope, projectId: string) {
  const p = await findEffectiveProject(deps, projectId);
  if (!p) throw new DomainError("not_found", `no project ${projectId}`);
  const window = todayWindow();
  const costs = await projectCostsToday(deps.database.db, { ...scope, projectId, window });
  // The gateway decides a budget on the project's whole spend (every tenant's calls): budget_status is
  // that decision's figure for every reader, while today_spend stays the caller's own.
  const decided = scope.tenantId === null || p.dailyBudget === null ? costs.total : (await projectCostsToday(deps.database.db, { tenantId: null, projectId, window })).total;
  return {
    ...projectView(p),
    project_id: p.id,
    today_spend: costs.total,
    budget_status: budgetStatus(decided, p.dailyBudget),
    today: { cost_today: costs.total, requests_today: costs.requests },
    costs_today: { total: costs.total, by_provider: costs.by_provider, by_model: costs.by_model },
  };
}

function toRow(b: Partial<z.infer<typeof updateProjectBody>>) {
  return {
    ...(b.name !== undefined && { name: b.name }),
    ...(b.description !== undefined && { description: b.description }),
    ...(b.daily_budget !== undefined && { dailyBudget: b.daily_budget === null ? null : String(b.daily_budget) }),
    ...(b.budget_action !== undefined && { budgetAction: b.budget_action }),
    ...(b.default_stack !== undefined && { defaultStack: b.default_stack }),
    ...(b.tags !== undefined && { tags: b.tags }),
    ...(b.accent !== undefined && { accent: b.accent }),
    ...(b.tenant_id !== undefined && { tenantId: b.tenant_id }),
  };
}

function rowView(row: typeof projects.$inferSelect) {
  return projectView(projectFromRow(row));
}

export async function createProject(deps: ConfigStore, auth: AuthContext, body: z.infer<typeof createProjectBody>) {
  const id = body.project_id;
  if (deps.config.projects[id]) throw new DomainError("conflict", `project ${id} already exists (source yaml)`);
  await deps.database.db.transaction(async (tx) => {
    const [row] = await tx
      .insert(projects)
      .values({ projectId: id, ...toRow({ ...body, name: body.name ?? id }), name: body.name ?? id })
      .onConflictDoNothing()
      .returning();
    if (!row) throw new DomainError("conflict", `project ${id} already exists (source db)`);
    await recordAudit(tx, auth, { entityType: "project", entityId: id, action: "create", after: rowView(row) });
  });
  return { project_id: id, source: "db" as const, created: true as const };
}

/** Loads a db project for change: 404 when unknown, 403 when it lives in voxgate.yaml. */
async function changeableProject(deps: ConfigStore, projectId: string, verb: string) {
  if (deps.config.projects[projectId]) throw yamlForbidden("project", projectId, verb);
  const [row] = await deps.database.db.select().from(projects).where(eq(projects.projectId, projectId));
  if (!row) throw new DomainError("not_found", `no project ${projectId}`);
  return row;
}

export async function updateProject(
  deps: ConfigStore,
  auth: AuthContext,
  projectId: string,
  body: z.infer<typeof updateProjectBody>,
) {
  if (body.project_id !== undefined && body.project_id !== projectId) {
    throw new DomainError("validation_failed", "project_id cannot be changed; it must match the path", [
      { path: "project_id", message: "differs from the path" },
    ]);
  }
  await changeableProject(deps, projectId, "updated");
  await deps.database.db.transaction(async (tx) => {
    const [before] = await tx.select().from(projects).where(eq(projects.projectId, projectId)).for("update");
    if (!before) throw new DomainError("not_found", `no project ${projectId}`);
    const [after] = await tx
      .update(projects)
      .set({ ...toRow(body), updatedAt: new Date() })
      .where(eq(projects.projectId, projectId))
      .returning();
    if (!after) throw new DomainError("not_found", `no project ${projectId}`);
    await recordAudit(tx, auth, { entityType: "project", entityId: projectId, action: "update", before: rowView(before), after: rowView(after) });
  });
  return { project_id: projectId, updated: true as const };
}

export async function deleteProject(deps: ConfigStore, auth: AuthContext, projectId: string, confirm: boolean) {
  await changeableProject(deps, projectId, "deleted");
  if (!confirm) return { would_delete: { project_id: projectId } };
  await deps.database.db.transaction(async (tx) => {
    const [row] = await tx.delete(projects).where(eq(projects.projectId, projectId)).returning();
    if (!row) throw new DomainError("not_found", `no project ${projectId}`);
    await recordAudit(tx, auth, { entityType: "project", entityId: projectId, action: "delete", before: rowView(row) });
  });
  return { deleted: projectId };
}
