import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { webAppRoutes } from "../../src/dashboard/routes.js";

describe("web app serving", () => {
  const dist = mkdtempSync(join(tmpdir(), "vg-dist-"));
  mkdirSync(join(dist, "assets"));
  writeFileSync(join(dist, "index.html"), "<!doctype html><title>Voxgate</title>");
  writeFileSync(join(dist, "assets", "index-abc.js"), "console.log(1)");
  const app = webAppRoutes(dist);

  it("serves assets, falls back to the index page for client routes, and 404s a missing asset", async () => {
    const js = await app.request("/assets/index-abc.js");
    expect(js.status).toBe(200);
    expect(js.headers.get("content-type")).toContain("javascript");
    const route = await app.request("/sessions/abc?tenant=x");
    expect(route.status).toBe(200);
    expect(await route.text()).toContain("<title>Voxgate</title>");
    // A stale tab asking for an old bundle gets a 404, never HTML it would try to run as a script.
    const stale = await app.request("/assets/index-old.js");
    expect(stale.status).toBe(404);
    expect(stale.headers.get("content-type")).not.toContain("html");
  });

  it("without a build, / says how to make one", async () => {
    const res = await webAppRoutes(mkdtempSync(join(tmpdir(), "vg-empty-"))).request("/");
    expect(res.status).toBe(503);
    expect(await res.text()).toContain("npm run build:dashboard");
  });

  it("a missing build warns nothing, and a build made after start is served on reload", async () => {
    const later = join(mkdtempSync(join(tmpdir(), "vg-later-")), "dist");
    const errors: unknown[] = [];
    const original = console.error;
    console.error = (...args: unknown[]) => errors.push(args);
    try {
      const routes = webAppRoutes(later);
      expect((await routes.request("/assets/index-abc.js")).status).toBe(404);
      mkdirSync(join(later, "assets"), { recursive: true });
      writeFileSync(join(later, "assets", "index-abc.js"), "console.log(1)");
      expect((await routes.request("/assets/index-abc.js")).status).toBe(200);
    } finally {
      console.error = original;
    }
    expect(errors).toEqual([]);
  });
});
