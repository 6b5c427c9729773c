import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const MAIN = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));

export interface CollectorProcess {
  url: string;
  child: ChildProcess;
  /** SIGKILL: no drain, no shutdown hook. */
  kill9(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * A real `voxgate serve --port 0` child on the given database, started from the TypeScript source
 * (tsx loader), in an empty working directory so no voxgate.yaml is picked up.
 */
export async function spawnCollector(databaseUrl: string, env: Record<string, string> = {}): Promise<CollectorProcess> {
  const cwd = mkdtempSync(join(tmpdir(), "voxgate-collector-"));
  const child = spawn(process.execPath, ["--import", import.meta.resolve("tsx"), MAIN, "serve", "--port", "0", "--host", "127.0.0.1"], {
    cwd,
    env: { PATH: process.env.PATH ?? "", HOME: cwd, DATABASE_URL: databaseUrl, LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const exited = new Promise<void>((resolve) =>
    child.once("exit", () => {
      rmSync(cwd, { recursive: true, force: true });
      resolve();
    }),
  );
  const port = await new Promise<number>((resolve, reject) => {
    let out = "";
    let err = "";
    child.stderr?.on("data", (c: Buffer) => (err += c.toString()));
    child.stdout?.on("data", (c: Buffer) => {
      out += c.toString();
      const m = /"port":(\d+)[^\n]*"msg":"voxgate listening"/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once("exit", (code) => reject(new Error(`collector exited (${code}) before listening:\n${out}\n${err}`)));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    child,
    async kill9() {
      child.kill("SIGKILL");
      await exited;
    },
    async stop() {
      child.kill("SIGTERM");
      await exited;
    },
  };
}
