import { type Attrs, str } from "./spans.js";

/**
 * The metrics JSON LiveKit puts in `lk.llm_metrics`, `lk.tts_metrics` and
 * `lk.realtime_model_metrics`, read in both runtimes' shapes: Node's camelCase in milliseconds
 * (`ttftMs`, `durationMs`, `audioDurationMs`, `promptTokens`, `metadata.modelName`) and Python's
 * snake_case in seconds (`ttft`, `duration`, `audio_duration`, `prompt_tokens`,
 * `metadata.model_name`). Every value is normalised to milliseconds and counts; absent or
 * negative (LiveKit's -1 "never") values are null.
 */
export interface LkMetrics {
  ttfbMs: number | null;
  durationMs: number | null;
  audioDurationMs: number | null;
  inputTokens: number | null;
  outputTokens: number | null;
  cachedInputTokens: number | null;
  inputAudioTokens: number | null;
  outputAudioTokens: number | null;
  inputTextTokens: number | null;
  outputTextTokens: number | null;
  characters: number | null;
  cancelled: boolean;
  modelName: string | null;
  modelProvider: string | null;
  label: string | null;
}

type Json = Record<string, unknown>;
const obj = (v: unknown): Json | null => (v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Json) : null);

const count = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? Math.round(v) : null);
const ms = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : null);
const secondsAsMs = (v: unknown): number | null => {
  const s = ms(v);
  return s === null ? null : s * 1000;
};
const text = (v: unknown): string | null => (typeof v === "string" && v !== "" ? v.slice(0, 256) : null);

/** The metrics JSON under `key`, or null when the attribute is absent or not a JSON object. */
export function readMetrics(attrs: Attrs, key: string): LkMetrics | null {
  const raw = str(attrs, key);
  if (raw === null) return null;
  let m: Json | null;
  try {
    m = obj(JSON.parse(raw));
  } catch {
    return null;
  }
  if (m === null) return null;
  const meta = obj(m.metadata) ?? {};
  const inDetails = obj(m.inputTokenDetails) ?? obj(m.input_token_details) ?? {};
  const outDetails = obj(m.outputTokenDetails) ?? obj(m.output_token_details) ?? {};
  // Node's keys carry their unit (`…Ms`); Python's are bare seconds. A key of either runtime may be
  // present; Node's wins when both are.
  const timing = (nodeKey: string, pythonKey: string) => ms(m[nodeKey]) ?? secondsAsMs(m[pythonKey]);
  return {
    ttfbMs: timing("ttftMs", "ttft") ?? timing("ttfbMs", "ttfb"),
    durationMs: timing("durationMs", "duration"),
    audioDurationMs: timing("audioDurationMs", "audio_duration"),
    inputTokens: count(m.promptTokens) ?? count(m.prompt_tokens) ?? count(m.inputTokens) ?? count(m.input_tokens),
    outputTokens: count(m.completionTokens) ?? count(m.completion_tokens) ?? count(m.outputTokens) ?? count(m.output_tokens),
    cachedInputTokens:
      count(m.promptCachedTokens) ?? count(m.prompt_cached_tokens) ?? count(inDetails.cachedTokens) ?? count(inDetails.cached_tokens),
    inputAudioTokens: count(inDetails.audioTokens) ?? count(inDetails.audio_tokens),
    outputAudioTokens: count(outDetails.audioTokens) ?? count(outDetails.audio_tokens),
    inputTextTokens: count(inDetails.textTokens) ?? count(inDetails.text_tokens),
    outputTextTokens: count(outDetails.textTokens) ?? count(outDetails.text_tokens),
    characters: count(m.charactersCount) ?? count(m.characters_count),
    cancelled: m.cancelled === true,
    modelName: text(meta.modelName) ?? text(meta.model_name),
    modelProvider: text(meta.modelProvider) ?? text(meta.model_provider),
    label: text(m.label),
  };
}
