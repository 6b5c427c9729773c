import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Where Debian's prometheus package is downloaded and unpacked once per machine. */
export const PROMTOOL_CACHE = process.env.VOXGATE_PROMTOOL_CACHE ?? join(tmpdir(), "voxgate-promtool");

function onPath(): string | null {
  const r = spawnSync("promtool", ["--version"], { stdio: "ignore" });
  return r.status === 0 ? "promtool" : null;
}

/**
 * promtool, from PATH or extracted from Debian's `prometheus` package (`apt-get download` +
 * `dpkg -x`, with one `apt-get update` retry). Returns null with the reason when it cannot be had.
 */
export function obtainPromtool(): { path: string } | { reason: string } {
  const found = onPath();
  if (found) return { path: found };
  const extracted = join(PROMTOOL_CACHE, "root", "usr", "bin", "promtool");
  if (existsSync(extracted)) return { path: extracted };
  try {
    mkdirSync(PROMTOOL_CACHE, { recursive: true });
    const debs = () => readdirSync(PROMTOOL_CACHE).filter((f) => /^prometheus_.*\.deb$/.test(f));
    if (debs().length === 0) {
      const download = () => spawnSync("apt-get", ["download", "prometheus"], { cwd: PROMTOOL_CACHE, encoding: "utf8", timeout: 240_000 });
      let r = download();
      if (r.status !== 0) {
        spawnSync("apt-get", ["update"], { encoding: "utf8", timeout: 240_000 });
        r = download();
      }
      if (r.status !== 0) return { reason: `apt-get download prometheus failed: ${(r.stderr || String(r.error ?? "")).trim()}` };
    }
    const deb = debs()[0];
    if (!deb) return { reason: "apt-get download prometheus left no .deb" };
    execFileSync("dpkg", ["-x", join(PROMTOOL_CACHE, deb), join(PROMTOOL_CACHE, "root")]);
    return existsSync(extracted) ? { path: extracted } : { reason: `${deb} holds no usr/bin/promtool` };
  } catch (err) {
    return { reason: `could not obtain promtool: ${String(err)}` };
  }
}

/** `promtool check metrics` on an exposition text: exit status and everything it said. */
export function promtoolCheck(path: string, text: string): { status: number | null; output: string } {
  const r = spawnSync(path, ["check", "metrics"], { input: text, encoding: "utf8", timeout: 60_000 });
  return { status: r.status, output: `${r.stdout ?? ""}${r.stderr ?? ""}` };
}
