import type { Command } from "commander";
import { OPERATOR } from "../auth/context.js";
import { listApiKeys, publicKeyRow } from "../auth/queries.js";
import { mintKey, revokeKey } from "../auth/key-service.js";
import { randomBase62 } from "../auth/virtual-keys.js";
import { printJson } from "./output.js";
import { withStore } from "./store.js";

const CLI_ACTOR = { ...OPERATOR, actor: "cli" };

/** `voxgate keys …`: the logic of /v1/api-keys, straight on the database. */
export function registerKeys(program: Command): void {
  const keys = program.command("keys").description("manage API keys");

  keys
    .command("create")
    .description("mint a vk_ key (printed once)")
    .requiredOption("--name <name>", "what the key is for")
    .option("--tenant <tenant_id>", "bind the key to one tenant")
    .option("--issued-by <who>", "audit string", "cli")
    .option("--scopes <list>", "comma-separated scopes (read,write,ingest,infer,*)", "*")
    .option("--role <role>", "tenant or admin", "tenant")
    .action(async (o: { name: string; tenant?: string; issuedBy: string; scopes: string; role: string }) => {
      const scopes = o.scopes.split(",").map((s) => s.trim()) as ("read" | "write" | "ingest" | "*")[];
      for (const s of scopes) if (!["read", "write", "ingest", "infer", "*"].includes(s)) fail(`unknown scope: ${s}`);
      if (o.role !== "tenant" && o.role !== "admin") fail(`role must be tenant or admin, not ${o.role}`);
      await withStore(async ({ database }) => {
        const { plaintext, row } = await mintKey(database.db, CLI_ACTOR, {
          name: o.name,
          tenantId: o.tenant ?? null,
          issuedBy: o.issuedBy,
          scopes,
          role: o.role as "tenant" | "admin",
        });
        printJson({ plaintext, ...publicKeyRow(row) });
        process.stderr.write("Store the plaintext now: it is not shown again.\n");
      });
    });

  keys
    .command("list")
    .description("list keys (never hashes or plaintexts)")
    .option("--active", "hide revoked keys")
    .action(async (o: { active?: boolean }) => {
      await withStore(async ({ database }) => {
        const rows = await listApiKeys(database.db, OPERATOR, { includeRevoked: !o.active });
        printJson(rows.map(publicKeyRow));
      });
    });

  keys
    .command("revoke <key_id>")
    .description("soft-revoke a key (row kept for audit)")
    .action(async (keyId: string) => {
      await withStore(async ({ database }) => {
        const row = await revokeKey(database.db, null, CLI_ACTOR, keyId);
        if (!row) fail(`no API key with id ${keyId}`);
        process.stdout.write(`revoked ${keyId}\n`);
      });
    });

  keys
    .command("new-static")
    .description(
      "print a strong random static key (never starts with vk_). Put it in VOXGATE_INGEST_KEY for the key agents push with (ingest scope only), or in VOXGATE_API_KEY for the operator's own key (scope *, admin: never give it to agents)",
    )
    .action(() => {
      // stdout is the key alone (for $(…)); which variable it belongs in goes to stderr.
      process.stdout.write(`vgk_${randomBase62(43)}\n`);
      process.stderr.write(
        "Agents: put this key in VOXGATE_INGEST_KEY on the collector (scope ingest only) and give it to agents\n" +
          "(on the agent side it travels in VOXGATE_API_KEY, with VOXGATE_COLLECTOR_URL).\n" +
          "Operator: VOXGATE_API_KEY on the collector is the operator's own key (scope *: admin, billing, rate card); never give it to agents.\n",
      );
    });
}

function fail(message: string): never {
  process.stderr.write(`voxgate: ${message}\n`);
  process.exit(2);
}
