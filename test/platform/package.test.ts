import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
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
    expect(run(process.execPath, [bin, "--version"], consumer).trim()).toBe(pkgJson.version);
  }, 300_000);
});
