import type { Config } from "../config/schema.js";
import type { OtlpRecord } from "./map.js";

/** What resolving a Node agent's STT label reads: the yaml's models, stacks, projects and provider types. */
export type SttModelConfig = Pick<Config, "models" | "stacks" | "projects" | "providers">;

/** Node's `user_turn` names the STT plugin's label as its model ("deepgram.STT"; a stream's "deepgram.STT.stream"). */
const NODE_STT_LABEL = /^([a-z0-9_-]+)\.stt(\.stream)?$/i;

/**
 * Node agents' STT records carry the plugin label as their model, which no price matches. Where the
 * configuration says which model that is, the record takes it: (1) the STT model of the record's
 * project's `default_stack`, when its provider is the label's; (2) else the one `models.stt` entry of
 * that provider, when there is exactly one. Otherwise the label stays (the record is unpriced) and
 * `metadata.stt_model_unknown` says why. Either way `metadata.stt_label` keeps the label.
 */
export function resolveSttModels(records: OtlpRecord[], config: SttModelConfig): void {
  for (const r of records) {
    if (r.modality !== "stt") continue;
    const label = r.model_id.slice(r.model_id.indexOf("/") + 1);
    const m = NODE_STT_LABEL.exec(label);
    if (!m) continue;
    const vendor = (m[1] as string).toLowerCase();
    const ofVendor = (id: string) => {
      const entry = config.models.stt[id];
      return entry !== undefined && (entry.provider === vendor || config.providers[entry.provider]?.type === vendor) ? entry : null;
    };
    r.metadata.stt_label = label;
    const stack = config.projects[r.project ?? "default"]?.default_stack;
    const stackModel = stack ? config.stacks[stack]?.stt : undefined;
    const candidates = Object.keys(config.models.stt).filter((id) => ofVendor(id) !== null);
    const [id, source] =
      stackModel && ofVendor(stackModel) ? [stackModel, "project_stack"] : candidates.length === 1 ? [candidates[0] as string, "only_configured_model"] : [null, null];
    if (id === null) {
      r.metadata.stt_model_unknown = true;
      continue;
    }
    r.model_id = id;
    r.provider = ofVendor(id)?.provider ?? r.provider;
    r.metadata.stt_model_source = source;
  }
}
