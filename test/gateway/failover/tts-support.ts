import { createRequire } from "node:module";
import type CartesiaClient from "@cartesia/cartesia-js";
import { afterAll, beforeAll, beforeEach, expect } from "vitest";
import { tlsTerminator } from "../../livekit/support.js";
import type { TtsLegScript } from "../../support/stubs/tts-legs.js";
import type { StubServer } from "../../support/stubs/vendor-stub.js";
import { type gatewayApp, KEYS_YAML, OPERATOR_KEY, PROVIDER_KEY } from "../support.js";
import { legRows } from "../ws-support.js";

// The SDK's ESM build looks for `ws` with require(): it is used through its CommonJS entry (as in ws-sdks.test.ts).
const { Cartesia } = createRequire(import.meta.url)("@cartesia/cartesia-js") as { Cartesia: typeof CartesiaClient };
type CartesiaSocket = Awaited<ReturnType<CartesiaClient["tts"]["websocket"]>>;

/** `use` on a @cartesia/cartesia-js tts.websocket() to the gateway's Cartesia route in session `session` (wss only: through a TLS terminator). */
export async function withCartesiaSocket<T>(app: Awaited<ReturnType<typeof gatewayApp>>, session: string, use: (ws: CartesiaSocket) => Promise<T>): Promise<T> {
  const tls = await tlsTerminator(Number(new URL(app.base).port));
  try {
    const client = new Cartesia({ apiKey: OPERATOR_KEY, baseURL: `https://127.0.0.1:${tls.port}/p/voice/s/${session}/cartesia` });
    const ws = await client.tts.websocket({ ca: tls.ca });
    ws.on("error", () => {});
    try {
      return await use(ws);
    } finally {
      ws.close();
    }
  } finally {
    await tls.close();
  }
}

/** The TTS failover tests' stall window: short, so a silent vendor is failed over within the test. */
export const STALL_MS = 300;

/**
 * Two scripted vendors of one kind for a test file: provider `<vendor>` (the primary) and
 * `<vendor>-b` (the fallbacks.tts candidate), the same model on each; started once, reset (with
 * their leg scripts) before each test.
 */
export function twoVendors<S extends StubServer>(vendor: string, model: string, stubs: { primary: S; backup: S; base: (s: S) => string; clear: (s: S) => void }) {
  beforeAll(async () => {
    await Promise.all([stubs.primary.start(), stubs.backup.start()]);
  });
  afterAll(async () => {
    await Promise.all([stubs.primary.stop(), stubs.backup.stop()]);
  });
  beforeEach(() => {
    for (const s of [stubs.primary, stubs.backup]) {
      s.reset();
      stubs.clear(s);
    }
  });
  const first = `${vendor}/${model}`;
  const second = `${vendor}-b/${model}`;
  /** voxgate.yaml of the pair; `extra` is more top-level yaml (a voices: map). */
  const yaml = (extra = "") => `${KEYS_YAML}
providers:
  ${vendor}: { api_key: "${PROVIDER_KEY}", base_url: "${stubs.base(stubs.primary)}" }
  ${vendor}-b: { type: ${vendor}, api_key: "${PROVIDER_KEY}", base_url: "${stubs.base(stubs.backup)}" }
models:
  tts:
    ${first}: { provider: ${vendor}, model: ${model} }
    ${second}: { provider: ${vendor}-b, model: ${model} }
fallbacks:
  tts: [${first}, ${second}]
projects:
  voice: {}
gateway:
  streams: { stall_ms: ${STALL_MS} }
${extra}`;
  return { first, second, yaml };
}

/** What the failed leg's row says of each scripted failure. */
const REASONS: Record<TtsLegScript["how"], RegExp> = {
  error: /scripted vendor failure/,
  refuse: /./,
  stall: new RegExp(`sent nothing for ${STALL_MS} ms`),
  drop: /lost mid-stream/,
  close: /closed the stream with 1011/,
};

/**
 * The records of a stream that failed over once from `first` to `second`: the failed leg `error`
 * with the scripted reason and the characters it voiced, the new leg `fallback` with the rest, one
 * stream, and the seam counted in the failovers metric under `route`.
 */
export async function expectFailedOver(
  app: Awaited<ReturnType<typeof gatewayApp>>,
  session: string,
  leg: { first: string; second: string; how: TtsLegScript["how"]; firstCharacters: number; secondCharacters: number; route: RegExp },
): Promise<void> {
  const rows = await legRows(app, session, [leg.first, leg.second]);
  const failed = rows.filter((r) => r.model_id === leg.first);
  expect(failed).toHaveLength(1);
  expect(failed[0]).toMatchObject({ status: "error", characters: leg.firstCharacters });
  expect(failed[0]?.error_message).toMatch(REASONS[leg.how]);
  const retried = rows.filter((r) => r.model_id === leg.second && r.metadata?.checkpoint === undefined);
  expect(retried).toHaveLength(1);
  expect(retried[0]).toMatchObject({ status: "fallback", fallback_from: leg.first, characters: leg.secondCharacters });
  expect(retried[0]?.metadata?.stream_id).toBe(failed[0]?.id);
  const metrics = await (await app.call("GET", "/v1/metrics", { key: OPERATOR_KEY })).text();
  const [fromProvider, toProvider] = [leg.first, leg.second].map((m) => m.split("/")[0]);
  const counted = metrics.split("\n").filter((l) => l.startsWith("voxgate_gateway_stream_failovers_total{") && l.includes(`from="${fromProvider}",to="${toProvider}"`));
  expect(counted).toHaveLength(1);
  expect(counted[0]).toMatch(leg.route);
  expect(counted[0]?.endsWith(" 1")).toBe(true);
}
