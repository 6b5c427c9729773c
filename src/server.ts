import type { AddressInfo } from "node:net";
import type { ServerType } from "@hono/node-server";
import { staticKeysFromConfig } from "./auth/static-keys.js";
import { type Env, parseEnv, processEnv } from "./config/env.js";
import { type LoadedConfig, loadConfig } from "./config/load.js";
import { type Database, DEFAULT_DB_PATH, type DatabaseTarget, maskUrl, openDatabase, openMemoryDatabase } from "./db/client.js";
import { runMigrations } from "./db/migrate.js";
import { createLogger, type Logger } from "./logging.js";
import type { Services } from "./compose.js";

/** How long after listening the gateway's upstream modules are loaded (see boot). */
const GATEWAY_WARM_DELAY_MS = 1000;

/** Where the store lives: DATABASE_URL / database.url (Postgres) or the PGlite directory. */
export function databaseTarget(loaded: LoadedConfig, env: Env): DatabaseTarget {
  const url = env.DATABASE_URL ?? loaded.config.database?.url;
  if (url) return { url };
  return { path: env.VOXGATE_DB_PATH ?? loaded.config.cost_tracking.db_path ?? DEFAULT_DB_PATH };
}

export interface BootOptions {
  port?: number;
  host?: string;
  env?: NodeJS.ProcessEnv;
  log?: Logger;
}

export interface RunningServer {
  services: Services;
  port: number;
  server: ServerType;
  /** Stops accepting, drains workers, closes the database. */
  shutdown(): Promise<void>;
}

/**
 * What serves requests: the composition root, the app with its routes, the gateway's listener and
 * the HTTP server (most of a start's CPU is loading these modules: docs/perf/startup.md). boot starts
 * loading them first and opens and migrates the store meanwhile, so the database's round trips
 * overlap the module loading instead of following it.
 */
async function loadServing() {
  const [compose, app, listener, upgrade, undici, proto, nodeServer] = await Promise.all([
    import("./compose.js"),
    import("./http/app.js"),
    import("./gateway/listener.js"),
    import("./gateway/ws/upgrade.js"),
    import("./http/undici.js"),
    import("./otlp/proto.js"),
    import("@hono/node-server"),
  ]);
  return { ...compose, ...app, ...listener, ...upgrade, ...undici, loadProtobufs: proto.loadProtobufs, serve: nodeServer.serve };
}

/** Loads config, opens and migrates the store, starts workers and the HTTP server. */
export async function boot(opts: BootOptions = {}): Promise<RunningServer> {
  const serving = loadServing();
  // A start that fails before it awaits `serving` (a configuration error) reports that error, not this one.
  serving.catch(() => {});
  const rawEnv = opts.env ?? processEnv();
  const env = parseEnv(rawEnv);
  const log = opts.log ?? createLogger(env.LOG_LEVEL ?? "info");
  const loaded = loadConfig({ explicitPath: env.VOXGATE_CONFIG, env: rawEnv, home: env.HOME });
  if (loaded.path) log.info({ config: loaded.path }, "configuration loaded");
  else log.info("no voxgate.yaml found (searched ./, ~/.config/voxgate/, /etc/voxgate/): starting with no providers or models");
  for (const warning of loaded.warnings) log.warn(warning);
  // Bad static keys (too short, vk_, twice) stop startup before the store is touched.
  staticKeysFromConfig(loaded.config, env);

  // Sidecar (VOXGATE_COLLECTOR_URL, no database configured): the gateway pushes its records to the
  // collector, so nothing is stored here; an in-memory store holds only the process's own state.
  const sidecar = Boolean(env.VOXGATE_COLLECTOR_URL) && !env.DATABASE_URL && !loaded.config.database?.url;
  const database: Database = sidecar ? await openMemoryDatabase() : await openDatabase(databaseTarget(loaded, env));
  if (sidecar) log.info({ collector: maskUrl(env.VOXGATE_COLLECTOR_URL ?? "") }, "sidecar mode: gateway records are pushed to the collector; no local database");
  log.info({ kind: database.kind, location: database.location }, "database opened");
  await runMigrations(database);

  // A read replica serves the read routes only; migrations and every write stay on the primary.
  const readDatabase = env.DATABASE_READ_URL && !sidecar ? await openDatabase({ url: env.DATABASE_READ_URL }) : undefined;
  if (readDatabase) log.info({ location: readDatabase.location }, "read replica opened for the read routes");
  const { createServices, startWorkers, stopWorkers, createApp, withGatewayListener, loadWsPipeline, createWebSocketServer, closeClientSockets, loadUndici, loadProtobufs, serve } =
    await serving;
  const services = createServices({ database, readDatabase, config: loaded.config, configPath: loaded.path, env, log });
  if (services.staticKeys.size === 0) {
    log.warn("no API keys configured: authentication is off (every caller is the operator)");
    log.warn("authentication is off: the gateway routes (/openai, /anthropic, …) answer loopback clients only, since they spend the operator's provider money");
  }
  await startWorkers(services);

  const app = createApp(services);
  const port = opts.port ?? loaded.config.serve.port;
  const hostname = opts.host ?? loaded.config.serve.host;
  // The gateway's WebSocket relays are accepted on this `ws` server by the gateway listener's upgrade handler.
  const sockets = createWebSocketServer();
  const server = await new Promise<ServerType>((resolve, reject) => {
    // The gateway listener serves the gateway's paths and upgrades from node's request (src/gateway/listener.ts); the rest is the Hono app's.
    const s = serve({ fetch: app.fetch, port, hostname, createServer: withGatewayListener(services.gateway, sockets) }, () => resolve(s));
    s.once("error", reject);
  });
  const actualPort = (server.address() as AddressInfo).port;
  log.info({ port: actualPort, host: hostname }, "voxgate listening");
  // What gateway calls, streams and OTLP exports need but /health does not (src/http/undici.ts,
  // loadWsPipeline, protobufjs) is loaded a second after listening, so that its ~0.2 s of CPU is not
  // spent while the first answers are due; a request arriving sooner loads it itself (the same promise).
  setTimeout(() => {
    Promise.all([loadUndici(), loadWsPipeline(), Promise.resolve().then(loadProtobufs)]).catch((err: unknown) => log.error({ err }, "loading the gateway's upstream modules failed"));
  }, GATEWAY_WARM_DELAY_MS).unref();

  let closing: Promise<void> | null = null;
  const shutdown = () => {
    closing ??= (async () => {
      log.info("shutting down: no new connections, draining background work");
      // Relayed streams hold their connections open: close them (1001 going away) so each records its
      // usage before the recorder drains, and the server's close can complete.
      await closeClientSockets(sockets);
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Idle keep-alive sockets would hold close() open; in-flight requests still finish.
        (server as { closeIdleConnections?: () => void }).closeIdleConnections?.();
      });
      await stopWorkers(services);
      await database.close();
      await readDatabase?.close();
      log.info("stopped");
    })();
    return closing;
  };
  return { services, port: actualPort, server, shutdown };
}
