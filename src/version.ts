import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The package's root folder (package.json, migrations/, dashboard/dist): the nearest folder above
 * this module holding a package.json. Walked up to, not a fixed "../": this module runs from src/,
 * from tsc's dist/ and inlined in the server bundle or one of its chunks, each at its own depth.
 */
function findPackageRoot(): string {
  const self = fileURLToPath(import.meta.url);
  for (let dir = dirname(self); ; ) {
    if (existsSync(join(dir, "package.json"))) return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error(`voxgate: no package.json above ${self}`);
    dir = up;
  }
}

export const PACKAGE_ROOT: string = findPackageRoot();

// The package version, read once from package.json.
const pkg = JSON.parse(readFileSync(join(PACKAGE_ROOT, "package.json"), "utf8")) as { version: string };
export const VERSION: string = pkg.version;
