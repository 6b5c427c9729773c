import { sql } from "drizzle-orm";
import { Pool } from "undici";
import type { Env } from "../config/env.js";
import type { Config } from "../config/schema.js";
import type { Database } from "../db/client.js";
import { diagGates, diagRuns } from "../db/schema/index.js";
import { type GateResult, verdictOf } from "./gates.js";
import { type StaticKey, staticKeysFromConfig } from "../auth/static-keys.js";

const COLLECTOR_TIMEOUT_MS = 5000;

/** Local gates: what `voxgate check` can decide from config and the store alone. */
export async function localGates(config: Config, env: Env, database: Database): Promise<GateResult[]> {
  const gates: GateResult[] = [];
  try {
    await database.db.execute(sql`select 1 from requests limit 1`);
    gates.push({ gateId: "database", status: "PASS", detail: `${database.kind} reachable, schema migrated` });
  } catch (err) {
    gates.push({ gateId: "database", status: "FAIL", detail: `store unusable: ${(err as Error).message}` });
  }
  const providerCount = Object.keys(config.providers).length;
  gates.push(
    providerCount > 0
      ? { gateId: "providers", status: "PASS", detail: `${providerCount} provider(s) in voxgate.yaml` }
      : { gateId: "providers", status: "WARN", detail: "no providers in voxgate.yaml" },
  );
  gates.push(authGate(config, env));
  const livekit = Boolean((env.LIVEKIT_API_KEY && env.LIVEKIT_API_SECRET) || (config.livekit?.api_key && config.livekit.api_secret));
  gates.push(
    livekit
      ? { gateId: "livekit_webhook", status: "PASS", detail: "webhook credentials configured" }
      : { gateId: "livekit_webhook", status: "WARN", detail: "no LiveKit credentials: the webhook answers 503" },
  );
  return gates;
}

/**
 * Static keys: valid (startup would refuse them otherwise), and in collector mode (Postgres) at least
 * one key that agents can be given without handing them the operator's `*` key.
 */
export function authGate(config: Config, env: Env): GateResult {
  let keys: StaticKey[];
  try {
    keys = [...staticKeysFromConfig(config, env).values()];
  } catch (err) {
    return { gateId: "auth", status: "FAIL", detail: (err as Error).message };
  }
  if (keys.length === 0) return { gateId: "auth", status: "WARN", detail: "no API keys: authentication is off" };
  const collectorMode = Boolean(env.DATABASE_URL || config.database?.url);
  const forAgents = keys.some(({ context: { scopes } }) => !scopes.includes("*") && !scopes.includes("admin") && (scopes.includes("ingest") || scopes.includes("write")));
  if (collectorMode && !forAgents) {
    return {
      gateId: "auth",
      status: "WARN",
      detail: "collector mode with only `*`/admin keys: agents would hold an admin key; set VOXGATE_INGEST_KEY (npx voxgate keys new-static) and give agents that key",
    };
  }
  return { gateId: "auth", status: "PASS", detail: `${keys.length} static API key(s) configured` };
}

/**
 * The collector verification (`voxgate check`): /health answers; POST /v1/ingest [] without a key is 401/403;
 * with the key it is 2xx. UNKNOWN when no collector URL is configured (single-node mode).
 */
export async function collectorGates(env: Env): Promise<GateResult[]> {
  const url = env.VOXGATE_COLLECTOR_URL;
  if (!url) return [];
  let origin: URL;
  try {
    origin = new URL(url);
  } catch {
    return [{ gateId: "collector", status: "FAIL", detail: "VOXGATE_COLLECTOR_URL is not a URL" }];
  }
  const pool = new Pool(origin.origin, { connections: 1, headersTimeout: COLLECTOR_TIMEOUT_MS, bodyTimeout: COLLECTOR_TIMEOUT_MS });
  const base = origin.pathname.replace(/\/$/, "");
  const call = async (method: "GET" | "POST", path: string, key?: string) => {
    const res = await pool.request({
      method,
      path: base + path,
      headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
      body: method === "POST" ? "[]" : undefined,
    });
    await res.body.dump();
    return res.statusCode;
  };
  try {
    const health = await call("GET", "/health");
    if (health !== 200) return [{ gateId: "collector", status: "FAIL", detail: `GET /health answered ${health}` }];
    const anonymous = await call("POST", "/v1/ingest");
    const gates: GateResult[] = [
      anonymous === 401 || anonymous === 403
        ? { gateId: "collector_auth", status: "PASS", detail: `anonymous ingest refused (${anonymous})` }
        : { gateId: "collector_auth", status: "FAIL", detail: `anonymous ingest answered ${anonymous}: collector is open` },
    ];
    if (!env.VOXGATE_API_KEY) {
      gates.push({ gateId: "collector_ingest", status: "UNKNOWN", detail: "VOXGATE_API_KEY unset: cannot test ingest" });
    } else {
      const keyed = await call("POST", "/v1/ingest", env.VOXGATE_API_KEY);
      gates.push(
        keyed >= 200 && keyed < 300
          ? { gateId: "collector_ingest", status: "PASS", detail: `ingest with key answered ${keyed}` }
          : { gateId: "collector_ingest", status: "FAIL", detail: `ingest with key answered ${keyed}` },
      );
    }
    return [{ gateId: "collector", status: "PASS", detail: "GET /health answered 200" }, ...gates];
  } catch (err) {
    return [{ gateId: "collector", status: "FAIL", detail: `collector unreachable: ${(err as Error).message}` }];
  } finally {
    await pool.close();
  }
}

/** Stores a run and its gates (read back by the diagnostics metrics). */
export async function storeRun(database: Database, agentId: string, gates: GateResult[], startedAt: Date) {
  const verdict = verdictOf(gates.map((g) => g.status));
  await database.db.transaction(async (tx) => {
    const [run] = await tx
      .insert(diagRuns)
      .values({ agentId, verdict, startedAt, finishedAt: new Date() })
      .returning({ id: diagRuns.id });
    if (run && gates.length > 0) {
      await tx.insert(diagGates).values(gates.map((g) => ({ runId: run.id, gateId: g.gateId, status: g.status, detail: g.detail })));
    }
  });
  return verdict;
}
