import { execFileSync, spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

/**
 * The package as published: built once into a scratch copy, packed with `npm pack`, and installed
 * from the tarball into an empty project the way npm lays it out (the tarball unpacked as
 * node_modules/voxgate; each of its declared `dependencies`, and only those, linked beside it from
 * this checkout's install, so no registry is needed and an undeclared runtime import fails). Every
 * entry of `exports` is imported by node from there, and the `voxgate` bin runs. `import "voxgate"`
 * is checked too: the package has no root entry, so node says so instead of failing on a missing file.
 * The bin is the server bundle (vite.server.config.ts over tsc's dist/cli/main.js, as `build:server`):
 * it serves /health on a new PGlite data directory, so the migrations are found from the installed
 * package's root and the dependencies left external resolve from the consumer's node_modules.
 */

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), "voxgate-pack-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const run = (cmd: string, args: string[], cwd: string) => execFileSync(cmd, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });

/** `node -e` in the consumer project: the import's outcome as one line of JSON. */
function importFrom(consumer: string, specifier: string): { ok: boolean; keys?: string[]; code?: string } {
  const script = `import(${JSON.stringify(specifier)}).then((m) => console.log(JSON.stringify({ ok: true, keys: Object.keys(m).sort() })), (e) => console.log(JSON.stringify({ ok: false, code: e.code })))`;
  return JSON.parse(run(process.execPath, ["--input-type=module", "-e", script], consumer).trim());
}

describe("the published package", () => {
  it("packs, installs from its tarball, imports every export and runs its bin", async () => {
    const pkgJson = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
      exports: Record<string, unknown>;
      bin: Record<string, string>;
      dependencies: Record<string, string>;
      version: string;
    };
    const pkg = join(scratch, "pkg");
    mkdirSync(pkg);
    for (const f of ["package.json", "README.md", "migrations"]) cpSync(join(ROOT, f), join(pkg, f), { recursive: true });
    run(process.execPath, [join(ROOT, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.build.json", "--outDir", join(pkg, "dist")], ROOT);
    run(process.execPath, [join(ROOT, "node_modules/vite/bin/vite.js"), "build", "--config", "vite.server.config.ts", "--outDir", join(pkg, "dist/cli")], ROOT);
    const tarball = run("npm", ["pack", "--ignore-scripts", "--silent", "--pack-destination", scratch], pkg).trim().split("\n").pop() ?? "";
    expect(tarball).toMatch(/^voxgate-.*\.tgz$/);

    const consumer = join(scratch, "consumer");
    mkdirSync(consumer);
    writeFileSync(join(consumer, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
    const installed = join(consumer, "node_modules/voxgate");
    mkdirSync(installed, { recursive: true });
    run("tar", ["-xzf", join(scratch, tarball), "-C", installed, "--strip-components=1"], consumer);
    for (const dep of Object.keys(pkgJson.dependencies)) {
      const at = join(consumer, "node_modules", dep);
      mkdirSync(dirname(at), { recursive: true });
      symlinkSync(join(ROOT, "node_modules", dep), at, "dir");
    }

    const subpaths = Object.keys(pkgJson.exports).filter((k) => k !== "./package.json");
    expect(subpaths).toEqual(["./client", "./livekit"]);
    for (const sub of subpaths) {
      const result = importFrom(consumer, `voxgate${sub.slice(1)}`);
      expect(result, sub).toMatchObject({ ok: true });
      expect(result.keys?.length, sub).toBeGreaterThan(0);
    }
    expect(importFrom(consumer, "voxgate/client").keys).toContain("VoxgateClient");
    expect(importFrom(consumer, "voxgate")).toEqual({ ok: false, code: "ERR_PACKAGE_PATH_NOT_EXPORTED" });

    expect(Object.keys(pkgJson.bin)).toEqual(["voxgate"]);
    const bin = join(installed, pkgJson.bin.voxgate ?? "");
    expect(existsSync(join(installed, "dist/cli/chunks")), "the bin is the bundle").toBe(true);
    expect(run(process.execPath, [bin, "--version"], consumer).trim()).toBe(pkgJson.version);
    expect(await serveHealth(bin, consumer)).toMatchObject({ status: "ok", version: pkgJson.version });
  }, 300_000);
});

/** Starts `<bin> serve` on a new PGlite data directory and returns its /health body. */
async function serveHealth(bin: string, cwd: string): Promise<unknown> {
  const { DATABASE_URL: _postgres, ...env } = process.env;
  const child = spawn(process.execPath, [bin, "serve", "--port", "0", "--host", "127.0.0.1"], {
    cwd,
    env: { ...env, HOME: scratch, VOXGATE_DB_PATH: join(scratch, "pglite"), LOG_LEVEL: "info" },
  });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  try {
    let out = "";
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the bin did not start:\n${out}`)), 120_000);
      child.stdout.on("data", (d: Buffer) => {
        out += d.toString();
        const m = /"port":(\d+)[^\n]*"msg":"voxgate listening"/.exec(out);
        if (m?.[1]) {
          clearTimeout(timer);
          resolve(Number(m[1]));
        }
      });
      child.stderr.on("data", (d: Buffer) => {
        out += d.toString();
      });
      child.on("exit", () => {
        clearTimeout(timer);
        reject(new Error(`the bin exited before listening:\n${out}`));
      });
    });
    const res = await fetch(`http://127.0.0.1:${port}/health`);
    expect(res.status).toBe(200);
    return await res.json();
  } finally {
    child.kill("SIGTERM");
    await exited;
  }
}
