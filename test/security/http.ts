import type { CallOptions, TestApp } from "../support/app.js";

/**
 * The attacks in this folder go over a real loopback HTTP connection (the app's listening server),
 * exactly as an outside caller would send them.
 */
export async function http(t: TestApp, method: string, path: string, o: CallOptions = {}): Promise<Response> {
  const base = await t.listen();
  const headers: Record<string, string> = { ...o.headers };
  if (o.key) headers.authorization = `Bearer ${o.key}`;
  let body: string | Uint8Array | undefined = o.raw;
  if (o.body !== undefined) {
    body = JSON.stringify(o.body);
    headers["content-type"] ??= "application/json";
  }
  return fetch(base + path, { method, headers, body: body as BodyInit | undefined });
}

/** JSON of an answer that must have the given status (the body is shown when it does not). */
export async function json<T = unknown>(res: Response | Promise<Response>, status: number): Promise<T> {
  const r = await res;
  const text = await r.text();
  if (r.status !== status) throw new Error(`expected HTTP ${status}, got ${r.status}: ${text.slice(0, 500)}`);
  return (text ? JSON.parse(text) : null) as T;
}
