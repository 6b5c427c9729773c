/**
 * Keys and YAML the tests use again and again. A test that needs a key of its own (a length edge, a
 * value a log must never show) keeps it local; the ordinary operator / reader / tenant keys come from
 * here so one spelling serves every file.
 */

/** Static keys (16+ characters, none starting with `vk_`): what each one may do is in `KEY_GRANTS`. */
const KEY_VALUES = {
  /** Operator: every scope, no tenant. */
  ops: "ops-key-0123456789abcdef",
  reader: "reader-key-0123456789abcdef",
  writer: "writer-key-0123456789abcdef",
  ingest: "ingest-only-key-0123456789abcdef",
  acmeReader: "acme-reader-key-0123456789abcdef",
  acmeWriter: "acme-writer-key-0123456789abcdef",
  acmeIngest: "acme-ingest-key-0123456789abcdef",
  globexReader: "globex-reader-key-0123456789abcdef",
  globexWriter: "globex-writer-key-0123456789abcdef",
  globexIngest: "globex-ingest-key-0123456789abcdef",
};

export type KeyName = keyof typeof KEY_VALUES;
/** Typed as plain strings so a key can be a parameter's default beside other keys. */
export const KEYS: Readonly<Record<KeyName, string>> = KEY_VALUES;

/** One `auth.api_keys` entry: a named fixture key, or a key of the test's own. */
export interface KeyEntry {
  key: string;
  /** Omitted: every scope (`*`). */
  scopes?: readonly string[];
  tenant?: string;
  name?: string;
}

/** Scopes and tenant of each fixture key. */
export const KEY_GRANTS: Record<KeyName, Omit<KeyEntry, "key">> = {
  ops: {},
  reader: { scopes: ["read"] },
  writer: { scopes: ["read", "write"] },
  ingest: { scopes: ["ingest"] },
  acmeReader: { scopes: ["read"], tenant: "acme" },
  acmeWriter: { scopes: ["read", "write"], tenant: "acme" },
  acmeIngest: { scopes: ["ingest"], tenant: "acme" },
  globexReader: { scopes: ["read"], tenant: "globex" },
  globexWriter: { scopes: ["read", "write"], tenant: "globex" },
  globexIngest: { scopes: ["ingest"], tenant: "globex" },
};

/**
 * An `auth:` block with the given keys, e.g. `authYaml("ops", "acmeReader", { key: MINE, scopes: ["ingest", "read"], tenant: "acme" })`.
 */
export function authYaml(...entries: (KeyName | KeyEntry)[]): string {
  const lines = entries.map((e) => {
    const entry: KeyEntry = typeof e === "string" ? { key: KEYS[e], ...KEY_GRANTS[e] } : e;
    const fields = [`key: ${entry.key}`];
    if (entry.name) fields.push(`name: ${entry.name}`);
    if (entry.scopes) fields.push(`scopes: [${entry.scopes.map((s) => (s === "*" ? '"*"' : s)).join(", ")}]`);
    if (entry.tenant) fields.push(`tenant_id: ${entry.tenant}`);
    return `    - { ${fields.join(", ")} }`;
  });
  return `auth:\n  api_keys:\n${lines.join("\n")}\n`;
}

/** Only the operator key: the most common auth block. */
export const OPS_YAML = authYaml("ops");

/** The secret that encrypts provider keys stored through the API. */
export const SECRET_ENV = { VOXGATE_SECRET: "test-secret-for-provider-keys-0123456789" } as const;

/** LiveKit webhook credentials (the signing side is `signBody` in test/calls/support.ts). */
export const LK_KEY = "APIcallsTestKey";
export const LK_SECRET = "calls-test-secret-0123456789abcdefghijklmnop";
export const LIVEKIT_ENV = { LIVEKIT_API_KEY: LK_KEY, LIVEKIT_API_SECRET: LK_SECRET } as const;

/** Rate-card rules that several billing tests price against. */
export const RULES = {
  /** A per-model token price for the default LLM. */
  gptMiniTokens: "{ model: openai/gpt-4.1-mini, input_price_usd: 0.6, output_price_usd: 2.4, unit: 1m_token }",
  /** Deepgram's cost set per minute (the provider does not report one). */
  deepgramCost: "{ provider: deepgram, sets: cost, fixed: 0.0043, unit: minute }",
  /** acme's TTS sold per thousand characters. */
  acmeTts: "{ tenant: acme, modality: tts, fixed: 0.30, unit: 1k_char }",
} as const;
