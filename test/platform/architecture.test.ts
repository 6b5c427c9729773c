import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Hono } from "hono";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { CLI_EXIT_CODES, reportCliError } from "../../src/cli/errors.js";
import { DomainError, ERROR_CODE_LIST } from "../../src/errors.js";
import { ApiError, ERROR_CODES, handleError } from "../../src/http/errors.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const isRouteFile = (path: string) => /(^|[/-])routes\.ts$/.test(path);
const SRC = join(ROOT, "src");

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return e.name.endsWith(".ts") && !e.name.endsWith(".d.ts") ? [path] : [];
  });
}

/** `./x.js` → the .ts file it names (or its directory's index.ts); null for packages and unresolved names. */
function resolveImport(from: string, specifier: string): string | null {
  if (!specifier.startsWith(".")) return null;
  const base = resolve(dirname(from), specifier);
  for (const candidate of [base.replace(/\.js$/, ".ts"), `${base}.ts`, join(base, "index.ts")]) {
    if (existsSync(candidate) && candidate.endsWith(".ts")) return candidate;
  }
  return null;
}

/**
 * The modules a file names in its import and export declarations. With `types: false`, only those it
 * loads when evaluated: `import type` and `export type … from` are erased and so are not edges;
 * `import { type A }` is kept by verbatimModuleSyntax (as `import {} from`) and is one. Dynamic
 * import() is lazy and is never an edge.
 */
function imports(file: string, opts: { types: boolean }): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const out: string[] = [];
  for (const statement of source.statements) {
    let specifier: ts.Expression | undefined;
    if (ts.isImportDeclaration(statement) && (opts.types || !statement.importClause?.isTypeOnly)) specifier = statement.moduleSpecifier;
    if (ts.isExportDeclaration(statement) && (opts.types || !statement.isTypeOnly)) specifier = statement.moduleSpecifier;
    if (specifier && ts.isStringLiteral(specifier)) {
      const target = resolveImport(file, specifier.text);
      if (target) out.push(target);
    }
  }
  return out;
}

const runtimeImports = (file: string) => imports(file, { types: false });

/** One layer of docs/architecture.md's table: its number, name and the src/ paths it holds. */
interface Layer {
  rank: number;
  name: string;
  /** `dir/` (a folder), `file.ts` (one module) or `*routes.ts` (every route module). */
  entries: string[];
}

/** The layer table of docs/architecture.md ("## Layers"): rows `| n | name | `path` `path` … | … |`. */
function layersFromDoc(markdown: string): Layer[] {
  const section = markdown.split(/^## /m).find((s) => s.startsWith("Layers"));
  if (!section) throw new Error("docs/architecture.md has no ## Layers section");
  return section
    .split("\n")
    .map((line) => /^\|\s*(\d+)\s*\|\s*([^|]+?)\s*\|([^|]*)\|/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ rank: Number(m[1]), name: m[2] ?? "", entries: [...(m[3] ?? "").matchAll(/`([^`]+)`/g)].map((e) => e[1] ?? "") }));
}

/**
 * A module's layer (path relative to src/): a route module is in the `*routes.ts` layer; otherwise
 * a file named exactly wins over its folder, and a deeper folder over a shallower one.
 */
function layerOf(layers: readonly Layer[], path: string): Layer | null {
  let best: Layer | null = null;
  let bestWeight = -1;
  for (const layer of layers) {
    for (const entry of layer.entries) {
      let weight = -1;
      if (entry === "*routes.ts") weight = isRouteFile(path) ? 10_000 : -1;
      else if (entry.endsWith("/")) weight = path.startsWith(entry) ? entry.length : -1;
      else if (path === entry) weight = 1_000 + entry.length;
      if (weight > bestWeight) {
        best = layer;
        bestWeight = weight;
      }
    }
  }
  return best;
}

/** Every import (type-only ones included) from a module to a module of a higher layer. */
function upwardImports(layers: readonly Layer[], graph: ReadonlyMap<string, readonly string[]>): string[] {
  const out: string[] = [];
  for (const [from, targets] of graph) {
    const a = layerOf(layers, from);
    for (const to of targets) {
      const b = layerOf(layers, to);
      if (a && b && b.rank > a.rank) out.push(`${from} (${a.rank} ${a.name}) -> ${to} (${b.rank} ${b.name})`);
    }
  }
  return out;
}

/** Every strongly connected component of more than one module (or a module importing itself): Tarjan. */
function importCycles(graph: Map<string, string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (v: string) => {
    index.set(v, counter);
    low.set(v, counter);
    counter++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v) ?? 0, index.get(w) ?? 0));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string | undefined;
      do {
        w = stack.pop();
        if (w === undefined) break;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) cycles.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return cycles;
}

describe("architecture", () => {
  const files = sourceFiles(SRC);
  const rel = (path: string) => relative(ROOT, path).split("\\").join("/");

  it("src/ has no runtime import cycle", () => {
    const graph = new Map(files.map((f) => [f, runtimeImports(f)]));
    expect(graph.size).toBeGreaterThan(100);
    expect(importCycles(graph).map((c) => c.map(rel))).toEqual([]);
  });

  it("src/ has no import cycle, type-only imports included", () => {
    const graph = new Map(files.map((f) => [f, imports(f, { types: true })]));
    expect(importCycles(graph).map((c) => c.map(rel))).toEqual([]);
  });

  it("no module imports from a higher layer of docs/architecture.md, and every module has a layer", () => {
    const layers = layersFromDoc(readFileSync(join(ROOT, "docs/architecture.md"), "utf8"));
    expect(layers.length).toBeGreaterThan(5);
    expect(layers.map((l) => l.rank)).toEqual(layers.map((_, i) => i + 1));
    const srcRel = (path: string) => relative(SRC, path).split("\\").join("/");
    expect(files.map(srcRel).filter((f) => layerOf(layers, f) === null)).toEqual([]);
    const graph = new Map(files.map((f) => [srcRel(f), imports(f, { types: true }).map(srcRel)]));
    expect(upwardImports(layers, graph)).toEqual([]);
  });

  it("the layer check reads the table and sees an upward import, a type-only one included", () => {
    const doc = ["## Layers", "", "| # | name | modules |", "|---|---|---|", "| 1 | base | `db/` `a/b.ts` |", "| 2 | areas | `a/` |", "| 3 | routes | `*routes.ts` |", "", "## Next", "| 9 | not a layer | `x/` |"].join("\n");
    const layers = layersFromDoc(doc);
    expect(layers.map((l) => [l.rank, l.name, l.entries])).toEqual([
      [1, "base", ["db/", "a/b.ts"]],
      [2, "areas", ["a/"]],
      [3, "routes", ["*routes.ts"]],
    ]);
    expect([layerOf(layers, "a/b.ts")?.rank, layerOf(layers, "a/c.ts")?.rank, layerOf(layers, "a/routes.ts")?.rank, layerOf(layers, "zz.ts")]).toEqual([1, 2, 3, null]);
    const graph = new Map([
      ["a/c.ts", ["db/x.ts", "a/b.ts"]],
      ["a/b.ts", ["a/c.ts"]],
      ["a/routes.ts", ["a/c.ts"]],
    ]);
    expect(upwardImports(layers, graph)).toEqual(["a/b.ts (1 base) -> a/c.ts (2 areas)"]);
    // The composition root's types are a layer above every subsystem: naming one from below is refused.
    const real = layersFromDoc(readFileSync(join(ROOT, "docs/architecture.md"), "utf8"));
    expect(upwardImports(real, new Map([["auth/gate.ts", ["compose.ts"]]]))).toHaveLength(1);
  });

  it("the cycle finder sees a cycle through a value import and none through import type", () => {
    const graph = new Map([
      ["a", ["b"]],
      ["b", ["c"]],
      ["c", ["a"]],
      ["d", ["d"]],
      ["e", []],
    ]);
    expect(importCycles(graph)).toEqual([["a", "b", "c"], ["d"]]);
    // gateway.ts names Worker by `import type` only: an edge of the type graph, not of the runtime one.
    const gateway = join(SRC, "gateway/gateway.ts");
    expect(runtimeImports(gateway).map(rel)).not.toContain("src/worker.ts");
    expect(imports(gateway, { types: true }).map(rel)).toContain("src/worker.ts");
  });

  it("only src/http and route files know ApiError; the domain throws DomainError", () => {
    const offenders = files.map(rel).filter((path) => !path.startsWith("src/http/") && !isRouteFile(path) && /\bApiError\b/.test(readFileSync(join(ROOT, path), "utf8")));
    expect(offenders).toEqual([]);
    expect(isRouteFile("src/manage/provider-routes.ts") && isRouteFile("src/audit/routes.ts") && !isRouteFile("src/manage/providers.ts")).toBe(true);
  });

  it("every code of the closed list has an HTTP status and a CLI exit code, and nothing else does", () => {
    expect(Object.keys(ERROR_CODES).sort()).toEqual([...ERROR_CODE_LIST].sort());
    expect(Object.keys(CLI_EXIT_CODES).sort()).toEqual([...ERROR_CODE_LIST].sort());
  });

  it("the HTTP handler answers a DomainError exactly as the ApiError of the same code", async () => {
    const app = new Hono();
    app.onError(handleError);
    const details = [{ path: "model_id", message: "taken" }];
    app.get("/domain", () => {
      throw new DomainError("conflict", "model m already exists", details);
    });
    app.get("/api", () => {
      throw new ApiError("conflict", "model m already exists", details);
    });
    app.get("/unavailable", () => {
      throw new DomainError("unavailable", "the provider-key secret is unavailable");
    });
    const [domain, api, unavailable] = await Promise.all(["/domain", "/api", "/unavailable"].map((p) => app.request(p)));
    expect(domain?.status).toBe(409);
    expect(api?.status).toBe(409);
    const body = await domain?.json();
    expect(body).toEqual({ error: { code: "conflict", message: "model m already exists", details } });
    expect(await api?.json()).toEqual(body);
    expect(unavailable?.status).toBe(503);
    expect(await unavailable?.json()).toEqual({ error: { code: "unavailable", message: "the provider-key secret is unavailable" } });
  });

  it("the CLI prints a DomainError's message and details and exits 2 for a refused input, 1 for a failure", () => {
    let text = "";
    const write = (t: string) => {
      text += t;
    };
    expect(reportCliError(new DomainError("invalid_rate_rule", "invalid rate rule: markup: too big", [{ path: "markup", message: "too big" }]), write)).toBe(2);
    expect(text).toBe('voxgate: invalid rate rule: markup: too big\n[{"path":"markup","message":"too big"}]\n');
    text = "";
    expect(reportCliError(new DomainError("unavailable", "the provider-key secret is unavailable"), write)).toBe(1);
    expect(text).toBe("voxgate: the provider-key secret is unavailable\n");
    text = "";
    expect(reportCliError(new Error("disk full"), write)).toBe(1);
    expect(text).toBe("voxgate: disk full\n");
  });
});
