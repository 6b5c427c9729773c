import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const CLI = ["--import", "tsx", "src/cli/main.ts"];

export interface SpawnedServer {
  child: ChildProcess;
  baseUrl: string;
  logs: () => string;
  /** Resolves with the exit code once the process ends. */
  exited: Promise<number | null>;
}

/** Runs `voxgate <args>` from source and collects its output. */
export function runCli(args: string[], env: Record<string, string | undefined> = {}) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [...CLI, ...args], { cwd: ROOT, env: { ...process.env, ...env } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    child.on("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

/** Starts a real `voxgate serve --port 0` and waits for its "listening" log line. */
export async function spawnServer(env: Record<string, string | undefined>, args: string[] = []): Promise<SpawnedServer> {
  const child = spawn(process.execPath, [...CLI, "serve", "--port", "0", "--host", "127.0.0.1", ...args], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: "info", ...env },
  });
  let out = "";
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${out}`)), 30_000);
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = /"port":(\d+)[^\n]*"msg":"voxgate listening"/.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", (d: Buffer) => {
      out += d.toString();
    });
    child.on("exit", () => {
      clearTimeout(timer);
      reject(new Error(`server exited before listening:\n${out}`));
    });
  });
  return { child, baseUrl: `http://127.0.0.1:${port}`, logs: () => out, exited };
}
