import { eq } from "drizzle-orm";
import { z } from "zod";
import type { AuthContext } from "../auth/context.js";
import { recordAudit } from "../audit/record.js";
import { MODALITIES } from "../config/schema.js";
import { models } from "../db/schema/index.js";
import { DomainError } from "../errors.js";
import { hasSpaceOrControl, yamlForbidden } from "./common.js";
import { type ConfigStore, type EffectiveModel, findEffectiveModel, listEffectiveProviders } from "./registry.js";
import { modelAudit } from "./providers.js";

export const createModelBody = z.strictObject({
  modality: z.enum(MODALITIES, { error: () => `modality must be one of ${MODALITIES.join(", ")}` }),
  provider_id: z.string().min(1).max(64),
  // Model names may hold slashes (meta-llama/Llama-3.1-8B on vLLM); never whitespace or controls.
  model_name: z
    .string()
    .min(1)
    .max(200)
    .refine((n) => !hasSpaceOrControl(n), "must not contain whitespace or control characters"),
  display_name: z.string().trim().min(1).max(200).nullable().optional(),
  default_language: z.string().trim().min(1).max(35).nullable().optional(),
});

export function modelView(m: EffectiveModel) {
  return {
    model_id: m.modelId,
    modality: m.modality,
    provider_id: m.providerId,
    model_name: m.modelName,
    display_name: m.displayName,
    default_language: m.defaultLanguage,
    source: m.source,
  };
}

function yamlHasModel(deps: Pick<ConfigStore, "config">, modelId: string): boolean {
  return MODALITIES.some((mod) => deps.config.models[mod]?.[modelId] !== undefined);
}

export async function createModel(deps: ConfigStore, auth: AuthContext, body: z.infer<typeof createModelBody>) {
  const providerIds = (await listEffectiveProviders(deps)).map((p) => p.providerId);
  if (!providerIds.includes(body.provider_id)) {
    throw new DomainError(
      "validation_failed",
      `unknown provider ${body.provider_id}; available providers: ${providerIds.length ? providerIds.join(", ") : "(none)"}`,
      [{ path: "provider_id", message: "unknown provider" }],
    );
  }
  const modelId = `${body.provider_id}/${body.model_name}`;
  if (yamlHasModel(deps, modelId)) throw new DomainError("conflict", `model ${modelId} already exists (source yaml)`);
  await deps.database.db.transaction(async (tx) => {
    const [row] = await tx
      .insert(models)
      .values({
        modelId,
        modality: body.modality,
        providerId: body.provider_id,
        modelName: body.model_name,
        displayName: body.display_name ?? null,
        defaultLanguage: body.default_language ?? null,
      })
      .onConflictDoNothing()
      .returning();
    if (!row) throw new DomainError("conflict", `model ${modelId} already exists (source db)`);
    await recordAudit(tx, auth, { entityType: "model", entityId: modelId, action: "create", after: modelAudit(row) });
  });
  return { model_id: modelId, source: "db" as const, created: true as const };
}

export async function getModel(deps: ConfigStore, modelId: string) {
  const m = await findEffectiveModel(deps, modelId);
  if (!m) throw new DomainError("not_found", `no model ${modelId}`);
  return modelView(m);
}

export async function deleteModel(deps: ConfigStore, auth: AuthContext, modelId: string, confirm: boolean) {
  if (yamlHasModel(deps, modelId)) throw yamlForbidden("model", modelId, "deleted");
  const [existing] = await deps.database.db.select().from(models).where(eq(models.modelId, modelId));
  if (!existing) throw new DomainError("not_found", `no model ${modelId}`);
  if (!confirm) return { would_delete: { model_id: modelId } };
  await deps.database.db.transaction(async (tx) => {
    const [row] = await tx.delete(models).where(eq(models.modelId, modelId)).returning();
    if (!row) throw new DomainError("not_found", `no model ${modelId}`);
    await recordAudit(tx, auth, { entityType: "model", entityId: modelId, action: "delete", before: modelAudit(row) });
  });
  return { deleted: modelId };
}
