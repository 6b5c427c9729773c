import { callObservationsDisabled } from "../config/env.js";
import type { CallWriter } from "./writer.js";
import type { ObservationQueue } from "./observation-queue.js";
import { isDataError } from "../db/errors.js";
import { decodeUtf8, parseJsonText, readBodyBytes, readJson } from "../http/body.js";
import { ApiError, errorBody, parseOrThrow } from "../http/errors.js";
import { contractRouter, defineRoute } from "../http/openapi.js";
import { MAX_WEBHOOK_JSON_DEPTH } from "./limits.js";
import { observationSchema, parseObservation } from "./observation.js";
import { ObservationDropped, ObservationQueued, WebhookAnswer } from "./schemas.js";
import { jsonDepthExceeds } from "./strings.js";
import { isRecordedEvent, WebhookShapeError, webhookEnvelopeSchema, webhookEventSchema, webhookToUpdate } from "./webhook-event.js";
import { type LivekitSettings, livekitCredentials, verifyWebhook } from "./webhook-verify.js";

/** LiveKit sends application/webhook+json; plain application/json is accepted too. */
const WEBHOOK_CONTENT_TYPES = new Set(["application/webhook+json", "application/json"]);

/** Call recording: the LiveKit webhook and agent/loadgen observations (docs/api/calls.md). */
/** LiveKit webhooks and call observations: the credentials that sign webhooks, and the two writers. */
export interface CallRouteDeps extends LivekitSettings {
  callWriter: CallWriter;
  callObservations: ObservationQueue;
}

export function callRoutes(deps: CallRouteDeps) {
  const r = contractRouter();

  // No bearer gate: the LiveKit signature is the credential. 503 (nothing read, nothing written) without one.
  // The body is documented only: it is verified against its signature as raw bytes before any parse.
  defineRoute(r, {
    method: "post",
    path: "/v1/livekit/webhook",
    tag: "calls",
    summary: "LiveKit webhook: records rooms, participants and tracks as calls and legs",
    description:
      "Authenticated by the LiveKit signature (Authorization: the bare webhook JWT, HS256, sha256 claim of the body), not by an API key. Content-Type application/webhook+json or application/json.",
    scope: null,
    body: webhookEventSchema,
    bodyMode: "document",
    bodyContentType: "application/webhook+json",
    responses: {
      200: { description: "recorded, duplicate or ignored", schema: WebhookAnswer },
      401: { description: "missing or invalid LiveKit signature (the message does not say which check failed)" },
      503: { description: "LiveKit webhook credentials are not configured: nothing read, nothing written" },
    },
  }, async (c) => {
    const creds = livekitCredentials(deps);
    if (!creds) {
      throw new ApiError("unavailable", "LiveKit webhook credentials are not configured (LIVEKIT_API_KEY/LIVEKIT_API_SECRET or livekit: block)");
    }
    const contentType = (c.req.header("content-type") ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
    if (!WEBHOOK_CONTENT_TYPES.has(contentType)) {
      throw new ApiError("unsupported_media_type", "Content-Type must be application/webhook+json or application/json");
    }
    const raw = await readBodyBytes(c, c.var.bodyLimitBytes);
    await verifyWebhook(raw, c.req.header("authorization"), creds);

    const payload = parseJsonText(decodeUtf8(raw));
    if (jsonDepthExceeds(payload, MAX_WEBHOOK_JSON_DEPTH)) {
      throw new ApiError("validation_failed", `webhook event nests deeper than ${MAX_WEBHOOK_JSON_DEPTH} levels`);
    }
    const envelope = parseOrThrow(webhookEnvelopeSchema, payload, "webhook event failed validation");
    if (!isRecordedEvent(envelope.event)) {
      return c.json({ status: "ok", result: "ignored", id: envelope.id, event: envelope.event });
    }
    const event = parseOrThrow(webhookEventSchema, payload, "webhook event failed validation");

    let update: ReturnType<typeof webhookToUpdate>;
    try {
      update = webhookToUpdate(event, payload);
    } catch (err) {
      if (err instanceof WebhookShapeError) throw new ApiError("validation_failed", err.message);
      throw err;
    }
    try {
      const result = await deps.callWriter.write(update);
      return c.json({ status: "ok", result, id: event.id, event: event.event });
    } catch (err) {
      // A value Postgres refuses (rolled back whole): the sender's data, not our failure.
      if (isDataError(err)) throw new ApiError("validation_failed", "webhook event holds a value that cannot be stored");
      throw err;
    }
  });

  // The body is documented only: parseObservation validates it once and names each unknown field.
  defineRoute(r, {
    method: "post",
    path: "/v1/calls/observations",
    tag: "calls",
    summary: "An agent or loadgen report about a call, queued for the same upserts as the webhook",
    scope: "ingest",
    body: observationSchema,
    bodyMode: "document",
    responses: {
      202: { description: "queued (the answer does not wait for the database)", schema: ObservationQueued },
      429: { description: "the queue is full: this report was dropped (Retry-After: 1)", schema: ObservationDropped },
      503: { description: "disabled (VOXGATE_DISABLE_CALL_OBSERVATIONS) or shutting down: nothing queued" },
    },
  }, async (c) => {
    const queue = deps.callObservations;
    // Read per request (docs/api/calls.md): flipping the variable takes effect without a restart.
    if (callObservationsDisabled()) {
      throw new ApiError("unavailable", "call observations are disabled (VOXGATE_DISABLE_CALL_OBSERVATIONS)");
    }
    if (!queue.accepting) throw new ApiError("unavailable", "shutting down: call observations are not accepted");
    const body = await readJson(c, c.var.bodyLimitBytes);
    const report = parseObservation(body);
    if (!queue.offer({ report, tenantId: c.var.auth.tenantId })) {
      c.header("Retry-After", "1");
      return c.json(
        {
          ...errorBody("too_many_requests", `observation queue is full (${queue.limit} reports); this report was dropped`),
          status: "dropped",
          ...queue.counters(),
        },
        429,
      );
    }
    return c.json({ status: "queued", ...queue.counters() }, 202);
  });

  return r;
}
