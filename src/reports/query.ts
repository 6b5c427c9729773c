import { z } from "zod";
import { MODALITIES } from "../config/schema.js";
import { LOG_LIMIT_DEFAULT, LOG_LIMIT_MAX, LOG_LIMIT_MIN } from "./logs.js";
import { COST_PERIODS, LATENCY_PERIODS } from "./window.js";

/** Longest project filter accepted; longer is a 422 (no project id is that long). */
export const PROJECT_FILTER_MAX = 200;

// An empty `project=` means no filter (what a cleared dashboard form sends).
const project = z
  .string()
  .max(PROJECT_FILTER_MAX)
  .optional()
  .transform((v) => (v === undefined || v === "" ? null : v));

export const costsQuery = z.object({ period: z.enum(COST_PERIODS).default("today"), project });
export const latencyQuery = z.object({ period: z.enum(LATENCY_PERIODS).default("today"), project });
export const logsQuery = z.object({
  limit: z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined) return LOG_LIMIT_DEFAULT;
      const n = /^\d+$/.test(v.trim()) ? Number(v.trim()) : Number.NaN;
      if (!Number.isInteger(n) || n < LOG_LIMIT_MIN || n > LOG_LIMIT_MAX) {
        ctx.addIssue({ code: "custom", message: `must be an integer from ${LOG_LIMIT_MIN} to ${LOG_LIMIT_MAX}` });
        return z.NEVER;
      }
      return n;
    }),
  modality: z
    .enum(MODALITIES)
    .optional()
    .transform((v) => v ?? null),
  project,
});
export const projectQuery = z.object({ project });
