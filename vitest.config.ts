import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    setupFiles: ["test/support/file-isolation.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Vitest's default (one file per core but one) ran the files one at a time on the 2-core machines
    // CI uses: 550 s, 215 s of it between files. Each file has its own database and ports and spends
    // most of its time waiting on Postgres, child processes and loopback servers, so two at a time
    // use both cores: 336 s.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // A worker runs its files in one module graph instead of a new process per file: the app's ~290
    // source modules and their dependencies are imported once per worker, not once per file
    // (2026-11-29, 2 cores: 500 s → 353-399 s, import time 203 s → 28-32 s). Safe because no file
    // keeps state between files: each opens its own database, ports and app, and the few that set a
    // process.env variable restore it in their hooks (test/support/file-isolation.ts checks).
    isolate: false,
  },
});
