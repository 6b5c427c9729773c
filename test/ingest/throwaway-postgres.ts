import { execFileSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * A Postgres cluster of our own (initdb into a temp dir, pg_ctl on a random port), so a test can
 * stop and start it. The shared cluster on 5432 is never touched. As root it runs as the `postgres`
 * user via runuser (initdb refuses root).
 */
export interface ThrowawayPostgres {
  url: string;
  stop(): void;
  start(): void;
  destroy(): void;
}

export function postgresBinDir(): string | null {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return null;
  const versions = readdirSync(root).sort((a, b) => Number(b) - Number(a));
  for (const v of versions) {
    const dir = join(root, v, "bin");
    if (existsSync(join(dir, "initdb")) && existsSync(join(dir, "pg_ctl"))) return dir;
  }
  return null;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const addr = s.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      s.close(() => resolve(port));
    });
  });
}

function postgresUid(): { uid: number; gid: number } {
  const uid = Number(execFileSync("id", ["-u", "postgres"]).toString().trim());
  const gid = Number(execFileSync("id", ["-g", "postgres"]).toString().trim());
  return { uid, gid };
}

export async function startThrowawayPostgres(bin: string): Promise<ThrowawayPostgres> {
  const root = mkdtempSync(join(tmpdir(), "voxgate-pg-"));
  chmodSync(root, 0o755);
  // initdb refuses root: as root, run the cluster as the `postgres` user; otherwise as ourselves.
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const { uid, gid } = postgresUid();
    chownSync(root, uid, gid);
  }
  const data = join(root, "data");
  const port = await freePort();
  const asPostgres = (cmd: string, args: string[]) =>
    asRoot
      ? execFileSync("runuser", ["-u", "postgres", "--", join(bin, cmd), ...args], { stdio: "pipe", timeout: 60_000 })
      : execFileSync(join(bin, cmd), args, { stdio: "pipe", timeout: 60_000 });
  asPostgres("initdb", ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync"]);
  const options = `-p ${port} -k ${root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50`;
  const start = () => {
    asPostgres("pg_ctl", ["-D", data, "-o", options, "-l", join(root, "log"), "-w", "-t", "30", "start"]);
  };
  const stop = () => {
    asPostgres("pg_ctl", ["-D", data, "-m", "fast", "-w", "-t", "30", "stop"]);
  };
  start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start,
    stop,
    destroy() {
      try {
        stop();
      } catch {
        // already stopped
      }
      rmSync(root, { recursive: true, force: true });
    },
  };
}
