import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/db.js";

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/**
 * The edits that add one nullable field to request records, end to end (record → `requests` column
 * → ingest → reads): docs/architecture.md ("Adding a request field") lists the same two files.
 * Everything else (the insert's column list, the storage row type, its defaults, the zod-free
 * validator, the rollups, the prepared statement's name) is derived from the Drizzle table and the
 * record schema. Each edit is [anchor, replacement]; the anchor must exist.
 */
const EDITS: Record<string, [string, string][]> = {
  // 1. The column (then `npx drizzle-kit generate --name <name>` writes the migration).
  "src/db/schema/requests.ts": [["    metadata: jsonb(),\n", "    metadata: jsonb(),\n    scratchNote: text(),\n"]],
  // 2. The record field and where the row takes it from.
  "src/ingest/records.ts": [
    ["  is_probe: z.boolean().nullish(),\n", "  is_probe: z.boolean().nullish(),\n  scratch_note: shortText.nullish(),\n"],
    ["      is_probe: r.is_probe ?? false,\n", "      is_probe: r.is_probe ?? false,\n      scratch_note: orNull(r.scratch_note),\n"],
  ],
};

/** Ingests two records with the new field through the copy's own write path and reads them back. */
const PROBE_SCRIPT = `
import { sql } from "drizzle-orm";
import { openDatabase, queryRows } from "./src/db/client.js";
import { runMigrations } from "./src/db/migrate.js";
import { compileCatalog } from "./src/billing/catalog.js";
import { compileRateCard } from "./src/billing/rate.js";
import { toRequestRow } from "./src/ingest/records.js";
import { requestProjections } from "./src/compose.js";
import { createRequestStore } from "./src/ingest/store-requests.js";
const database = await openDatabase({ url: process.env.SCRATCH_DATABASE_URL ?? "" });
await runMigrations(database);
const db = database.db;
const card = compileRateCard(1.25, []);
const catalog = compileCatalog({});
const records = JSON.parse(process.env.SCRATCH_RECORDS ?? "[]");
const rows = records.map((r) => { const c = toRequestRow(r, "acme", card, catalog); if (!c.ok) throw new Error(c.reason); return c.row; });
const inserted = await createRequestStore(requestProjections()).store(db, "acme", rows);
const stored = await queryRows(db, sql\`SELECT id, scratch_note, project, status, session_id FROM requests ORDER BY id\`);
const rollups = await queryRows(db, sql\`SELECT sum(requests)::int AS n FROM request_rollups\`);
const sessions = await queryRows(db, sql\`SELECT id, request_count FROM sessions\`);
console.log(JSON.stringify({ inserted: inserted.length, stored, rollups, sessions }));
await database.close();
`;

describe("adding a nullable column to requests", () => {
  let dir: string;
  let tdb: TestDatabase;
  beforeAll(async () => {
    tdb = await createTestDatabase();
    dir = mkdtempSync(join(tmpdir(), "voxgate-add-column-"));
    for (const p of ["src", "migrations", "package.json", "tsconfig.json", "drizzle.config.ts"]) cpSync(join(ROOT, p), join(dir, p), { recursive: true });
    symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"), "dir");
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await tdb.drop();
  });

  it("takes edits in two source files, a generated migration, and nothing else", { timeout: 300_000 }, async () => {
    if (tdb.url === null) return; // needs Postgres for the copy's own process
    for (const [file, edits] of Object.entries(EDITS)) {
      let text = readFileSync(join(dir, file), "utf8");
      for (const [anchor, replacement] of edits) {
        expect(text.includes(anchor), `${file}: ${anchor}`).toBe(true);
        text = text.replace(anchor, replacement);
      }
      writeFileSync(join(dir, file), text);
    }
    expect(Object.keys(EDITS)).toHaveLength(2);

    // The scratch migration: generated, one ADD COLUMN.
    const before = new Set(readdirSync(join(dir, "migrations")));
    await run("npx", ["drizzle-kit", "generate", "--name", "scratch_note"], { cwd: dir });
    const added = readdirSync(join(dir, "migrations")).filter((f) => f.endsWith(".sql") && !before.has(f));
    expect(added).toHaveLength(1);
    const migration = readFileSync(join(dir, "migrations", added[0] ?? ""), "utf8");
    expect(migration.trim()).toBe('ALTER TABLE "requests" ADD COLUMN "scratch_note" text;');

    // The whole source still typechecks: no other declaration of the row or its columns to update.
    writeFileSync(join(dir, "tsconfig.scratch.json"), JSON.stringify({ extends: "./tsconfig.json", include: ["src"] }));
    await run("npx", ["tsc", "--noEmit", "-p", "tsconfig.scratch.json"], { cwd: dir });

    // And the field goes through ingest (the zod-free validator reads it: a field type of fields.ts), rollups and sessions unchanged.
    const ts = Date.now() / 1000;
    const records = [
      { id: randomUUID(), timestamp: ts, modality: "llm", model_id: "openai/gpt-4.1-mini", session_id: "s1", scratch_note: "hello" },
      { id: randomUUID(), timestamp: ts, modality: "tts", model_id: "elevenlabs/eleven_flash_v2_5", session_id: "s1" },
    ];
    writeFileSync(join(dir, "probe.ts"), PROBE_SCRIPT);
    const { stdout } = await run(process.execPath, ["--import", "tsx", "probe.ts"], {
      cwd: dir,
      env: { ...process.env, SCRATCH_DATABASE_URL: tdb.url, SCRATCH_RECORDS: JSON.stringify(records) },
    });
    const out = JSON.parse(stdout.trim().split("\n").pop() ?? "{}") as {
      inserted: number;
      stored: { id: string; scratch_note: string | null; project: string; status: string }[];
      rollups: { n: number }[];
      sessions: { id: string; request_count: number }[];
    };
    expect(out.inserted).toBe(2);
    const notes = Object.fromEntries(out.stored.map((r) => [r.id, r.scratch_note]));
    expect(notes).toEqual({ [records[0]?.id ?? ""]: "hello", [records[1]?.id ?? ""]: null });
    expect(out.stored.every((r) => r.project === "default" && r.status === "success")).toBe(true);
    expect(out.rollups).toEqual([{ n: 2 }]);
    expect(out.sessions).toEqual([{ id: "s1", request_count: 2 }]);
  });
});
