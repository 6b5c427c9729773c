/**
 * The LiveKit packages `voxgate/livekit` builds on. They are optional peer dependencies: each is
 * imported only when a factory needs it, and a missing one is a clear error naming the package.
 */

export type Vendor = "openai" | "deepgram" | "elevenlabs" | "cartesia";

export const PLUGIN_PACKAGES = {
  agents: "@livekit/agents",
  openai: "@livekit/agents-plugin-openai",
  deepgram: "@livekit/agents-plugin-deepgram",
  elevenlabs: "@livekit/agents-plugin-elevenlabs",
  cartesia: "@livekit/agents-plugin-cartesia",
} as const;

/** A LiveKit package `voxgate/livekit` needs is not installed. */
export class PluginMissingError extends Error {
  override name = "PluginMissingError";
  constructor(
    readonly packageName: string,
    readonly forModel: string | null,
  ) {
    super(`${forModel ? `${forModel} needs` : "voxgate/livekit needs"} the LiveKit package ${packageName}: npm install ${packageName}`);
  }
}

/** Imports one package; a module-not-found for that very package becomes a PluginMissingError. */
export async function requirePlugin<T>(packageName: string, importer: () => Promise<T>, forModel: string | null = null): Promise<T> {
  try {
    return await importer();
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    const message = err instanceof Error ? err.message : String(err);
    const notFound = code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND" || /Cannot find (module|package)|Failed to (load|resolve)/.test(message);
    if (notFound && message.includes(packageName)) throw new PluginMissingError(packageName, forModel);
    throw err;
  }
}

export const loadAgents = (forModel: string | null = null) => requirePlugin(PLUGIN_PACKAGES.agents, () => import("@livekit/agents"), forModel);
export const loadOpenAI = (forModel: string | null = null) => requirePlugin(PLUGIN_PACKAGES.openai, () => import("@livekit/agents-plugin-openai"), forModel);
export const loadDeepgram = (forModel: string | null = null) =>
  requirePlugin(PLUGIN_PACKAGES.deepgram, () => import("@livekit/agents-plugin-deepgram"), forModel);
export const loadElevenLabs = (forModel: string | null = null) =>
  requirePlugin(PLUGIN_PACKAGES.elevenlabs, () => import("@livekit/agents-plugin-elevenlabs"), forModel);
export const loadCartesia = (forModel: string | null = null) =>
  requirePlugin(PLUGIN_PACKAGES.cartesia, () => import("@livekit/agents-plugin-cartesia"), forModel);

/**
 * What went through the gateway, so attach() never records it twice: the plugin instances the
 * gateway helper built (and fallback adapters over them), each metrics object they emitted (LiveKit
 * passes the same object on to the session's `metrics_collected`), and the gateway hosts (the
 * OpenAI plugins report their base URL's host as their provider).
 */
const gatewayInstances = new WeakSet<object>();
const gatewayMetrics = new WeakSet<object>();
const gatewayHosts = new Set<string>();

interface MetricsEmitter {
  on(event: "metrics_collected", listener: (metrics: object) => void): unknown;
}

/** Marks an instance as gateway-pointed; its metrics are then known to be the gateway's rows. */
export function trackInstance<T extends object>(instance: T): T {
  gatewayInstances.add(instance);
  const emitter = instance as Partial<MetricsEmitter>;
  if (typeof emitter.on === "function") {
    // Registered at construction, so it runs before the session's own listener sees the object.
    emitter.on.call(instance, "metrics_collected", (metrics: object) => {
      if (metrics && typeof metrics === "object") gatewayMetrics.add(metrics);
    });
  }
  return instance;
}

export const trackHost = (host: string): void => {
  gatewayHosts.add(host);
};
export const isGatewayInstance = (o: unknown): boolean => typeof o === "object" && o !== null && gatewayInstances.has(o);
export const isGatewayMetrics = (o: unknown): boolean => typeof o === "object" && o !== null && gatewayMetrics.has(o);
export const isGatewayHost = (host: string | undefined): boolean => host !== undefined && gatewayHosts.has(host);
