import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import type * as Yaml from "yaml";
import type { z } from "zod";
import { processEnv } from "./env.js";
import { type Config, configSchema, UNUSED_KEYS } from "./schema.js";

/**
 * The YAML parser (a CommonJS package of ~70 modules), required on the first voxgate.yaml read: a
 * process configured by its environment alone (the Docker image's default) never loads it
 * (docs/perf/startup.md).
 */
let yaml: typeof Yaml | null = null;
function parseYaml(text: string): unknown {
  yaml ??= createRequire(import.meta.url)("yaml") as typeof Yaml;
  return yaml.parse(text);
}

export class ConfigError extends Error {
  override name = "ConfigError";
}

export interface LoadedConfig {
  config: Config;
  /** The file it came from, or null when no voxgate.yaml was found (empty config). */
  path: string | null;
  /** Keys accepted but not used (voicegw.yaml sections, a shadowed alias): logged once at startup. */
  warnings: string[];
}

/** voxgate.yaml search order: VOXGATE_CONFIG, ./voxgate.yaml, ~/.config/voxgate/, /etc/voxgate/. */
export function configSearchPaths(home: string = homedir(), cwd: string = process.cwd()): string[] {
  return [
    resolve(cwd, "voxgate.yaml"),
    join(home, ".config", "voxgate", "voxgate.yaml"),
    "/etc/voxgate/voxgate.yaml",
  ];
}

export function findConfigFile(explicit: string | undefined, home?: string): string | null {
  if (explicit) {
    if (!existsSync(explicit)) throw new ConfigError(`VOXGATE_CONFIG points to ${explicit}, which does not exist`);
    return resolve(explicit);
  }
  return configSearchPaths(home).find((p) => existsSync(p)) ?? null;
}

const VAR_PATTERN = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** Replaces ${VAR} in every string value; an unset variable names itself and the key using it. */
export function interpolateEnv(value: unknown, env: NodeJS.ProcessEnv, file: string, path: string[] = []): unknown {
  if (typeof value === "string") {
    return value.replace(VAR_PATTERN, (_, name: string) => {
      const v = env[name];
      if (v === undefined) {
        throw new ConfigError(`${file}: ${keyPath(path)} uses \${${name}}, but environment variable ${name} is not set`);
      }
      return v;
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => interpolateEnv(v, env, file, [...path, String(i)]));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, interpolateEnv(v, env, file, [...path, k])]),
    );
  }
  return value;
}

function keyPath(path: (string | number | symbol)[]): string {
  return path.length === 0 ? "(top level)" : path.map(String).join(".");
}

function describeIssues(file: string, error: z.ZodError): string {
  return error.issues
    .flatMap((i) => {
      const path = i.path as (string | number)[];
      // A typo is named by its own path (`projects.support.budget_actoin`), not its parent's.
      if (i.code === "unrecognized_keys") return i.keys.map((k) => `${file}: ${keyPath([...path, k])}: unknown key (a typo?)`);
      return [`${file}: ${keyPath(path)}: ${i.message}`];
    })
    .join("\n");
}

const isMapping = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/**
 * voicegw.yaml spellings read as Voxgate's: `rate_limits:` is `rate_limiting:` (when both are given,
 * `rate_limiting` wins and `rate_limits` is reported). Returns the warnings for keys accepted but unused.
 */
function fromVoicegw(raw: Record<string, unknown>, file: string): string[] {
  const warnings: string[] = [];
  if ("rate_limits" in raw) {
    if (raw.rate_limiting === undefined) raw.rate_limiting = raw.rate_limits;
    else warnings.push(`${file}: rate_limits is ignored: rate_limiting is also set and wins`);
    delete raw.rate_limits;
  }
  for (const key of UNUSED_KEYS) {
    const [section, child] = key.split(".") as [string, string | undefined];
    const value = raw[section];
    const present = child === undefined ? value !== undefined : isMapping(value) && value[child] !== undefined;
    if (present) warnings.push(`${file}: ${key} is not used by Voxgate and is ignored`);
  }
  return warnings;
}

/** Parses YAML text into a validated Config and the warnings to log; `file` is used in messages only. */
export function parseConfigTextWithWarnings(text: string, file: string, env: NodeJS.ProcessEnv = processEnv()): { config: Config; warnings: string[] } {
  let raw: unknown;
  try {
    raw = parseYaml(text) ?? {};
  } catch (err) {
    throw new ConfigError(`${file}: invalid YAML: ${(err as Error).message}`);
  }
  if (typeof raw !== "object" || Array.isArray(raw)) throw new ConfigError(`${file}: top level must be a mapping`);
  const interpolated = interpolateEnv(raw, env, file) as Record<string, unknown>;
  const warnings = fromVoicegw(interpolated, file);
  const result = configSchema.safeParse(interpolated);
  if (!result.success) throw new ConfigError(describeIssues(file, result.error));
  return { config: result.data, warnings };
}

/** Parses YAML text into a validated Config; `file` is used in error messages only. */
export function parseConfigText(text: string, file: string, env: NodeJS.ProcessEnv = processEnv()): Config {
  return parseConfigTextWithWarnings(text, file, env).config;
}

/** The one config loader: finds voxgate.yaml (or none) and validates it. */
export function loadConfig(opts: { explicitPath?: string; env?: NodeJS.ProcessEnv; home?: string } = {}): LoadedConfig {
  const env = opts.env ?? processEnv();
  const path = findConfigFile(opts.explicitPath, opts.home);
  if (!path) return { config: configSchema.parse({}), path: null, warnings: [] };
  return { ...parseConfigTextWithWarnings(readFileSync(path, "utf8"), path, env), path };
}
