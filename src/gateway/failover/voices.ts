import type { Config } from "../../config/schema.js";

/**
 * The `voices:` map of voxgate.yaml: a TTS voice as the client names it, and per provider the voice
 * that provider speaks for it (a cloned voice has another id on each account). A provider without an
 * entry is sent the requested id unchanged.
 */
export class VoiceMap {
  /** Per provider: its voice id → the requested one (to read a frame already sent to that provider). */
  private readonly requestedOf = new Map<string, Map<string, string>>();

  constructor(private readonly voices: Config["voices"]) {
    for (const [requested, byProvider] of Object.entries(voices)) {
      for (const [provider, voice] of Object.entries(byProvider)) {
        const m = this.requestedOf.get(provider) ?? new Map<string, string>();
        m.set(voice, requested);
        this.requestedOf.set(provider, m);
      }
    }
  }

  get empty(): boolean {
    return this.requestedOf.size === 0;
  }

  /** The voice `provider` speaks for the requested one. */
  on(requested: string, provider: string): string {
    return this.voices[requested]?.[provider] ?? requested;
  }

  /** A voice as it was sent to provider `from`, as provider `to` names it. */
  moved(voice: string, from: string, to: string): string {
    return this.on(this.requestedOf.get(from)?.get(voice) ?? voice, to);
  }

  /**
   * A voice as it was sent to provider `from`, as provider `to` names it, only where the map has an
   * entry for `to`: another vendor's provider has no voice of the same id (a cross-vendor candidate).
   */
  mapped(voice: string, from: string, to: string): string | null {
    return this.voices[this.requestedOf.get(from)?.get(voice) ?? voice]?.[to] ?? null;
  }
}

const cache = new WeakMap<Config["voices"], VoiceMap>();

/** The VoiceMap of a loaded configuration (built once per configuration). */
export function voiceMap(config: Pick<Config, "voices">): VoiceMap {
  const known = cache.get(config.voices);
  if (known) return known;
  const m = new VoiceMap(config.voices);
  cache.set(config.voices, m);
  return m;
}
