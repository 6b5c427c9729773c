/** The receiver's own view of a span: ids in lower-case hex, times in epoch ms, attributes flattened. */
export type AttrValue = string | number | boolean | null | AttrValue[] | { [key: string]: AttrValue };
export type Attrs = Record<string, AttrValue>;

export interface Span {
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  name: string;
  startMs: number;
  endMs: number;
  /** OTLP status code: 0 unset, 1 ok, 2 error. */
  statusCode: number;
  statusMessage: string;
  attributes: Attrs;
}

/** Spans of one resource (one exporting process), with that resource's attributes. */
export interface ResourceBatch {
  resource: Attrs;
  spans: Span[];
}

export interface DecodedRequest {
  batches: ResourceBatch[];
  /** Spans refused while decoding (bad ids or times), with the first reason. */
  rejected: number;
  firstRejection: string | null;
}

export const str = (a: Attrs, key: string): string | null => {
  const v = a[key];
  return typeof v === "string" && v !== "" ? v : null;
};

export const num = (a: Attrs, key: string): number | null => {
  const v = a[key];
  if (typeof v === "number" && Number.isFinite(v)) return v;
  if (typeof v === "string" && v.trim() !== "" && Number.isFinite(Number(v))) return Number(v);
  return null;
};

export const bool = (a: Attrs, key: string): boolean | null => {
  const v = a[key];
  return typeof v === "boolean" ? v : null;
};
