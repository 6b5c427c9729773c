import { createHash, hkdfSync, randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";

/**
 * Where the provider-key secret comes from, in this order (docs/secrets.md): VOXGATE_SECRET, then the file
 * ~/.config/voxgate/secret, then a freshly generated secret written to that file (mode 0600).
 * VOXGATE_SECRET_PREVIOUS (comma-separated) keeps old secrets readable during a rotation.
 */
export interface SecretSources {
  secret?: string;
  previous?: string;
  home?: string;
}

/** One derived AES-256 key and its public id (stored in every ciphertext it makes). */
export interface KeyEntry {
  id: string;
  key: Buffer;
}

export interface Keyring {
  /** The key new values are encrypted with. */
  current: KeyEntry;
  /** Every key that can decrypt, current first. */
  byId: Map<string, KeyEntry>;
  /** Where the current secret came from: env, file, or generated (file written). */
  origin: "env" | "file" | "generated";
}

export const SECRET_FILE_MODE = 0o600;

export function secretFilePath(home: string = homedir()): string {
  return join(home, ".config", "voxgate", "secret");
}

/** HKDF-SHA256 from the operator's secret: any length of secret gives a uniform 32-byte key. */
export function deriveKey(secret: string): KeyEntry {
  const key = Buffer.from(hkdfSync("sha256", Buffer.from(secret, "utf8"), "voxgate", "provider-api-key v1", 32));
  // The id names the key, not the secret: a hash of the derived key, short enough to store per row.
  const id = createHash("sha256").update(key).digest("hex").slice(0, 12);
  return { id, key };
}

function readOrCreateSecretFile(path: string): { secret: string; origin: "file" | "generated" } {
  if (existsSync(path)) {
    const secret = readFileSync(path, "utf8").trim();
    if (secret) return { secret, origin: "file" };
  }
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const secret = randomBytes(32).toString("base64url");
  // wx: never overwrite a secret another replica wrote a moment ago.
  try {
    writeFileSync(path, `${secret}\n`, { mode: SECRET_FILE_MODE, flag: "wx" });
  } catch {
    const raced = readFileSync(path, "utf8").trim();
    if (raced) return { secret: raced, origin: "file" };
    throw new Error(`cannot write the provider-key secret to ${path}`);
  }
  chmodSync(path, SECRET_FILE_MODE);
  return { secret, origin: "generated" };
}

export function loadKeyring(src: SecretSources): Keyring {
  let current: { secret: string; origin: Keyring["origin"] };
  if (src.secret) current = { secret: src.secret, origin: "env" };
  else current = readOrCreateSecretFile(secretFilePath(src.home));
  const entry = deriveKey(current.secret);
  const byId = new Map<string, KeyEntry>([[entry.id, entry]]);
  for (const old of (src.previous ?? "").split(",").map((s) => s.trim())) {
    if (!old) continue;
    const e = deriveKey(old);
    if (!byId.has(e.id)) byId.set(e.id, e);
  }
  return { current: entry, byId, origin: current.origin };
}
