/** Diagnostics gate statuses form a ladder: a run's verdict is its worst gate. */
export const GATE_STATUSES = ["PASS", "WARN", "UNKNOWN", "FAIL"] as const;
export type GateStatus = (typeof GATE_STATUSES)[number];

export interface GateResult {
  gateId: string;
  status: GateStatus;
  detail: string;
}

/** PASS < WARN < UNKNOWN < FAIL; UNKNOWN (could not evaluate) is never a pass. No gates → UNKNOWN. */
export function verdictOf(statuses: readonly GateStatus[]): GateStatus {
  if (statuses.length === 0) return "UNKNOWN";
  return statuses.reduce((worst, s) => (GATE_STATUSES.indexOf(s) > GATE_STATUSES.indexOf(worst) ? s : worst), "PASS");
}

export function isGateStatus(value: string): value is GateStatus {
  return (GATE_STATUSES as readonly string[]).includes(value);
}
