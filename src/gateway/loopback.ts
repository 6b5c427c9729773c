import { isIP } from "node:net";

/**
 * A loopback peer (127.0.0.0/8, ::1, ::ffff:127.x). null (in-process app.request, no socket) counts as
 * loopback: nothing outside the process can reach it.
 */
export function isLoopback(address: string | null): boolean {
  if (address === null) return true;
  const a = address.startsWith("::ffff:") ? address.slice(7) : address;
  if (a === "::1") return true;
  return isIP(a) === 4 && a.startsWith("127.");
}
