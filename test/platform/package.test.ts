import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

/**
 * The package as published: built once into a scratch copy, packed with `npm pack`, installed from
 * the tarball into an empty project (from npm's cache, no network), and every entry of `exports`
 * imported by node from there; the `voxgate` bin runs. What `import "voxgate"` answers is checked
 * too: the package has no root entry, so node says so instead of failing on a missing file.
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
  it("packs, installs from its tarball, imports every export and runs its bin", () => {
    const pkgJson = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { exports: Record<string, unknown>; bin: Record<string, string> };
    const pkg = join(scratch, "pkg");
    mkdirSync(pkg);
    for (const f of ["package.json", "README.md", "migrations"]) cpSync(join(ROOT, f), join(pkg, f), { recursive: true });
    run(process.execPath, [join(ROOT, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.build.json", "--outDir", join(pkg, "dist")], ROOT);
    const tarball = run("npm", ["pack", "--ignore-scripts", "--silent", "--pack-destination", scratch], pkg).trim().split("\n").pop() ?? "";
    expect(tarball).toMatch(/^voxgate-.*\.tgz$/);

    const consumer = join(scratch, "consumer");
    mkdirSync(consumer);
    writeFileSync(join(consumer, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
    run("npm", ["install", "--offline", "--ignore-scripts", "--no-audit", "--no-fund", "--no-package-lock", join(scratch, tarball)], consumer);

    const subpaths = Object.keys(pkgJson.exports).filter((k) => k !== "./package.json");
    expect(subpaths).toEqual(["./client", "./livekit"]);
    for (const sub of subpaths) {
      const result = importFrom(consumer, `voxgate${sub.slice(1)}`);
      expect(result, sub).toMatchObject({ ok: true });
      expect(result.keys?.length, sub).toBeGreaterThan(0);
    }
    expect(importFrom(consumer, "voxgate/client").keys).toContain("VoxgateClient");
    expect(importFrom(consumer, "voxgate")).toEqual({ ok: false, code: "ERR_PACKAGE_PATH_NOT_EXPORTED" });

    const bin = join(consumer, "node_modules/.bin/voxgate");
    expect(run(bin, ["--version"], consumer).trim()).toBe(JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).version);
    expect(Object.keys(pkgJson.bin)).toEqual(["voxgate"]);
  }, 300_000);
});
