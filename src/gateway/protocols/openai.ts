import { authorizationToken, type GatewayErrorCode, type LocalRoute, type UpstreamTarget, type VendorProtocol } from "../protocol.js";
import { speechRoute, transcriptionsRoute } from "./openai-audio.js";
import { chatCompletionsRoute } from "./openai-chat.js";
import { responsesRoute } from "./openai-responses.js";

/** OpenAI's error `type` for each gateway error (the SDKs map status codes; type is informative). */
const OPENAI_ERROR_TYPES: Record<GatewayErrorCode, string> = {
  invalid_request: "invalid_request_error",
  unauthorized: "authentication_error",
  forbidden: "permission_error",
  model_not_found: "invalid_request_error",
  payload_too_large: "invalid_request_error",
  budget_exceeded: "insufficient_quota",
  rate_limited: "rate_limit_error",
  too_many_streams: "rate_limit_error",
  upstream_unavailable: "api_error",
  upstream_timeout: "api_error",
  loopback_only: "permission_error",
};

const bearer = (t: UpstreamTarget): Record<string, string> => (t.apiKey ? { authorization: `Bearer ${t.apiKey}` } : {});

/**
 * GET /models: the models routable through this prefix (every modality), OpenAI's list shape plus two
 * extras the LiveKit integration reads: `modality` per model and the configured `stacks`.
 */
const modelsRoute: LocalRoute = {
  kind: "local",
  method: "GET",
  path: "/models",
  answer({ routable }) {
    const data = routable.models.map((m) => ({ id: m.modelId, object: "model", created: 0, owned_by: m.providerId, modality: m.modality }));
    return {
      status: 200,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ object: "list", data, stacks: routable.stacks }),
    };
  },
};

/** /openai/v1: OpenAI's wire protocol, served by openai, groq and openai_compatible providers. */
export const openaiProtocol: VendorProtocol = {
  id: "openai",
  prefix: "/openai/v1",
  providerTypes: ["openai", "groq", "openai_compatible"],
  credential: (headers) => authorizationToken(headers) ?? (typeof headers["api-key"] === "string" ? headers["api-key"] : null),
  upstreamAuth: bearer,
  errorBody(_status, code, message, details) {
    return {
      contentType: "application/json",
      body: JSON.stringify({ error: { message, type: OPENAI_ERROR_TYPES[code], param: null, code, ...(details !== undefined && { details }) } }),
    };
  },
  routes: [chatCompletionsRoute(bearer), responsesRoute(bearer), modelsRoute, transcriptionsRoute(bearer), speechRoute(bearer)],
};
