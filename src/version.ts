import { readFileSync } from "node:fs";

// The package version, read once from package.json (dist/ and src/ both sit one level below it).
const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string };
export const VERSION: string = pkg.version;
