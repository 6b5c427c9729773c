/**
 * THE rule deriving a call's channel, end reason, trunk and probe flag from its legs. The webhook and
 * the observation flusher both call it (through upsert.ts) over every leg stored for the room.
 */

export interface LegForDerivation {
  kind: string | null;
  disconnectReason: string | null;
  leftAtMs: number | null;
  attributes: unknown;
}

export interface CallOutcome {
  /** sip when any leg is a SIP participant, webrtc when legs exist but none is SIP, null with no legs. */
  channel: "sip" | "webrtc" | null;
  /** The SIP leg's disconnect reason (the last SIP leg to leave, when several); null without one. */
  endReason: string | null;
  /** The SIP leg's `sip.trunkID` attribute. */
  trunkId: string | null;
  /** True when that trunk is one of VOXGATE_LOADTEST_TRUNK_IDS. */
  isProbeTrunk: boolean;
}

export function deriveCallOutcome(legs: readonly LegForDerivation[], loadtestTrunks: ReadonlySet<string>): CallOutcome {
  if (legs.length === 0) return { channel: null, endReason: null, trunkId: null, isProbeTrunk: false };
  const sipLegs = legs.filter((l) => l.kind === "SIP");
  if (sipLegs.length === 0) return { channel: "webrtc", endReason: null, trunkId: null, isProbeTrunk: false };

  // Several SIP legs (transfer, conference): the one that left last ended the call.
  const ordered = [...sipLegs].sort((a, b) => (b.leftAtMs ?? -1) - (a.leftAtMs ?? -1));
  const endReason = ordered.find((l) => l.disconnectReason)?.disconnectReason ?? null;
  const trunkIds = sipLegs.map((l) => trunkIdOf(l.attributes)).filter((t): t is string => t !== null);
  return {
    channel: "sip",
    endReason,
    trunkId: trunkIds[0] ?? null,
    isProbeTrunk: trunkIds.some((t) => loadtestTrunks.has(t)),
  };
}

function trunkIdOf(attributes: unknown): string | null {
  if (attributes === null || typeof attributes !== "object") return null;
  const v = (attributes as Record<string, unknown>)["sip.trunkID"];
  return typeof v === "string" && v !== "" ? v : null;
}
