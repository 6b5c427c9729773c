/**
 * The one fetch path: same origin, `Authorization: Bearer <key>` when signed in, the error envelope
 * turned into an ApiError the pages show in place. The key lives in sessionStorage for this tab only
 * (never localStorage, never a cookie).
 */
const KEY_STORAGE = "voxgate.key";

let apiKey: string | null = sessionStorage.getItem(KEY_STORAGE);

export function currentKey(): string | null {
  return apiKey;
}

export function setKey(key: string | null): void {
  apiKey = key;
  if (key === null) sessionStorage.removeItem(KEY_STORAGE);
  else sessionStorage.setItem(KEY_STORAGE, key);
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
  }
}

interface Envelope {
  error?: { code?: string; message?: string; details?: unknown };
}

type Query = Record<string, string | number | boolean | null | undefined>;

export function withQuery(path: string, query: Query = {}): string {
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== null && v !== undefined && v !== "") qs.set(k, String(v));
  const s = qs.toString();
  return s ? `${path}?${s}` : path;
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  return (await request<T>(method, path, body)).data;
}

/** A GET whose next page's cursor comes in a header (GET /api/sessions: X-Next-Cursor). */
export async function getPage<T>(path: string, query?: Query): Promise<{ data: T; next: string | null }> {
  const { data, headers } = await request<T>("GET", withQuery(path, query));
  return { data, next: headers.get("x-next-cursor") };
}

async function request<T>(method: string, path: string, body?: unknown): Promise<{ data: T; headers: Headers }> {
  const headers: Record<string, string> = { accept: "application/json" };
  if (apiKey) headers.authorization = `Bearer ${apiKey}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (res.status === 204) return { data: undefined as T, headers: res.headers };
  const text = await res.text();
  let parsed: unknown = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = null;
  }
  if (!res.ok) {
    const e = (parsed as Envelope | null)?.error;
    throw new ApiError(res.status, e?.code ?? `http_${res.status}`, e?.message ?? (text.slice(0, 200) || res.statusText), e?.details);
  }
  return { data: parsed as T, headers: res.headers };
}

export const get = <T>(path: string, query?: Query) => api<T>("GET", withQuery(path, query));
