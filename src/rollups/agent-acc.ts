import type { LatencySketch } from "../stats/summary.js";

/* One agent's sums in one bucket, shared by fleet-index.ts and fleet-checkpoints.ts (apart, so neither imports the other's types in a cycle). */

/** Modalities with a TTFB sketch column; a row of another modality counts but has no sketch. */
export const FLEET_MODALITIES = ["stt", "llm", "tts"] as const;
export type FleetModality = (typeof FLEET_MODALITIES)[number];

export interface AgentAcc {
  bucket: Date;
  tenantId: string | null;
  agentId: string;
  requests: number;
  probeRequests: number;
  errors: number;
  cost: bigint;
  rated: bigint;
  ttfb: Record<FleetModality, LatencySketch>;
  turns: number;
  probeTurns: number;
  response: LatencySketch;
}

/** A turn as the per-agent rollups see it: its start (epoch ms), owner, response speed and probe flag. */
export interface TurnFold {
  startMs: number;
  tenantId: string | null;
  agentId: string;
  responseSpeedMs: number | null;
  isProbe: boolean;
}
