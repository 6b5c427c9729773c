import { eq } from "drizzle-orm";
import { z } from "zod";
import type { AuthContext } from "../auth/context.js";
import { recordAudit } from "../audit/record.js";
import { PROVIDER_TYPES, type ProviderType } from "../config/schema.js";
import { models, providers } from "../db/schema/index.js";
import { DomainError } from "../errors.js";
import { maskSecret } from "../logging.js";
import { providerAad } from "../secrets/box.js";
import { entityId, hasSpaceOrControl, yamlForbidden } from "./common.js";
import { type ConfigStore, type EffectiveProvider, listEffectiveModels, type SecretStore } from "./registry.js";
import { BASE_URL_HOSTS_KEY, bareHost, checkBaseUrl, originOf, trustedUpstreamHosts } from "./url-policy.js";
import { VENDORS } from "./vendors.js";

export const MAX_API_KEY_LENGTH = 4096;

/** An unknown type is a 422 that lists the supported ones. */
export const providerType = z.enum(PROVIDER_TYPES, {
  error: () => `unsupported provider type; supported types: ${PROVIDER_TYPES.join(", ")}`,
});
const apiKey = z.string().max(MAX_API_KEY_LENGTH).refine((k) => !hasSpaceOrControl(k), "api_key must not contain whitespace or control characters");
const baseUrl = z.string().min(1).max(4096).nullable();

export const createProviderBody = z.strictObject({
  provider_id: entityId,
  provider_type: providerType,
  api_key: apiKey.nullable().optional(),
  base_url: baseUrl.optional(),
});

export const updateProviderBody = z
  .strictObject({ provider_id: entityId, api_key: apiKey, base_url: baseUrl, provider_type: providerType })
  .partial()
  .refine((b) => Object.keys(b).some((k) => k !== "provider_id"), "body must change at least one of api_key, base_url, provider_type");

export const testProviderBody = z.strictObject({
  provider_type: providerType,
  api_key: apiKey,
  base_url: baseUrl.optional(),
});

/** The provider as reads show it: the key only ever masked. */
export function providerView(p: EffectiveProvider) {
  return {
    provider_id: p.providerId,
    provider_type: p.providerType,
    source: p.source,
    api_key_masked: p.apiKeyMasked,
    base_url: p.baseUrl,
    configured: p.configured,
    type: p.location,
  };
}

type ProviderRow = typeof providers.$inferSelect;

function rowAudit(row: ProviderRow) {
  return { provider_id: row.providerId, provider_type: row.providerType, api_key_masked: row.apiKeyMasked, base_url: row.baseUrl };
}

/** SSRF rule for any base_url we would send a key to (create, update, test). */
export function checkedBaseUrl(deps: Pick<ConfigStore, "config">, type: ProviderType, raw: string | null | undefined): string | null {
  if (raw === null || raw === undefined) {
    if (!VENDORS[type].defaultBaseUrl) {
      throw new DomainError("validation_failed", `provider type ${type} has no vendor default; base_url is required`, [
        { path: "base_url", message: "required for openai_compatible" },
      ]);
    }
    return null;
  }
  return checkBaseUrl(raw, trustedUpstreamHosts(deps.config)).url;
}

export async function createProvider(deps: SecretStore, auth: AuthContext, body: z.infer<typeof createProviderBody>) {
  const id = body.provider_id;
  if (deps.config.providers[id]) throw new DomainError("conflict", `provider ${id} already exists (source yaml)`);
  const url = checkedBaseUrl(deps, body.provider_type, body.base_url);
  const key = body.api_key ?? "";
  const values = {
    providerId: id,
    providerType: body.provider_type,
    apiKeyEncrypted: key ? deps.secrets.encrypt(key, providerAad(id)) : null,
    apiKeyMasked: maskSecret(key),
    baseUrl: url,
  };
  await deps.database.db.transaction(async (tx) => {
    const [row] = await tx.insert(providers).values(values).onConflictDoNothing().returning();
    if (!row) throw new DomainError("conflict", `provider ${id} already exists (source db)`);
    await recordAudit(tx, auth, { entityType: "provider", entityId: id, action: "create", after: rowAudit(row) });
  });
  return { provider_id: id, source: "db" as const, api_key_masked: values.apiKeyMasked, provider_type: body.provider_type, base_url: url };
}

async function changeableProvider(deps: ConfigStore, providerId: string, verb: string): Promise<ProviderRow> {
  if (deps.config.providers[providerId]) throw yamlForbidden("provider", providerId, verb);
  const [row] = await deps.database.db.select().from(providers).where(eq(providers.providerId, providerId));
  if (!row) throw new DomainError("not_found", `no provider ${providerId}`);
  return row;
}

/**
 * The host rule of PATCH /v1/providers/{id} (docs/api/manage.md): moving base_url without supplying a new key would send the stored key
 * to the new place, so it must be where the key was entered for (the current origin: scheme, host
 * and port together, so not another port nor plain http), the vendor's default origin, or a host
 * the operator trusts (listed in serve.provider_base_url_hosts or used by a provider in voxgate.yaml).
 */
function checkHostMove(deps: Pick<ConfigStore, "config">, row: ProviderRow, newType: ProviderType, newUrl: string | null) {
  const oldType = (PROVIDER_TYPES as readonly string[]).includes(row.providerType) ? (row.providerType as ProviderType) : newType;
  const vendorOrigin = (type: ProviderType) => {
    const base = VENDORS[type].defaultBaseUrl;
    return base ? originOf(base) : null;
  };
  const target = newUrl ? originOf(newUrl) : vendorOrigin(newType);
  if (!target) return;
  const current = row.baseUrl ? originOf(row.baseUrl) : vendorOrigin(oldType);
  if (target === current || target === vendorOrigin(newType)) return;
  const host = bareHost(new URL(target).hostname);
  if (trustedUpstreamHosts(deps.config).has(host)) return;
  throw new DomainError(
    "unpermitted_base_url",
    `base_url ${target} is not permitted without a new api_key: the stored key was entered for ${current ?? "no origin"}; use that origin (same scheme, host and port), the vendor's default, or list the host in ${BASE_URL_HOSTS_KEY}`,
    { reason: "host_not_permitted", host, origin: target, config_key: BASE_URL_HOSTS_KEY },
  );
}

export async function updateProvider(
  deps: SecretStore,
  auth: AuthContext,
  providerId: string,
  body: z.infer<typeof updateProviderBody>,
) {
  if (body.provider_id !== undefined && body.provider_id !== providerId) {
    throw new DomainError("validation_failed", "provider_id cannot be changed; it must match the path", [
      { path: "provider_id", message: "differs from the path" },
    ]);
  }
  const current = await changeableProvider(deps, providerId, "updated");
  const newType = body.provider_type ?? (current.providerType as ProviderType);
  const urlGiven = body.base_url !== undefined;
  const newUrl = urlGiven ? checkedBaseUrl(deps, newType, body.base_url) : current.baseUrl;
  if (!urlGiven && newUrl === null && !VENDORS[newType].defaultBaseUrl) checkedBaseUrl(deps, newType, null);
  if (urlGiven && newUrl !== current.baseUrl && body.api_key === undefined && current.apiKeyEncrypted) {
    checkHostMove(deps, current, newType, newUrl);
  }
  const set = {
    providerType: newType,
    baseUrl: newUrl,
    ...(body.api_key !== undefined && {
      apiKeyEncrypted: body.api_key ? deps.secrets.encrypt(body.api_key, providerAad(providerId)) : null,
      apiKeyMasked: maskSecret(body.api_key),
    }),
    updatedAt: new Date(),
  };
  const after = await deps.database.db.transaction(async (tx) => {
    const [before] = await tx.select().from(providers).where(eq(providers.providerId, providerId)).for("update");
    if (!before) throw new DomainError("not_found", `no provider ${providerId}`);
    const [row] = await tx.update(providers).set(set).where(eq(providers.providerId, providerId)).returning();
    if (!row) throw new DomainError("not_found", `no provider ${providerId}`);
    await recordAudit(tx, auth, { entityType: "provider", entityId: providerId, action: "update", before: rowAudit(before), after: rowAudit(row) });
    return row;
  });
  return { ...rowAudit(after), source: "db" as const, updated: true as const };
}

/**
 * DELETE: the preview names the db models that reference the provider (deleted with it on
 * confirm). A provider still referenced by voxgate.yaml models cannot be deleted (409).
 */
export async function deleteProvider(deps: ConfigStore, auth: AuthContext, providerId: string, confirm: boolean) {
  await changeableProvider(deps, providerId, "deleted");
  const referencing = (await listEffectiveModels(deps)).filter((m) => m.providerId === providerId);
  const yamlModels = referencing.filter((m) => m.source === "yaml").map((m) => m.modelId);
  const dbModels = referencing.filter((m) => m.source === "db").map((m) => m.modelId);
  if (yamlModels.length > 0) {
    throw new DomainError("conflict", `provider ${providerId} is used by models in voxgate.yaml: ${yamlModels.join(", ")}`, {
      yaml_models: yamlModels,
    });
  }
  if (!confirm) return { would_delete: { provider_id: providerId, models: dbModels } };
  await deps.database.db.transaction(async (tx) => {
    const gone = await tx.delete(models).where(eq(models.providerId, providerId)).returning();
    for (const m of gone) {
      await recordAudit(tx, auth, { entityType: "model", entityId: m.modelId, action: "delete", before: modelAudit(m) });
    }
    const [row] = await tx.delete(providers).where(eq(providers.providerId, providerId)).returning();
    if (!row) throw new DomainError("not_found", `no provider ${providerId}`);
    await recordAudit(tx, auth, { entityType: "provider", entityId: providerId, action: "delete", before: rowAudit(row) });
    dbModels.splice(0, dbModels.length, ...gone.map((m) => m.modelId));
  });
  return { deleted: providerId, deleted_models: dbModels };
}

export function modelAudit(row: typeof models.$inferSelect) {
  return {
    model_id: row.modelId,
    modality: row.modality,
    provider_id: row.providerId,
    model_name: row.modelName,
    display_name: row.displayName,
    default_language: row.defaultLanguage,
  };
}
