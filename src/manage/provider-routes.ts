import { type Context, Hono } from "hono";
import { requireScope } from "../auth/gate.js";
import { ApiError, parseOrThrow } from "../http/errors.js";
import type { AppEnv } from "../http/app-env.js";
import { readJson } from "../http/body.js";
import { SecretDecryptError } from "../secrets/box.js";
import { confirmQuery, requireOperatorForProviders } from "./common.js";
import { type ProviderTestResult, testProvider } from "./provider-check.js";
import {
  checkedBaseUrl,
  createProvider,
  createProviderBody,
  deleteProvider,
  providerView,
  testProviderBody,
  updateProvider,
  updateProviderBody,
} from "./providers.js";
import { findEffectiveProvider, listEffectiveProviders, providerApiKey } from "./registry.js";

const read = [requireScope("read"), requireOperatorForProviders] as const;
const write = [requireScope("write"), requireOperatorForProviders] as const;

/** A test's answer without its detail; the detail (why it failed) goes to the log. */
function answerTest(c: Context<AppEnv>, providerId: string | null, result: ProviderTestResult) {
  const { detail, ...answer } = result;
  if (detail) c.var.log.warn({ provider_id: providerId ?? undefined, detail, actor: c.var.auth.actor }, "provider test failed");
  return c.json(answer);
}

/** Endpoints 23-28: providers and their connectivity tests. */
export function providerTestRoutes() {
  const r = new Hono<AppEnv>();

  r.get("/v1/providers", ...read, async (c) =>
    c.json({ providers: (await listEffectiveProviders(c.var.services)).map(providerView) }),
  );
  r.get("/v1/providers/:provider_id", ...read, async (c) => {
    const p = await findEffectiveProvider(c.var.services, c.req.param("provider_id"));
    if (!p) throw new ApiError("not_found", `no provider ${c.req.param("provider_id")}`);
    return c.json(providerView(p));
  });
  r.post("/v1/providers", ...write, async (c) => {
    const { services } = c.var;
    const body = parseOrThrow(createProviderBody, await readJson(c, services.config.serve.body_limit_bytes));
    return c.json(await createProvider(services, c.var.auth, body));
  });
  r.patch("/v1/providers/:provider_id", ...write, async (c) => {
    const { services } = c.var;
    const body = parseOrThrow(updateProviderBody, await readJson(c, services.config.serve.body_limit_bytes));
    return c.json(await updateProvider(services, c.var.auth, c.req.param("provider_id"), body));
  });
  r.delete("/v1/providers/:provider_id", ...write, async (c) => {
    const q = parseOrThrow(confirmQuery, c.req.query());
    return c.json(await deleteProvider(c.var.services, c.var.auth, c.req.param("provider_id"), q.confirm));
  });

  // 28: a type + credential before saving; nothing has to exist. The base_url rule applies as on create.
  r.post("/v1/providers/test", ...write, async (c) => {
    const { services } = c.var;
    const body = parseOrThrow(testProviderBody, await readJson(c, services.config.serve.body_limit_bytes));
    const baseUrl = checkedBaseUrl(services, body.provider_type, body.base_url);
    return answerTest(c, null, await testProvider(services.upstreams, { type: body.provider_type, apiKey: body.api_key, baseUrl }));
  });

  // 27: the stored provider, with its stored (decrypted) key.
  r.post("/v1/providers/:provider_id/test", ...write, async (c) => {
    const { services } = c.var;
    const p = await findEffectiveProvider(services, c.req.param("provider_id"));
    if (!p) throw new ApiError("not_found", `no provider ${c.req.param("provider_id")}`);
    let apiKey: string;
    try {
      apiKey = await providerApiKey(services, p);
    } catch (err) {
      if (!(err instanceof SecretDecryptError)) throw err;
      return c.json({ status: "failed", latency_ms: 0, message: `stored api_key cannot be decrypted: ${err.message}` });
    }
    return answerTest(c, p.providerId, await testProvider(services.upstreams, { type: p.providerType, apiKey, baseUrl: p.baseUrl }));
  });

  return r;
}
