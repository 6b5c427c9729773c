import { z } from "zod";
import { apiKeyList, keyListQuery, revokeApiKey } from "../auth/answers.js";
import type { AuthContext, Permission } from "../auth/context.js";
import { type BillingDeps, billingUsage, deleteRule, gaps, gapsQuery, quote, quoteEntry, rateCard, upsertRule, usageQuery } from "../billing/answers.js";
import { rateRuleInputSchema } from "../config/schema.js";
import { callListQuery, listCalls } from "../dashboard/calls.js";
import { fleetIndex, fleetIndexQuery } from "../fleet/index-queries.js";
import { assertUntenanted, requireOperatorForProviders, requireUntenanted } from "../manage/common.js";
import { createProject, createProjectBody, listProjectsWithStats, projectDetail, updateProject, updateProjectBody } from "../manage/projects.js";
import { health, modelList, modelListQuery, providerList, serviceStatus } from "../manage/status.js";
import { costReport } from "../reports/costs.js";
import { latencyReport } from "../reports/latency.js";
import { requestLogs } from "../reports/logs.js";
import { costsQuery, latencyQuery, logsQuery } from "../reports/query.js";
import type { VirtualKeyVerifier } from "../auth/virtual-keys.js";
import type { Logger } from "../logging.js";
import type { ConfigStore } from "../manage/registry.js";
import type { ReadStore } from "../db/client.js";
import { roomLatencyRecord, sessionDetail, sessionPage } from "../sessions/answers.js";
import { roomLatencyQuery, sessionListQuery } from "../sessions/params.js";

/**
 * The MCP tools: each a thin adapter over the function its HTTP route calls, with the route's own
 * query/body schema (so its argument names, defaults and refusals are the route's) and the route's
 * scope. A tool's result is the route's JSON (an array answer is wrapped under one key, as MCP
 * structured content is an object).
 */
export interface ToolSpec {
  name: string;
  description: string;
  /** The scope of the route; null: any valid key (GET /health needs none). */
  scope: Permission | null;
  /** Validates the arguments; its output is what run takes. */
  input: z.ZodType;
  /** run takes the arguments as sent (after input accepted them): the route's function validates its body itself. */
  rawArguments?: boolean;
  run(services: McpDeps, auth: AuthContext, args: never): Promise<object> | object;
}

/**
 * Query parameters arrive as strings on HTTP; a model sends JSON numbers and booleans. Those are
 * turned into the string the query would carry, then the route's own schema decides.
 */
const asQuery = <S extends z.ZodType>(schema: S) =>
  z.preprocess(
    (v) =>
      v !== null && typeof v === "object" && !Array.isArray(v)
        ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, typeof x === "number" || typeof x === "boolean" ? String(x) : x]))
        : v,
    schema,
  );

const id = (what: string) => z.string().min(1).max(512).describe(what);
/** What the tools read between them: the registry's store, the read database, the billing deps, the vk_ verifier, the start time. */
export type McpDeps = ConfigStore & ReadStore & BillingDeps & { virtualKeys: VirtualKeyVerifier; log: Logger; startedAt: number };

/** The report tools read where their routes do: the read database (the fleet index writes its caches: the primary). */
const db = (s: McpDeps) => s.readDatabase.db;

function tool<S extends z.ZodType>(spec: {
  name: string;
  description: string;
  scope: Permission | null;
  input: S;
  rawArguments?: boolean;
  run: (services: McpDeps, auth: AuthContext, args: z.output<S>) => Promise<object> | object;
}): ToolSpec {
  return spec as ToolSpec;
}

/** A tool whose one argument is the id of a `what` (`<what>_id`), handed to run as it is. */
function idTool(spec: {
  name: string;
  description: string;
  scope: Permission;
  what: string;
  run: (services: McpDeps, auth: AuthContext, id: string) => Promise<object> | object;
}): ToolSpec {
  const { what, run, ...rest } = spec;
  const key = `${what}_id`;
  // The input requires the key: it is a string by the time run is called.
  return tool({ ...rest, input: z.object({ [key]: id(`the ${what} id`) }), run: (s, a, q) => run(s, a, q[key] as string) });
}

const noArgs = z.strictObject({});

export const TOOLS: readonly ToolSpec[] = [
  tool({ name: "get_health", description: "Is the Voxgate server up: status, uptime and version.", scope: null, input: noArgs, run: (s) => health(s) }),
  tool({
    name: "get_status",
    description: "Configured providers (operator keys only) and the number of models and projects.",
    scope: "read",
    input: noArgs,
    run: (s, a) => serviceStatus(s, a),
  }),
  tool({
    name: "get_costs",
    description: "Spend in USD over a period (today, week, month, all), with breakdowns by provider, model and project; optionally one project.",
    scope: "read",
    input: asQuery(costsQuery),
    run: (s, a, q) => costReport(db(s), { ...q, tenantId: a.tenantId }),
  }),
  tool({
    name: "get_latency",
    description: "Time-to-first-byte and total latency percentiles per model over a period (probe traffic excluded); optionally one project.",
    scope: "read",
    input: asQuery(latencyQuery),
    run: (s, a, q) => latencyReport(db(s), { ...q, tenantId: a.tenantId }),
  }),
  tool({
    name: "get_logs",
    description: "The newest request records (provider, model, cost, latency, status), newest first; filter by modality (stt, llm, tts) or project.",
    scope: "read",
    input: asQuery(logsQuery),
    run: async (s, a, q) => ({ logs: await requestLogs(db(s), { ...q, tenantId: a.tenantId }) }),
  }),
  tool({
    name: "list_sessions",
    description: "Voice sessions newest first, one page; filter by project, room or since. Pass next_cursor back as cursor for the next page.",
    scope: "read",
    input: asQuery(sessionListQuery),
    run: (s, a, q) => sessionPage(s, a, q),
  }),
  tool({
    name: "get_session",
    description: "One session with its cost per modality and its providers.",
    scope: "read",
    input: z.object({ session_id: id("the session id"), tenant: z.string().optional().describe("operator keys: the tenant of a session id several tenants used") }),
    run: (s, a, q) => sessionDetail(s, a, q.session_id, q.tenant),
  }),
  tool({
    name: "get_room_latency",
    description: "A LiveKit room's turns and whole-call latency summaries (since_turn narrows the turns only).",
    scope: "read",
    input: asQuery(roomLatencyQuery.extend({ room: id("the room name") })),
    run: (s, a, q) => roomLatencyRecord(s, a, q.room, q),
  }),
  tool({
    name: "list_calls",
    description: "Calls (LiveKit rooms) newest first with their legs' summary; page with before (epoch ms).",
    scope: "read",
    input: asQuery(callListQuery),
    run: async (s, a, q) => ({ calls: await listCalls(db(s), a, q) }),
  }),
  tool({
    name: "get_fleet",
    description: "The fleet index: per-agent cost, p95 latency, errors and probe traffic over a period, one page.",
    scope: "read",
    input: asQuery(fleetIndexQuery),
    run: (s, a, q) => fleetIndex(s.database.db, { ...q, tenantId: a.tenantId }),
  }),
  tool({
    name: "get_billing_usage",
    description: "Rated revenue, recorded cost and margin by tenant between from and to (default: this UTC month); line items for one tenant.",
    scope: "read",
    input: asQuery(usageQuery),
    run: (s, a, q) => billingUsage(s, a, q),
  }),
  tool({
    name: "quote_price",
    description: "The price Voxgate charges for one model (modality and provider/model id), for a tenant or plan.",
    scope: "read",
    input: asQuery(quoteEntry),
    run: (s, a, q) => quote(s, a, q),
  }),
  tool({
    name: "get_pricing_gaps",
    description: "Models recorded without a price (so their revenue is unknown), with request counts.",
    scope: "read",
    input: asQuery(gapsQuery),
    run: (s, a, q) => gaps(s, a, q),
  }),
  tool({
    name: "get_rate_card",
    description: "The rate card in effect: default markup, pricing gate and the rules visible to this key.",
    scope: "read",
    input: noArgs,
    run: (s, a) => rateCard(s, a),
  }),
  tool({
    name: "list_projects",
    description: "Projects with their rolling 24 h cost and request count.",
    scope: "read",
    input: noArgs,
    run: (s, a) => listProjectsWithStats(s, a),
  }),
  idTool({ name: "get_project", description: "One project with today's spend and its budget status.", scope: "read", what: "project", run: projectDetail }),
  tool({
    name: "list_models",
    description: "Models by id (modality, provider), optionally those of one project's stack.",
    scope: "read",
    input: modelListQuery,
    run: (s, _a, q) => modelList(s, q.project),
  }),
  tool({
    name: "list_providers",
    description: "Providers with masked keys (operator keys only).",
    scope: "read",
    input: noArgs,
    run: (s, a) => {
      assertUntenanted(a, requireOperatorForProviders.message);
      return providerList(s);
    },
  }),
  tool({
    name: "upsert_rate_rule",
    description: "Create or replace the database rate rule of a scope (tenant, plan, modality, provider, model): a markup or fixed prices.",
    scope: "write",
    input: rateRuleInputSchema,
    // setRule validates the body itself (invalid_rate_rule), as the route does: it gets the arguments as sent.
    rawArguments: true,
    run: (s, a, q) => upsertRule(s, a, q),
  }),
  idTool({ name: "delete_rate_rule", description: "Delete a database rate rule by id.", scope: "write", what: "rule", run: deleteRule }),
  tool({
    name: "create_project",
    description: "Add a project (id, name, daily budget and what happens past it).",
    scope: "write",
    input: createProjectBody,
    run: (s, a, q) => {
      assertUntenanted(a, requireUntenanted.message);
      return createProject(s, a, q);
    },
  }),
  tool({
    name: "update_project",
    description: "Change fields of a project stored in the database (name, budget, budget action, stack, tags).",
    scope: "write",
    input: z.object({ project_id: id("the project id"), changes: updateProjectBody.describe("the fields to change, as PATCH /v1/projects/{project_id} takes them") }),
    run: (s, a, q) => {
      assertUntenanted(a, requireUntenanted.message);
      return updateProject(s, a, q.project_id, q.changes);
    },
  }),
  tool({
    name: "list_api_keys",
    description: "API keys of this key's tenant (never hashes or plaintexts); include_revoked defaults to true.",
    scope: "admin",
    input: asQuery(keyListQuery),
    run: async (s, a, q) => ({ keys: await apiKeyList(s, a, q) }),
  }),
  idTool({
    name: "revoke_api_key",
    description: "Revoke an API key by id (the row is kept for audit).",
    scope: "admin",
    what: "key",
    run: async (s, a, keyId) => ({ revoked: true, key: await revokeApiKey(s, a, keyId) }),
  }),
];

export const TOOL_BY_NAME: ReadonlyMap<string, ToolSpec> = new Map(TOOLS.map((t) => [t.name, t]));
