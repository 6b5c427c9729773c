import { queryOptions } from "@tanstack/react-query";
import { get } from "../client";
import type { ApiKey, AuditEntry, ModelList, ProjectList, ProviderView, Whoami } from "../types";

/**
 * What the key may do, projects, providers, models, API keys and the audit log. A write invalidates
 * the list it changed with the same factory's key (e.g. `manageQueries.projects().queryKey`).
 */
export const manageQueries = {
  /** Keyed by the key itself: signing in with another key is another entry. */
  whoami: (key: string | null) => queryOptions({ queryKey: ["whoami", key], queryFn: () => get<Whoami>("/api/whoami"), retry: false, staleTime: 60_000 }),
  projects: () => queryOptions({ queryKey: ["projects"], queryFn: () => get<ProjectList>("/api/projects") }),
  providers: () => queryOptions({ queryKey: ["providers"], queryFn: () => get<{ providers: ProviderView[] }>("/v1/providers") }),
  models: () => queryOptions({ queryKey: ["models"], queryFn: () => get<ModelList>("/api/models") }),
  apiKeys: () => queryOptions({ queryKey: ["api-keys"], queryFn: () => get<ApiKey[]>("/v1/api-keys", { include_revoked: true }) }),
  audit: (entityType: string, entityId: string, action: string) =>
    queryOptions({
      queryKey: ["audit", entityType, entityId, action],
      queryFn: () => get<AuditEntry[]>("/v1/audit-log", { entity_type: entityType, entity_id: entityId, action, limit: 500 }),
    }),
};
