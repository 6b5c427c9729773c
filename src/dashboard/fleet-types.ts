/** GET /v1/agents (src/fleet/routes.ts): the live roster the web app's Fleet page reads; its type is the schema's. */
export type { RosterResponse } from "../fleet/schemas.js";
