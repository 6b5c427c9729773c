import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { DomainError } from "../errors.js";
import { type Keyring, loadKeyring, type SecretSources } from "./keyring.js";

/**
 * Provider API keys at rest: AES-256-GCM, one random 96-bit IV per value. A stored value reads
 *   vgk:v1:<key_id>:<iv>:<tag>:<ciphertext>          (base64url parts)
 * The version and key id say which key and scheme made it (targeted rotation); the associated
 * data binds it to its row (`provider:<id>` plus the header), so a value copied into another
 * provider's row fails to decrypt instead of lending that provider someone else's key.
 */
export const CIPHER_PREFIX = "vgk";
export const CIPHER_VERSION = "v1";

export class SecretDecryptError extends Error {
  override name = "SecretDecryptError";
}

export function providerAad(providerId: string): string {
  return `provider:${providerId}`;
}

function aadBytes(context: string, keyId: string): Buffer {
  return Buffer.from(`${CIPHER_PREFIX}:${CIPHER_VERSION}:${keyId}|${context}`, "utf8");
}

export function encryptWith(keyring: Keyring, plaintext: string, context: string): string {
  const { id, key } = keyring.current;
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  cipher.setAAD(aadBytes(context, id));
  const ct = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
  const tag = cipher.getAuthTag();
  return [CIPHER_PREFIX, CIPHER_VERSION, id, iv.toString("base64url"), tag.toString("base64url"), ct.toString("base64url")].join(":");
}

/** The key id a stored value was encrypted with, or null when the value is not ours. */
export function cipherKeyId(stored: string): string | null {
  const parts = stored.split(":");
  return parts.length === 6 && parts[0] === CIPHER_PREFIX && parts[1] === CIPHER_VERSION ? (parts[2] ?? null) : null;
}

export function decryptWith(keyring: Keyring, stored: string, context: string): string {
  const parts = stored.split(":");
  if (parts.length !== 6 || parts[0] !== CIPHER_PREFIX) throw new SecretDecryptError("stored value is not a Voxgate ciphertext");
  const [, version, keyId = "", iv = "", tag = "", ct = ""] = parts;
  if (version !== CIPHER_VERSION) throw new SecretDecryptError(`unsupported ciphertext version ${version}`);
  const entry = keyring.byId.get(keyId);
  if (!entry) {
    throw new SecretDecryptError(`stored value was encrypted with key ${keyId}, which is not loaded (set VOXGATE_SECRET_PREVIOUS)`);
  }
  try {
    const decipher = createDecipheriv("aes-256-gcm", entry.key, Buffer.from(iv, "base64url"));
    decipher.setAAD(aadBytes(context, keyId));
    decipher.setAuthTag(Buffer.from(tag, "base64url"));
    return Buffer.concat([decipher.update(Buffer.from(ct, "base64url")), decipher.final()]).toString("utf8");
  } catch {
    throw new SecretDecryptError("stored value failed authentication (wrong key, or moved from another row)");
  }
}

/**
 * The service form: the keyring is loaded on first use, so a process that never touches a
 * provider key never reads or writes the secret file.
 */
export class SecretBox {
  private keyring: Keyring | null = null;
  constructor(private readonly sources: SecretSources) {}

  ring(): Keyring {
    if (!this.keyring) {
      try {
        this.keyring = loadKeyring(this.sources);
      } catch {
        // No secret in the environment and the config directory is not writable: say what to do.
        throw new DomainError(
          "unavailable",
          "the provider-key secret is unavailable: set VOXGATE_SECRET or make ~/.config/voxgate writable",
        );
      }
    }
    return this.keyring;
  }

  encrypt(plaintext: string, context: string): string {
    return encryptWith(this.ring(), plaintext, context);
  }

  decrypt(stored: string, context: string): string {
    return decryptWith(this.ring(), stored, context);
  }

  /** True when the value was made with an older key and should be re-encrypted. */
  isStale(stored: string): boolean {
    return cipherKeyId(stored) !== this.ring().current.id;
  }
}
