import { mkdtempSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { providers } from "../../src/db/schema/index.js";
import { silentLogger } from "../../src/logging.js";
import { cipherKeyId, decryptWith, encryptWith, providerAad, SecretBox, SecretDecryptError } from "../../src/secrets/box.js";
import { deriveKey, loadKeyring, secretFilePath } from "../../src/secrets/keyring.js";
import { reencryptProviderKeys } from "../../src/secrets/rotate.js";
import { useTestApp } from "../support/app.js";
import { WRITER, manageYaml } from "./fixtures.js";

describe("provider-key encryption", () => {
  it("round-trips, carries version and key id, and is bound to its row", () => {
    const ring = loadKeyring({ secret: "s1" });
    const sealed = encryptWith(ring, "sk-live-123", providerAad("a"));
    expect(sealed.startsWith(`vgk:v1:${deriveKey("s1").id}:`)).toBe(true);
    expect(cipherKeyId(sealed)).toBe(ring.current.id);
    expect(decryptWith(ring, sealed, providerAad("a"))).toBe("sk-live-123");
    expect(() => decryptWith(ring, sealed, providerAad("b"))).toThrow(SecretDecryptError);
    // Same plaintext twice: different ciphertexts (random IV).
    expect(encryptWith(ring, "sk-live-123", providerAad("a"))).not.toBe(sealed);
    // Tampering with any part fails authentication.
    const parts = sealed.split(":");
    parts[5] = `${parts[5]?.slice(0, -2)}AA`;
    expect(() => decryptWith(ring, parts.join(":"), providerAad("a"))).toThrow(SecretDecryptError);
    expect(() => decryptWith(loadKeyring({ secret: "other" }), sealed, providerAad("a"))).toThrow(/not loaded/);
  });

  it("without VOXGATE_SECRET, generates a secret file with mode 0600 and reuses it", () => {
    const home = mkdtempSync(join(tmpdir(), "vg-home-"));
    const first = loadKeyring({ home });
    expect(first.origin).toBe("generated");
    const path = secretFilePath(home);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readFileSync(path, "utf8").trim().length).toBeGreaterThanOrEqual(32);
    const second = loadKeyring({ home });
    expect(second.origin).toBe("file");
    expect(second.current.id).toBe(first.current.id);
    // The environment wins over the file.
    expect(loadKeyring({ home, secret: "env-secret" }).current.id).toBe(deriveKey("env-secret").id);
  });

  it("the box loads its keyring only when first used", () => {
    const home = mkdtempSync(join(tmpdir(), "vg-home-"));
    const box = new SecretBox({ home });
    expect(() => statSync(secretFilePath(home))).toThrow();
    box.encrypt("x", "c");
    expect(statSync(secretFilePath(home)).isFile()).toBe(true);
  });
});

describe("rotation: VOXGATE_SECRET_PREVIOUS re-encrypts stored keys at start", () => {
  const t = useTestApp({ yaml: manageYaml(), env: { VOXGATE_SECRET: "old-secret-0123456789" } });

  it("moves every row to the new key id and keeps the plaintext", async () => {
    const res = await t.call("POST", "/v1/providers", {
      key: WRITER,
      body: { provider_id: "rot", provider_type: "openai", api_key: "sk-rotate-me-0123456789" },
    });
    expect(res.status).toBe(200);
    const db = t.services.database.db;
    const read = async () => (await db.select().from(providers).where(eq(providers.providerId, "rot")))[0]?.apiKeyEncrypted ?? "";
    expect(cipherKeyId(await read())).toBe(deriveKey("old-secret-0123456789").id);

    // Without the previous secret the new box cannot read the row, and leaves it alone.
    const lost = new SecretBox({ secret: "new-secret-0123456789" });
    expect(await reencryptProviderKeys({ database: t.services.database, secrets: lost, log: silentLogger })).toEqual({ reencrypted: 0, unreadable: 1 });

    const box = new SecretBox({ secret: "new-secret-0123456789", previous: "old-secret-0123456789" });
    expect(await reencryptProviderKeys({ database: t.services.database, secrets: box, log: silentLogger })).toEqual({ reencrypted: 1, unreadable: 0 });
    const sealed = await read();
    expect(cipherKeyId(sealed)).toBe(deriveKey("new-secret-0123456789").id);
    expect(new SecretBox({ secret: "new-secret-0123456789" }).decrypt(sealed, providerAad("rot"))).toBe("sk-rotate-me-0123456789");
    // Idempotent: a second pass has nothing to do.
    expect(await reencryptProviderKeys({ database: t.services.database, secrets: box, log: silentLogger })).toEqual({ reencrypted: 0, unreadable: 0 });
  });
});
