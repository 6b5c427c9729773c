import type { Context } from "hono";
import type { SecretStore } from "./registry.js";
import type { UpstreamPools } from "./provider-check.js";
import { z } from "zod";
import type { AppEnv } from "../http/app-env.js";
import { ApiError } from "../http/errors.js";
import { contractRouter, defineRoute } from "../http/openapi.js";
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
import { findEffectiveProvider, providerApiKey } from "./registry.js";
import { providerList } from "./status.js";
import { DeleteAnswer, Provider, ProviderCreated, ProviderTest, ProviderUpdated } from "./schemas.js";

const read = { tag: "providers", scope: "read", middleware: [requireOperatorForProviders] } as const;
const write = { tag: "providers", scope: "write", middleware: [requireOperatorForProviders] } as const;
const params = z.object({ provider_id: z.string() });
const notFound = { 404: { description: "no such provider" } };
const badUrl = { 400: { description: "unpermitted_base_url: the base_url breaks the SSRF rule" } };

/** A test's answer without its detail; the detail (why it failed) goes to the log. */
function answerTest(c: Context<AppEnv>, providerId: string | null, result: ProviderTestResult) {
  const { detail, ...answer } = result;
  if (detail) c.var.log.warn({ provider_id: providerId ?? undefined, detail, actor: c.var.auth.actor }, "provider test failed");
  return c.json(answer);
}

/** /v1/providers: providers and their connectivity tests. */
export function providerTestRoutes(deps: SecretStore & { upstreams: UpstreamPools }) {
  const r = contractRouter();

  defineRoute(
    r,
    { method: "get", path: "/v1/providers", ...read, summary: "Providers (keys masked)", responses: { 200: { description: "providers", schema: z.object({ providers: z.array(Provider) }) } } },
    async (c) => c.json(await providerList(deps)),
  );
  defineRoute(
    r,
    { method: "get", path: "/v1/providers/{provider_id}", ...read, summary: "One provider", params, responses: { 200: { description: "the provider", schema: Provider }, ...notFound } },
    async (c, { params: p }) => {
      const found = await findEffectiveProvider(deps, p.provider_id);
      if (!found) throw new ApiError("not_found", `no provider ${p.provider_id}`);
      return c.json(providerView(found));
    },
  );
  defineRoute(
    r,
    {
      method: "post",
      path: "/v1/providers",
      ...write,
      summary: "Add a provider (its key stored encrypted)",
      body: createProviderBody,
      responses: { 200: { description: "created", schema: ProviderCreated }, 409: { description: "the id exists already" }, ...badUrl },
    },
    async (c, { body }) => c.json(await createProvider(deps, c.var.auth, body)),
  );
  defineRoute(
    r,
    {
      method: "patch",
      path: "/v1/providers/{provider_id}",
      ...write,
      summary: "Change a db provider",
      params,
      body: updateProviderBody,
      responses: { 200: { description: "updated", schema: ProviderUpdated }, ...notFound, ...badUrl },
    },
    async (c, { params: p, body }) => c.json(await updateProvider(deps, c.var.auth, p.provider_id, body)),
  );
  defineRoute(
    r,
    {
      method: "delete",
      path: "/v1/providers/{provider_id}",
      ...write,
      summary: "Delete a db provider and its db models (preview without confirm=true)",
      params,
      query: confirmQuery,
      responses: {
        200: { description: "preview or deletion", schema: DeleteAnswer(z.object({ provider_id: z.string(), models: z.array(z.string()) })) },
        ...notFound,
        409: { description: "models in voxgate.yaml use the provider" },
      },
    },
    async (c, { params: p, query }) => c.json(await deleteProvider(deps, c.var.auth, p.provider_id, query.confirm)),
  );

  // 28: a type + credential before saving; nothing has to exist. The base_url rule applies as on create.
  defineRoute(
    r,
    { method: "post", path: "/v1/providers/test", ...write, summary: "Test a type and key before saving", body: testProviderBody, responses: { 200: { description: "the test", schema: ProviderTest }, ...badUrl } },
    async (c, { body }) => {
      const baseUrl = checkedBaseUrl(deps, body.provider_type, body.base_url);
      return answerTest(c, null, await testProvider(deps.upstreams, { type: body.provider_type, apiKey: body.api_key, baseUrl }));
    },
  );

  // 27: the stored provider, with its stored (decrypted) key.
  defineRoute(
    r,
    { method: "post", path: "/v1/providers/{provider_id}/test", ...write, summary: "Test a stored provider", params, responses: { 200: { description: "the test", schema: ProviderTest }, ...notFound } },
    async (c, { params: p }) => {
      const found = await findEffectiveProvider(deps, p.provider_id);
      if (!found) throw new ApiError("not_found", `no provider ${p.provider_id}`);
      let apiKey: string;
      try {
        apiKey = await providerApiKey(deps, found);
      } catch (err) {
        if (!(err instanceof SecretDecryptError)) throw err;
        return c.json({ status: "failed", latency_ms: 0, message: `stored api_key cannot be decrypted: ${err.message}` });
      }
      return answerTest(c, found.providerId, await testProvider(deps.upstreams, { type: found.providerType, apiKey, baseUrl: found.baseUrl }));
    },
  );

  return r;
}
