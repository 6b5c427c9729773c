import { createGunzip, createInflate } from "node:zlib";
import type { Context } from "hono";
import { ApiError } from "./errors.js";
import { refuseUnstorableJson } from "./storable.js";

/**
 * Reads a request body with the size limit enforced while reading, before any parsing.
 * gzip/deflate bodies are decompressed and the limit applies to the decompressed size,
 * so a gzip bomb stops at `limit` bytes of output. `held`, when given, is told the bytes the body will
 * hold as soon as that is known: a declared length sent as is before a byte is read (the body is then
 * read whole), else the bytes held so far (decompressed) after each chunk, before the chunk is kept.
 * An error it throws stops the read and is the answer (the OTLP receiver's shared budget of body
 * bytes: src/otlp/admission.ts).
 */
export async function readBodyBytes(c: Context, limit: number, held?: (bytes: number) => void): Promise<Buffer> {
  const lengthHeader = c.req.header("content-length");
  const declared = lengthHeader === undefined ? Number.NaN : Number(lengthHeader);
  const encoding = (c.req.header("content-encoding") ?? "identity").trim().toLowerCase();
  if (!["identity", "gzip", "deflate", ""].includes(encoding)) {
    throw new ApiError("unsupported_media_type", `unsupported Content-Encoding: ${encoding}`);
  }
  if (encoding === "identity" || encoding === "") {
    if (declared > limit) throw tooLarge(limit);
    // A declared length within the limit: Node's HTTP parser reads exactly that many bytes, so the body
    // is read whole, off the socket as it comes (@hono/node-server's direct read). Through the web
    // stream each request built a Request and a ReadableStream over the socket: ~3% of the OTLP
    // receiver's main thread, an export being a request per 126 records (docs/perf/ingest.md).
    if (Number.isSafeInteger(declared) && declared >= 0) {
      if (declared > 0) held?.(declared);
      const body = Buffer.from(await c.req.raw.arrayBuffer());
      // Only an in-process Request (app.request in tests) can hold more than it declared.
      if (body.byteLength > limit) throw tooLarge(limit);
      return body;
    }
  }
  const stream = c.req.raw.body;
  if (!stream) return Buffer.alloc(0);

  if (encoding === "identity" || encoding === "") return collect(stream, limit, held);
  return decompress(stream, encoding === "gzip" ? createGunzip() : createInflate(), limit, held);
}

function tooLarge(limit: number): ApiError {
  return new ApiError("payload_too_large", `request body exceeds ${limit} bytes`, { limit_bytes: limit });
}

async function collect(stream: ReadableStream<Uint8Array>, limit: number, held?: (bytes: number) => void): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      throw tooLarge(limit);
    }
    if (held) {
      try {
        held(size);
      } catch (err) {
        await reader.cancel().catch(() => {});
        throw err;
      }
    }
    chunks.push(Buffer.from(value.buffer, value.byteOffset, value.byteLength));
  }
  return Buffer.concat(chunks, size);
}

async function decompress(
  stream: ReadableStream<Uint8Array>,
  inflater: ReturnType<typeof createGunzip>,
  limit: number,
  held?: (bytes: number) => void,
): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  const reader = stream.getReader();
  return new Promise<Buffer>((resolve, reject) => {
    let failed = false;
    const fail = (err: unknown) => {
      if (failed) return;
      failed = true;
      inflater.destroy();
      reader.cancel().catch(() => {});
      reject(err);
    };
    inflater.on("data", (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size > limit) return fail(tooLarge(limit));
      if (held) {
        try {
          held(size);
        } catch (err) {
          return fail(err);
        }
      }
      chunks.push(chunk);
    });
    inflater.on("error", () => fail(new ApiError("bad_request", "request body is not valid compressed data")));
    inflater.on("end", () => {
      if (!failed) resolve(Buffer.concat(chunks, size));
    });
    (async () => {
      for (;;) {
        const { done, value } = await reader.read();
        if (failed) return;
        if (done) {
          inflater.end();
          return;
        }
        if (!inflater.write(value)) await new Promise((r) => inflater.once("drain", r));
      }
    })().catch(() => fail(new ApiError("bad_request", "request body could not be read")));
  });
}

/** Strict UTF-8 decoding: invalid byte sequences are a 400, not silently replaced. */
const utf8 = new TextDecoder("utf-8", { fatal: true });

export function decodeUtf8(bytes: Buffer): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw new ApiError("invalid_json", "request body is not valid UTF-8");
  }
}

/** Deepest nesting of arrays and objects a request body may have (real payloads stay under 20). */
export const JSON_MAX_DEPTH = 64;
/** Most values (array elements, object members, containers) a request body may hold. */
export const JSON_MAX_VALUES = 500_000;

/**
 * Why a JSON body is refused before JSON.parse, or null: nesting deeper than JSON_MAX_DEPTH or more
 * than JSON_MAX_VALUES values. JSON.parse allocates as it goes, so 8 MiB of "[" (4 M nested arrays)
 * or of "0," costs seconds of the event loop, stalling every other call; this scan allocates nothing
 * and stops at the first bound passed. It reads the raw bytes as well as decoded text (UTF-8 never
 * puts a byte below 0x80 inside a multi-byte character), so a body can be refused before it is even
 * decoded. Malformed JSON passes (JSON.parse reports it).
 */
export function jsonBoundsProblem(input: string | Buffer, maxDepth = JSON_MAX_DEPTH, maxValues = JSON_MAX_VALUES): string | null {
  let depth = 0;
  let values = 0;
  const text = typeof input === "string" ? input : null;
  const bytes = text === null ? (input as Buffer) : null;
  const n = input.length;
  for (let i = 0; i < n; i++) {
    const c = bytes ? (bytes[i] as number) : (text as string).charCodeAt(i);
    if (c === 0x22) {
      i = bytes ? stringEndInBytes(bytes, i) : stringEndInText(text as string, i);
      if (i < 0) return null;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > maxDepth) return `JSON nested deeper than ${maxDepth} levels`;
      if (++values > maxValues) return `JSON holds more than ${maxValues} values`;
    } else if (c === 0x5d || c === 0x7d) depth--;
    else if (c === 0x2c && ++values > maxValues) return `JSON holds more than ${maxValues} values`;
  }
  return null;
}

/** Bytes of a string read one by one before the rest is searched with indexOf (keys and short values end sooner). */
const SHORT_STRING = 24;

/**
 * The closing quote of the JSON string opened at `open` in bytes, or -1. Short strings (keys, roles,
 * model names: most of a request's strings) are read byte by byte; past SHORT_STRING bytes without a
 * quote or backslash the rest is searched with indexOf (content). A `Buffer.indexOf` per string was
 * 1.7 µs of an 83-byte chat body's 1.9 µs scan (2026-11-28).
 */
function stringEndInBytes(b: Buffer, open: number): number {
  const n = b.length;
  let j = open + 1;
  for (;;) {
    const stop = Math.min(j + SHORT_STRING, n);
    while (j < stop && b[j] !== 0x22 && b[j] !== 0x5c) j++;
    if (j >= n) return -1;
    if (j < stop) {
      if (b[j] === 0x22) return j;
      j += 2; // a backslash escapes the next byte
      continue;
    }
    // A long string: the next quote not escaped by an odd run of backslashes (none is before `stop`).
    j = b.indexOf(0x22, j);
    if (j < 0) return -1;
    let k = j - 1;
    while (b[k] === 0x5c) k--;
    if ((j - 1 - k) % 2 === 0) return j;
    j++;
  }
}

/** stringEndInBytes for decoded text: the next quote not escaped by an odd run of backslashes. */
function stringEndInText(t: string, open: number): number {
  let j = open;
  for (;;) {
    j = t.indexOf('"', j + 1);
    if (j < 0) return -1;
    let k = j - 1;
    while (t.charCodeAt(k) === 0x5c) k--;
    if ((j - 1 - k) % 2 === 0) return j;
  }
}

function refuseUnbounded(input: string | Buffer): void {
  const problem = jsonBoundsProblem(input);
  if (problem) throw new ApiError("invalid_json", `request body refused: ${problem}`);
}

export function parseJsonText(text: string, bounded = false): unknown {
  if (text.trim() === "") throw new ApiError("invalid_json", "request body is empty; expected JSON");
  if (!bounded) refuseUnbounded(text);
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new ApiError("invalid_json", `malformed JSON: ${(err as Error).message}`);
  }
}

/**
 * The usual way a route reads its JSON body: limit, decompress, strict UTF-8, parse (400 on failure),
 * and any string or key Postgres cannot store (NUL, unpaired surrogate) a 422 naming the field.
 * Batch ingest and the LiveKit webhook read with the parts above instead: ingest skips such a row
 * and counts it, the webhook refuses such an id and stores its signed payload made storable.
 */
export async function readJson(c: Context, limit: number): Promise<unknown> {
  const bytes = await readBodyBytes(c, limit);
  refuseUnbounded(bytes);
  const text = decodeUtf8(bytes);
  const value = parseJsonText(text, true);
  refuseUnstorableJson(text, value);
  return value;
}
