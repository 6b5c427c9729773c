import { asc, eq } from "drizzle-orm";
import type { BudgetAction, Modality, ProviderType } from "../config/schema.js";
import { BUDGET_ACTIONS, MODALITIES, PROVIDER_TYPES } from "../config/schema.js";
import type { Config } from "../config/schema.js";
import type { Database, Db } from "../db/client.js";
import { models, projects, providers } from "../db/schema/index.js";
import { maskSecret } from "../logging.js";
import { providerAad, type SecretBox } from "../secrets/box.js";

/**
 * The effective registry: entities from voxgate.yaml (source yaml) merged with those managed
 * through the API (source db). YAML wins on an id collision. Every read path uses these.
 */

/** Where the registry lives: voxgate.yaml (already parsed) and the database. */
export interface ConfigStore {
  config: Config;
  database: Database;
}

/** The registry plus the box that seals provider API keys at rest. */
export interface SecretStore extends ConfigStore {
  secrets: SecretBox;
}

export interface EffectiveProvider {
  providerId: string;
  providerType: ProviderType;
  source: "yaml" | "db";
  baseUrl: string | null;
  apiKeyMasked: string | null;
  /** A key is set, or the provider is self-hosted (needs none). */
  configured: boolean;
  /** cloud, or local for openai_compatible (vLLM, Ollama, LocalAI, speaches). */
  location: "cloud" | "local";
}

export interface EffectiveModel {
  modelId: string;
  modality: Modality;
  providerId: string;
  modelName: string;
  displayName: string | null;
  defaultLanguage: string | null;
  source: "yaml" | "db";
}

export interface EffectiveProject {
  id: string;
  name: string;
  description: string | null;
  dailyBudget: number | null;
  budgetAction: BudgetAction;
  defaultStack: string | null;
  /** The stack a throttled project is served with (yaml only). */
  throttleStack: string | null;
  tags: string[];
  accent: string | null;
  /** The owning tenant; null: a shared project (docs/api/manage.md, "Project ownership"). */
  tenantId: string | null;
  source: "yaml" | "db";
}

/**
 * voicegw.yaml's self-hosted provider ids: OpenAI-compatible servers on the operator's own hosts
 * (status `type: local`, no key needed, free in the catalog).
 */
export const SELF_HOSTED_PROVIDER_IDS = ["whisper", "kokoro", "piper", "ollama", "local"] as const;

/**
 * A provider id that is a vendor name implies its type (`openai: {api_key: …}`, `assemblyai`); the
 * self-hosted ids above and any other id without a declared type are `openai_compatible` (local).
 */
export function inferProviderType(providerId: string, declared: string | undefined): ProviderType {
  if (declared && (PROVIDER_TYPES as readonly string[]).includes(declared)) return declared as ProviderType;
  if ((SELF_HOSTED_PROVIDER_IDS as readonly string[]).includes(providerId)) return "openai_compatible";
  if ((PROVIDER_TYPES as readonly string[]).includes(providerId)) return providerId as ProviderType;
  return "openai_compatible";
}

export async function listEffectiveProviders(deps: ConfigStore): Promise<EffectiveProvider[]> {
  const out = new Map<string, EffectiveProvider>();
  for (const [id, p] of Object.entries(deps.config.providers)) {
    const type = inferProviderType(id, p.type);
    out.set(id, {
      providerId: id,
      providerType: type,
      source: "yaml",
      baseUrl: p.base_url ?? null,
      apiKeyMasked: maskSecret(p.api_key),
      configured: Boolean(p.api_key) || type === "openai_compatible",
      location: type === "openai_compatible" ? "local" : "cloud",
    });
  }
  for (const row of await dbProviders(deps.database.db)) {
    if (out.has(row.providerId)) continue;
    const type = inferProviderType(row.providerId, row.providerType);
    out.set(row.providerId, {
      providerId: row.providerId,
      providerType: type,
      source: "db",
      baseUrl: row.baseUrl,
      apiKeyMasked: row.apiKeyMasked,
      configured: Boolean(row.apiKeyEncrypted) || type === "openai_compatible",
      location: type === "openai_compatible" ? "local" : "cloud",
    });
  }
  return [...out.values()];
}

export async function listEffectiveModels(deps: ConfigStore): Promise<EffectiveModel[]> {
  const out = new Map<string, EffectiveModel>();
  for (const modality of MODALITIES) {
    for (const [id, m] of Object.entries(deps.config.models[modality] ?? {})) {
      out.set(id, {
        modelId: id,
        modality,
        providerId: m.provider,
        modelName: m.model,
        displayName: m.display_name ?? null,
        defaultLanguage: m.default_language ?? null,
        source: "yaml",
      });
    }
  }
  for (const row of await deps.database.db.select().from(models).orderBy(asc(models.createdAt), asc(models.modelId))) {
    if (out.has(row.modelId)) continue;
    out.set(row.modelId, {
      modelId: row.modelId,
      modality: row.modality as Modality,
      providerId: row.providerId,
      modelName: row.modelName,
      displayName: row.displayName,
      defaultLanguage: row.defaultLanguage,
      source: "db",
    });
  }
  return [...out.values()];
}

/** A stored (source db) project as the registry shows it. */
export function projectFromRow(row: typeof projects.$inferSelect): EffectiveProject {
  return {
    id: row.projectId,
    name: row.name,
    description: row.description,
    dailyBudget: row.dailyBudget === null ? null : Number(row.dailyBudget),
    budgetAction: (BUDGET_ACTIONS as readonly string[]).includes(row.budgetAction) ? (row.budgetAction as BudgetAction) : "warn",
    defaultStack: row.defaultStack,
    throttleStack: null,
    tags: row.tags,
    accent: row.accent,
    tenantId: row.tenantId,
    source: "db",
  };
}

export async function listEffectiveProjects(deps: ConfigStore): Promise<EffectiveProject[]> {
  const out = new Map<string, EffectiveProject>();
  for (const [id, p] of Object.entries(deps.config.projects)) {
    out.set(id, {
      id,
      name: p.name ?? id,
      description: p.description ?? null,
      dailyBudget: p.daily_budget ?? null,
      budgetAction: p.budget_action,
      defaultStack: p.default_stack ?? null,
      throttleStack: p.throttle_stack ?? null,
      tags: p.tags,
      accent: p.accent ?? null,
      tenantId: p.tenant_id ?? null,
      source: "yaml",
    });
  }
  for (const row of await deps.database.db.select().from(projects).orderBy(asc(projects.createdAt), asc(projects.projectId))) {
    if (!out.has(row.projectId)) out.set(row.projectId, projectFromRow(row));
  }
  return [...out.values()];
}

function dbProviders(db: Db) {
  return db.select().from(providers).orderBy(asc(providers.createdAt), asc(providers.providerId));
}

export async function findEffectiveProvider(
  deps: ConfigStore,
  providerId: string,
): Promise<EffectiveProvider | undefined> {
  return (await listEffectiveProviders(deps)).find((p) => p.providerId === providerId);
}

export async function findEffectiveModel(
  deps: ConfigStore,
  modelId: string,
): Promise<EffectiveModel | undefined> {
  return (await listEffectiveModels(deps)).find((m) => m.modelId === modelId);
}

export async function findEffectiveProject(
  deps: ConfigStore,
  projectId: string,
): Promise<EffectiveProject | undefined> {
  return (await listEffectiveProjects(deps)).find((p) => p.id === projectId);
}

/** The provider's plaintext key (yaml value, or the db ciphertext opened with the row's own id). */
export async function providerApiKey(
  deps: SecretStore,
  provider: EffectiveProvider,
): Promise<string> {
  if (provider.source === "yaml") return deps.config.providers[provider.providerId]?.api_key ?? "";
  const [row] = await deps.database.db
    .select({ apiKeyEncrypted: providers.apiKeyEncrypted })
    .from(providers)
    .where(eq(providers.providerId, provider.providerId));
  if (!row?.apiKeyEncrypted) return "";
  return deps.secrets.decrypt(row.apiKeyEncrypted, providerAad(provider.providerId));
}

/** The models a project's default stack names (config `stacks`); empty when it has none. */
export function stackModelIds(config: Config, project: EffectiveProject): Set<string> {
  const stack = project.defaultStack ? config.stacks[project.defaultStack] : undefined;
  return new Set([stack?.stt, stack?.llm, stack?.tts].filter((m): m is string => Boolean(m)));
}
