import { createHash, timingSafeEqual } from "node:crypto";
import type { TokenVerifier } from "livekit-server-sdk";
import { DomainError } from "../errors.js";
import type { Env } from "../config/env.js";
import type { Config } from "../config/schema.js";
import { WEBHOOK_CLOCK_TOLERANCE_SECONDS } from "./limits.js";

export interface LivekitCredentials {
  apiKey: string;
  apiSecret: string;
}

/**
 * LIVEKIT_API_KEY + LIVEKIT_API_SECRET when both are set, else the `livekit:` block's api_key +
 * api_secret; null (webhook fails closed with 503) when neither source has both.
 */
/** Where LiveKit's webhook credentials come from: the environment, else voxgate.yaml's livekit block. */
export interface LivekitSettings {
  env: Pick<Env, "LIVEKIT_API_KEY" | "LIVEKIT_API_SECRET">;
  config: Pick<Config, "livekit">;
}

export function livekitCredentials(deps: LivekitSettings): LivekitCredentials | null {
  const { LIVEKIT_API_KEY: envKey, LIVEKIT_API_SECRET: envSecret } = deps.env;
  if (envKey && envSecret) return { apiKey: envKey, apiSecret: envSecret };
  const block = deps.config.livekit;
  if (block?.api_key && block.api_secret) return { apiKey: block.api_key, apiSecret: block.api_secret };
  return null;
}

/** A bare compact JWS: three base64url segments, nothing else (so `Bearer <jwt>` is refused). */
const BARE_JWT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
const MAX_TOKEN_LENGTH = 8192;

const verifiers = new WeakMap<LivekitCredentials, TokenVerifier>();
/**
 * livekit-server-sdk, loaded on the first webhook rather than at startup: its module graph is part of
 * what `serve` loads before it is healthy (docs/perf/startup.md), for a route many deployments never call.
 */
let livekitSdk: Promise<typeof import("livekit-server-sdk")> | null = null;

/**
 * Verifies a LiveKit webhook exactly as LiveKit signs it, against the raw body bytes, before any parsing:
 * Authorization is a bare HS256 JWT (alg pinned, unlike the SDK which also takes HS384/512) whose iss is
 * the API key, exp not passed (10 s tolerance, exp required) and whose `sha256` claim is the standard
 * base64 SHA-256 of the body, compared in constant time. Throws 401 otherwise.
 */
export async function verifyWebhook(raw: Uint8Array, authorization: string | undefined, creds: LivekitCredentials): Promise<void> {
  const token = authorization?.trim() ?? "";
  if (token === "") throw unauthorized("missing Authorization header (a LiveKit webhook token)");
  if (token.length > MAX_TOKEN_LENGTH || !BARE_JWT.test(token)) {
    throw unauthorized("Authorization must be the bare LiveKit webhook JWT (no Bearer prefix)");
  }
  if (headerAlg(token) !== "HS256") throw unauthorized("webhook token must be signed with HS256");

  let verifier = verifiers.get(creds);
  if (!verifier) {
    livekitSdk ??= import("livekit-server-sdk");
    verifier = new (await livekitSdk).TokenVerifier(creds.apiKey, creds.apiSecret);
    verifiers.set(creds, verifier);
  }
  let claims: Record<string, unknown>;
  try {
    claims = (await verifier.verify(token, WEBHOOK_CLOCK_TOLERANCE_SECONDS)) as Record<string, unknown>;
  } catch {
    // The reason (bad signature, wrong issuer, expired) is not echoed: no oracle for forgers.
    throw unauthorized("webhook signature is not valid");
  }
  const claimed = claims.sha256;
  const actual = createHash("sha256").update(raw).digest("base64");
  if (typeof claimed !== "string" || !constantTimeEqual(claimed, actual)) {
    throw unauthorized("webhook body does not match its signature");
  }
}

function headerAlg(token: string): unknown {
  try {
    const header = JSON.parse(Buffer.from(token.slice(0, token.indexOf(".")), "base64url").toString("utf8")) as unknown;
    return header !== null && typeof header === "object" ? (header as Record<string, unknown>).alg : undefined;
  } catch {
    return undefined;
  }
}

function constantTimeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, "utf8");
  const y = Buffer.from(b, "utf8");
  return x.length === y.length && timingSafeEqual(x, y);
}

function unauthorized(message: string): DomainError {
  return new DomainError("unauthorized", message);
}
