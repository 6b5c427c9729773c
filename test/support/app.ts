import type { AddressInfo } from "node:net";
import { serve, type ServerType } from "@hono/node-server";
import { afterAll, beforeAll } from "vitest";
import { parseEnv } from "../../src/config/env.js";
import { GatewayPaths, withGatewayListener } from "../../src/gateway/listener.js";
import { createWebSocketServer } from "../../src/gateway/ws/upgrade.js";
import { parseConfigText } from "../../src/config/load.js";
import { createApp } from "../../src/http/app.js";
import { type Logger, silentLogger } from "../../src/logging.js";
import type { Services } from "../../src/compose.js";
import type { Database } from "../../src/db/client.js";
import { createServices, startWorkers, stopWorkers } from "../../src/compose.js";
import { createTestDatabase, type TestDatabase } from "./db.js";

const gatewayPaths = new GatewayPaths();

export interface TestApp {
  services: Services;
  testDb: TestDatabase;
  /**
   * app.request() with JSON helpers: `call("POST", "/v1/ingest", { key, body })`. A gateway path is
   * sent to the loopback server instead (started on first use): the gateway listener serves it.
   */
  call(method: string, path: string, opts?: CallOptions): Promise<Response>;
  /** The same app on a real loopback HTTP server (started on first use). */
  listen(): Promise<string>;
  close(): Promise<void>;
}

export interface CallOptions {
  key?: string;
  body?: unknown;
  /** A raw body string/bytes sent as is (for malformed JSON, gzip, etc.). */
  raw?: string | Uint8Array;
  headers?: Record<string, string>;
}

/**
 * A Voxgate app over a fresh database of its own. `yaml` is a voxgate.yaml text; `env` overrides
 * variables (VOXGATE_API_KEY, LIVEKIT_*…) without touching process.env; `log` replaces the silent logger;
 * `replicaOf` makes it a second replica on another app's database (close the replica first).
 */
export async function createTestApp(
  opts: { yaml?: string; env?: Record<string, string>; log?: Logger; checkContracts?: boolean; replicaOf?: TestApp; readDatabase?: Database } = {},
): Promise<TestApp> {
  const rawEnv = { ...opts.env };
  const config = parseConfigText(opts.yaml ?? "", "test.yaml", rawEnv);
  // A replica shares another app's database (two Voxgate processes on one Postgres); it never drops it.
  const testDb = opts.replicaOf?.testDb ?? (await createTestDatabase());
  const services = createServices({ database: testDb.database, readDatabase: opts.readDatabase, config, env: parseEnv(rawEnv), log: opts.log ?? silentLogger });
  await startWorkers(services);
  // Every answer of a declared route is checked against its documented schema (src/http/openapi.ts).
  const app = createApp(services, { checkContracts: opts.checkContracts ?? process.env.VOXGATE_CHECK_CONTRACTS !== "0" });
  let server: ServerType | null = null;
  let baseUrl: Promise<string> | null = null;
  const listen = () => {
    baseUrl ??= new Promise<string>((resolve) => {
      const s = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1", createServer: withGatewayListener(services.gateway, createWebSocketServer()) }, () =>
        resolve(`http://127.0.0.1:${(s.address() as AddressInfo).port}`),
      );
      server = s;
    });
    return baseUrl;
  };

  return {
    services,
    testDb,
    call(method, path, o = {}) {
      const headers: Record<string, string> = { ...o.headers };
      if (o.key) headers.authorization = `Bearer ${o.key}`;
      let body: string | Uint8Array | undefined = o.raw;
      if (o.body !== undefined) {
        body = JSON.stringify(o.body);
        headers["content-type"] ??= "application/json";
      }
      // A gateway path goes to the server, where the gateway listener serves it (as in production).
      if (gatewayPaths.match(method, path)) return listen().then((base) => fetch(base + path, { method, headers, body: body as BodyInit | undefined }));
      return Promise.resolve(app.request(path, { method, headers, body: body as BodyInit | undefined }));
    },
    listen,
    async close() {
      if (server) {
        const s = server;
        await new Promise<void>((r) => s.close(() => r()));
      }
      await stopWorkers(services);
      if (!opts.replicaOf) await testDb.drop();
    },
  };
}

/** What `createTestApp` takes, plus `listen` (start the loopback server in the hook; `t.base` is its URL). */
export type TestAppOptions = NonNullable<Parameters<typeof createTestApp>[0]> & { listen?: boolean };

/** The handle `useTestApp` returns: a TestApp filled by its beforeAll, and `base` when listening. */
export interface TestAppHandle extends TestApp {
  /** The loopback server's URL (options `listen: true`, or after `await t.listen()`). */
  readonly base: string;
}

/**
 * Registers `beforeAll` (create the app) and `afterAll` (close it) in the calling suite and returns a
 * handle whose members read the app once it exists: `const t = useTestApp({ yaml })` then
 * `t.call(...)`, `t.services` inside tests. `options` may be a function, called in the hook, when the
 * YAML needs something made in an earlier `beforeAll` (a stub server's URL). Hooks registered after
 * this call see the app; vitest runs `afterAll` in reverse order, so resources started before this
 * call are still up while the app closes. Calling `t.close()` early is allowed (the hook then skips).
 */
export function useTestApp(options: TestAppOptions | (() => TestAppOptions | Promise<TestAppOptions>) = {}): TestAppHandle {
  let app: TestApp | null = null;
  let base: string | null = null;
  let closed = false;
  const current = (): TestApp => {
    if (!app) throw new Error("useTestApp: the app exists only inside tests and hooks registered after useTestApp()");
    return app;
  };
  beforeAll(async () => {
    const { listen, ...opts } = typeof options === "function" ? await options() : options;
    app = await createTestApp(opts);
    if (listen) base = await app.listen();
  });
  afterAll(async () => {
    if (app && !closed) {
      closed = true;
      await app.close();
    }
  });
  return {
    get services() {
      return current().services;
    },
    get testDb() {
      return current().testDb;
    },
    get base() {
      if (!base) throw new Error("useTestApp: t.base needs { listen: true } (or await t.listen() first)");
      return base;
    },
    call: (method, path, o) => current().call(method, path, o),
    async listen() {
      base = await current().listen();
      return base;
    },
    async close() {
      if (closed) return;
      closed = true;
      await current().close();
    },
  };
}
