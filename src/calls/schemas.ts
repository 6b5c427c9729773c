import { z } from "zod";
import { ErrorEnvelope } from "../http/openapi.js";
import { OBSERVATION_QUEUE_LIMIT } from "./limits.js";

/** Answer schemas of the call-recording routes (the request bodies are observationSchema and webhookEventSchema). */

export const WebhookAnswer = z.object({
  status: z.literal("ok"),
  result: z
    .enum(["recorded", "duplicate", "foreign", "ignored"])
    .describe("recorded; duplicate: the event id was seen before (nothing changed); ignored: an event Voxgate does not record (egress_*, ingress_*, …)"),
  id: z.string().describe("the event id"),
  event: z.string().describe("the event name"),
});

const counters = {
  queued: z.number().int().describe("reports accepted into the queue since the process started"),
  dropped: z.number().int().describe("reports refused because the queue was full since start"),
  queue_depth: z.number().int().describe(`reports waiting to be written now (at most ${OBSERVATION_QUEUE_LIMIT})`),
};

export const ObservationQueued = z.object({ status: z.literal("queued"), ...counters }).describe("counters are per process");

export const ObservationDropped = ErrorEnvelope.extend({ status: z.literal("dropped"), ...counters });
