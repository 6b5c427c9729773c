import { isIP } from "node:net";

/**
 * A loopback peer (127.0.0.0/8, ::1, ::ffff:127.x). null (the socket closed before its peer was read)
 * is not: every gateway call arrives on a socket (src/gateway/listener.ts), so an unknown peer may be anyone.
 */
export function isLoopback(address: string | null): boolean {
  if (address === null) return false;
  const a = address.startsWith("::ffff:") ? address.slice(7) : address;
  if (a === "::1") return true;
  return isIP(a) === 4 && a.startsWith("127.");
}
