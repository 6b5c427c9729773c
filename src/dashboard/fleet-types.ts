import type { rosterEntry } from "../fleet/presence.js";

/** GET /v1/agents (src/fleet/routes.ts): the live roster the web app's Fleet page reads. */
export interface RosterResponse {
  agents: ReturnType<typeof rosterEntry>[];
  count: number;
  ageing_seconds: number;
}
