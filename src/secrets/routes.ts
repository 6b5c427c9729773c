import { z } from "zod";
import { contractRouter, defineRoute } from "../http/openapi.js";
import { requireOperatorForProviders } from "../manage/common.js";
import type { Database } from "../db/client.js";
import type { Logger } from "../logging.js";
import type { SecretBox } from "./box.js";
import { reencryptProviderKeys } from "./rotate.js";

/**
 * POST /v1/secrets/rotate: re-encrypt every stored provider key made with an earlier secret
 * (VOXGATE_SECRET_PREVIOUS) under the current VOXGATE_SECRET now, as a start does, and say how
 * many. What `voxgate rotate-secret` calls; re-running is a no-op.
 */
export function secretRoutes(deps: { database: Database; secrets: SecretBox; log: Logger }) {
  const r = contractRouter();
  defineRoute(
    r,
    {
      method: "post",
      path: "/v1/secrets/rotate",
      tag: "providers",
      summary: "Re-encrypt stored provider keys under the current secret (operator admin keys)",
      description: "Rows whose secret is not loaded are left as they are and counted as unreadable: supply it in VOXGATE_SECRET_PREVIOUS and retry.",
      scope: "admin",
      middleware: [requireOperatorForProviders],
      responses: {
        200: { description: "how many rows moved to the current key", schema: z.object({ reencrypted: z.number().int(), unreadable: z.number().int() }) },
      },
    },
    async (c) => c.json(await reencryptProviderKeys(deps)),
  );
  return r;
}
