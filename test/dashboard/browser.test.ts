import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM_INSTALL, CHROMIUM_PATH, chromiumAvailable, IN_CI, launchBrowser } from "../support/browser.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { type SpawnedServer, spawnServer } from "../support/spawn.js";
import { AGENT, BROWSER_YAML, EXPECTED, heartbeat, LLM, OPS_KEY, PROBE_ROOM, READ_KEY, ROOM, SESSION, seedThroughApi } from "./seed.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const SHOTS = join(ROOT, "test-results");
const present = chromiumAvailable();

if (!present && !IN_CI) {
  console.warn(
    `\n\n*** SKIPPED: dashboard browser tests. No Chromium at ${CHROMIUM_PATH}. Install it with:\n***   ${CHROMIUM_INSTALL}\n*** (or set VOXGATE_CHROMIUM to a Chromium binary). In CI this is a failure.\n\n`,
  );
}

const usd = (v: number) => new Intl.NumberFormat("en-US", { style: "currency", currency: "USD", minimumFractionDigits: 2, maximumFractionDigits: 6 }).format(v);

/** Every console error, page error, failed request and 4xx/5xx answer a page produced. */
function watch(page: Page) {
  const problems: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error") problems.push(`console: ${m.text()} @ ${m.location().url}`);
  });
  page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
  // ERR_ABORTED is the test navigating away while a page still polls, not a failure of the app.
  page.on("requestfailed", (r) => {
    const why = r.failure()?.errorText ?? "";
    if (why !== "net::ERR_ABORTED") problems.push(`requestfailed: ${r.url()} ${why}`);
  });
  page.on("response", (r) => {
    if (r.status() >= 400) problems.push(`http ${r.status()}: ${r.request().method()} ${r.url()}`);
  });
  return problems;
}

describe.skipIf(!present && !IN_CI)("dashboard in headless Chromium (seeded through the API)", () => {
  let testDb: TestDatabase;
  let server: SpawnedServer;
  let browser: BrowserContext;
  let page: Page;
  let problems: string[];
  const home = mkdtempSync(join(tmpdir(), "vg-browser-home-"));

  const api = async <T>(path: string, key = OPS_KEY): Promise<{ status: number; body: T }> => {
    const res = await fetch(`${server.baseUrl}${path}`, { headers: { authorization: `Bearer ${key}` } });
    return { status: res.status, body: (await res.json()) as T };
  };
  const shot = (name: string, p: Page = page) => p.screenshot({ path: join(SHOTS, `dashboard-${name}.png`), fullPage: true });
  /** Navigates inside the app (the key stays in this tab's sessionStorage) and waits for the page title. */
  const open = async (path: string, title: string) => {
    await page.goto(`${server.baseUrl}${path}`);
    await page.getByRole("heading", { level: 1, name: title }).waitFor();
    await page.waitForLoadState("networkidle");
  };
  const noProblems = () => {
    const seen = problems.splice(0);
    expect(seen).toEqual([]);
  };

  beforeAll(async () => {
    if (!present) throw new Error(`Chromium is required in CI: ${CHROMIUM_INSTALL}`);
    mkdirSync(SHOTS, { recursive: true });
    // The daemon serves dashboard/dist: build what is in the tree now.
    execFileSync(process.execPath, [join(ROOT, "node_modules/vite/bin/vite.js"), "build", "dashboard", "--logLevel", "error"], {
      cwd: ROOT,
      stdio: "inherit",
      // vitest runs with NODE_ENV=test, which would give React's development build.
      env: { ...process.env, NODE_ENV: "production" },
    });
    testDb = await createTestDatabase();
    const config = join(home, "voxgate.yaml");
    writeFileSync(config, BROWSER_YAML);
    server = await spawnServer({
      HOME: home,
      VOXGATE_CONFIG: config,
      DATABASE_URL: testDb.url ?? undefined,
      VOXGATE_DB_PATH: testDb.url ? undefined : join(home, "db"),
    });
    await seedThroughApi(server.baseUrl);
    browser = await launchBrowser();
    page = await browser.newPage();
    problems = watch(page);
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    if (server) {
      server.child.kill("SIGTERM");
      await server.exited;
    }
    await testDb?.drop();
  });

  it("asks for a key when auth is on, refuses a wrong one, and signs in", async () => {
    await page.goto(`${server.baseUrl}/`);
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    await shot("sign-in");
    await page.getByLabel("API key").fill("not-a-valid-key-0123456789");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByText("That key was refused").waitFor();
    await page.getByLabel("API key").fill(OPS_KEY);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
    // The only problems so far are the 401s of /api/whoami without a (valid) key, which is the point.
    expect(problems.filter((p) => !p.includes("/api/whoami") || !/401/.test(p))).toEqual([]);
    problems.length = 0;
    // The key is in this tab's sessionStorage only: nothing in localStorage, no cookie.
    expect(await page.evaluate(() => ({ local: localStorage.length, cookie: document.cookie, session: sessionStorage.getItem("voxgate.key") }))).toEqual({
      local: 0,
      cookie: "",
      session: OPS_KEY,
    });
  }, 60_000);

  it("overview: today's cost, requests, error rate, p95 per modality, agents online, 24 h chart", async () => {
    await open("/", "Overview");
    await expect.poll(() => page.getByTestId("tile-cost-today").textContent()).toContain(usd(EXPECTED.costToday));
    expect(await page.getByTestId("tile-requests").textContent()).toContain(String(EXPECTED.requestsToday));
    expect(await page.getByTestId("tile-error-rate").textContent()).toContain(`${EXPECTED.errorRatePct}%`);
    expect(await page.getByTestId("tile-cost-all").textContent()).toContain(usd(EXPECTED.costAll));
    expect(await page.getByTestId("tile-providers").textContent()).toContain("3");
    expect(await page.getByTestId("tile-agents").textContent()).toContain("1");
    expect(await page.getByTestId("tile-p95-llm").textContent()).toContain(`${Math.round(EXPECTED.llmP95Ttfb)} ms`);
    expect(await page.locator(".chart canvas").count()).toBeGreaterThan(0);
    // Dates are local with UTC on hover.
    await shot("overview");
    noProblems();
  }, 60_000);

  it("costs: period switch and project filter in the URL, breakdown tables, chart", async () => {
    await open("/costs?period=today", "Costs");
    await expect.poll(() => page.getByTestId("costs-total").textContent()).toContain(usd(EXPECTED.costToday));
    const byModel = await page.getByTestId("costs-by-model").textContent();
    expect(byModel).toContain(LLM);
    expect(byModel).toContain(usd(EXPECTED.llmCostToday));
    await page.getByRole("button", { name: "all" }).click();
    await expect.poll(() => page.getByTestId("costs-total").textContent()).toContain(usd(EXPECTED.costAll));
    expect(page.url()).toContain("period=all");
    await shot("costs");
    noProblems();
  }, 60_000);

  it("latency: per-model percentiles and the modality filter", async () => {
    await open("/latency?modality=llm", "Latency");
    const table = page.getByTestId("latency-table");
    await table.waitFor();
    const text = await table.textContent();
    expect(text).toContain(LLM);
    expect(text).not.toContain("deepgram/nova-3");
    expect(text).toContain(`${Math.round(EXPECTED.llmP95Ttfb)} ms`);
    await shot("latency");
    noProblems();
  }, 60_000);

  it("logs: newest first, status filter, a row opens its detail with units, pricing and metadata", async () => {
    await open("/logs", "Request log");
    await page.getByRole("list", { name: "25 requests, newest first" }).waitFor();
    await page.getByLabel("Status").selectOption("error");
    await page.getByRole("list", { name: "1 requests, newest first" }).waitFor();
    expect(page.url()).toContain("status=error");
    await page.getByTestId("log-row").first().click();
    const detail = page.getByTestId("log-detail");
    await detail.getByText("upstream 503 from provider").waitFor();
    expect(await detail.textContent()).toContain("input tokens");
    await page.getByLabel("Status").selectOption("fallback");
    await page.getByRole("list", { name: "1 requests, newest first" }).waitFor();
    await page.getByTestId("log-row").first().click();
    await detail.getByText("cartesia/sonic-2").waitFor();
    await expect.poll(() => page.getByTestId("log-rate-rule").textContent()).toBe("cost_plus:1.25");
    await shot("logs");
    noProblems();
  }, 60_000);

  it("sessions: list, then a session with its turns, dead air, per-modality cost and room latency", async () => {
    await open("/sessions", "Sessions");
    await page.getByRole("link", { name: SESSION }).click();
    await page.getByRole("heading", { level: 1, name: `Session ${SESSION}` }).waitFor();
    await expect.poll(() => page.getByTestId("session-cost").textContent()).toContain(usd(EXPECTED.sessionCost));
    const turns = await page.getByTestId("turns-table").textContent();
    for (const ms of EXPECTED.turnResponseMs) expect(turns).toContain(`${ms.toLocaleString("en-US")} ms`);
    expect(await page.getByTestId("dead-air-table").textContent()).toContain("2,400 ms");
    await expect.poll(() => page.getByTestId("room-latency").textContent()).toContain("3");
    await page.getByTestId("replay").waitFor();
    await page.waitForLoadState("networkidle");
    await shot("session");
    noProblems();
  }, 60_000);

  it("calls: the room with its legs, SIP status and disconnect reasons", async () => {
    await open("/calls", "Calls");
    const table = await page.getByTestId("calls-table").textContent();
    expect(table).toContain(ROOM);
    expect(table).toContain("CLIENT_INITIATED");
    await page.getByRole("link", { name: ROOM }).click();
    await page.getByTestId("legs-table").waitFor();
    const legs = await page.getByTestId("legs-table").textContent();
    expect(legs).toContain("SIP");
    expect(legs).toContain("AGENT");
    expect(legs).toContain("+350 ms");
    await shot("calls");
    noProblems();
  }, 60_000);

  it("calls: older calls page by page through the before cursor, page size and cursor in the URL", async () => {
    await open("/calls?limit=1", "Calls");
    const table = page.getByTestId("calls-table");
    // Newest first: the probe call started after the demo call.
    expect(await table.textContent()).toContain(PROBE_ROOM);
    expect(await table.textContent()).not.toContain(ROOM);
    await page.getByRole("button", { name: "Older calls" }).click();
    await expect.poll(() => table.textContent()).toContain(ROOM);
    expect(await table.textContent()).not.toContain(PROBE_ROOM);
    const url = new URL(page.url());
    expect(url.searchParams.get("limit")).toBe("1");
    expect(Number(url.searchParams.get("before"))).toBeGreaterThan(0);
    await shot("calls-older");
    await page.getByRole("button", { name: "Older calls" }).click();
    await page.getByText("No older calls.").waitFor();
    await page.getByRole("button", { name: "Newest calls" }).click();
    await expect.poll(() => page.getByTestId("calls-table").textContent()).toContain(PROBE_ROOM);
    expect(new URL(page.url()).searchParams.has("before")).toBe(false);
    noProblems();
  }, 60_000);

  it("fleet: the roster from heartbeats", async () => {
    // The roster lists heartbeats of the last 45 s; earlier tests may have taken longer than that.
    await heartbeat(server.baseUrl);
    await open("/fleet", "Fleet");
    const table = await page.getByTestId("fleet-table").textContent();
    expect(table).toContain(AGENT);
    expect(table).toContain("online");
    expect(table).toContain("1.4.2");
    expect(await page.getByTestId("fleet-online").textContent()).toContain("1");
    await shot("fleet");
    noProblems();
  }, 60_000);

  it("fleet: the /api/agents index with cost, requests and probe traffic per agent, period in the URL", async () => {
    await open("/fleet", "Fleet");
    const row = page.getByTestId("fleet-index-row").filter({ hasText: AGENT });
    await expect.poll(() => row.textContent()).toContain(usd(EXPECTED.costToday));
    // Today: the agent's 20 requests and its call; the loadgen call is counted apart (probe).
    const today = await row.textContent();
    expect(today).toContain(String(EXPECTED.requestsToday));
    expect(await row.getByTestId("probe").textContent()).toBe("requests 0 · turns 0 · calls 1");
    await page.getByRole("button", { name: "all" }).click();
    await expect.poll(() => row.textContent()).toContain(usd(EXPECTED.costAll));
    expect(page.url()).toContain("period=all");
    await shot("fleet-index");
    noProblems();
  }, 60_000);

  it("billing: usage and margin, rate card with rule tokens, gaps with caveat_before; a rule edited with the quote preview", async () => {
    await open("/billing", "Billing");
    await expect.poll(() => page.getByTestId("usage-table").textContent()).toContain(usd(EXPECTED.costAll));
    expect(await page.getByTestId("rate-card").textContent()).toContain("cost_plus:1.5");
    expect(await page.getByTestId("caveat").textContent()).toContain("0.25.6");
    const editor = page.getByTestId("rule-editor");
    // The API's 400 matrix, inline before anything is sent.
    await editor.getByLabel("Pricing form").selectOption("fixed");
    await editor.getByLabel("Fixed USD").fill("0.5");
    await expect.poll(() => page.getByTestId("rule-problems").textContent()).toContain("fixed needs a unit");
    await editor.getByLabel("Pricing form").selectOption("markup");
    await editor.getByLabel("Modality").selectOption("llm");
    await editor.getByLabel("Model").fill(LLM);
    await editor.getByLabel("Markup ×").fill("1.75");
    // Quote before saving: the default markup prices it now.
    await expect.poll(() => page.getByTestId("quote-rule").textContent()).toBe("cost_plus:1.25");
    await shot("billing-editor");
    await editor.getByRole("button", { name: "Save rule" }).click();
    await expect.poll(() => page.getByTestId("quote-rule").textContent()).toBe("cost_plus:1.75");
    await expect.poll(() => page.getByTestId("rate-card").textContent()).toContain("cost_plus:1.75");
    const rules = await api<{ rules: { model: string | null; rule: string }[] }>("/v1/billing/rate-card/rules");
    expect(rules.body.rules).toContainEqual(expect.objectContaining({ model: LLM, rule: "cost_plus:1.75" }));
    await page.waitForLoadState("networkidle");
    await shot("billing");
    noProblems();
  }, 90_000);

  it("projects: yaml rows read-only, a project created through the form exists in the API, delete previews first", async () => {
    await open("/projects", "Projects");
    expect(await page.getByTestId("projects-table").textContent()).toContain("read-only (yaml)");
    const form = page.getByTestId("project-form");
    await form.getByLabel("Project id").fill("web-demo");
    await form.getByLabel("Name").fill("Web demo");
    await form.getByLabel("Daily budget (USD)").fill("12.5");
    await form.getByRole("button", { name: "Create project" }).click();
    await expect.poll(() => page.getByTestId("projects-table").textContent()).toContain("Web demo");
    const created = await api<{ name: string; daily_budget: number; source: string }>("/v1/projects/web-demo");
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ name: "Web demo", daily_budget: 12.5, source: "db" });
    await page.getByRole("row", { name: /Web demo/ }).getByRole("button", { name: "Delete…" }).click();
    await expect.poll(() => page.getByTestId("would-delete").textContent()).toContain("web-demo");
    expect((await api("/v1/projects/web-demo")).status).toBe(200);
    await shot("projects");
    await page.getByRole("button", { name: "Keep" }).click();
    noProblems();
  }, 60_000);

  it("providers and models: sources, masked keys only", async () => {
    await open("/providers", "Providers");
    const providers = await page.getByTestId("providers-table").textContent();
    expect(providers).toContain("openai");
    expect(providers).toContain("1234");
    expect(providers).not.toContain("sk-test-openai-00000000000000001234");
    await shot("providers");
    await open("/models", "Models");
    const models = await page.getByTestId("models-table").textContent();
    expect(models).toContain(LLM);
    expect(models).toContain("yaml");
    await shot("models");
    noProblems();
  }, 60_000);

  it("providers: a db provider edited through the form; a host move without a new key is refused in place", async () => {
    const created = await fetch(`${server.baseUrl}/v1/providers`, {
      method: "POST",
      headers: { authorization: `Bearer ${OPS_KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ provider_id: "groq-edit", provider_type: "groq", api_key: "gsk-test-edit-0000000000001111" }),
    });
    expect(created.status).toBe(200);
    await open("/providers", "Providers");
    // yaml rows are read-only: no edit there.
    expect(await page.getByRole("row", { name: /deepgram/ }).getByRole("button", { name: "Edit" }).count()).toBe(0);
    await page.getByRole("row", { name: /groq-edit/ }).getByRole("button", { name: "Edit" }).click();
    const form = page.getByTestId("provider-edit-form");
    await form.getByLabel("Base URL").fill("https://llm.example.com/v1");
    await form.getByRole("button", { name: "Save changes" }).click();
    // The stored key would go to a new host: the API refuses and its message shows in the form.
    await expect.poll(() => form.getByRole("alert").textContent()).toContain("unpermitted_base_url");
    expect(await form.getByRole("alert").textContent()).toContain("serve.provider_base_url_hosts");
    await shot("providers-edit-refused");
    // The only problems are that refusal (its 400 answer and the browser's console line for it).
    const refused = problems.splice(0);
    expect(refused.some((p) => /http 400: PATCH .*\/v1\/providers\/groq-edit/.test(p))).toBe(true);
    expect(refused.filter((p) => !p.includes("/v1/providers/groq-edit") || !p.includes("400"))).toEqual([]);
    await form.getByLabel("New API key").fill("gsk-test-edit-0000000000009999");
    await form.getByRole("button", { name: "Save changes" }).click();
    await form.waitFor({ state: "detached" });
    await expect.poll(() => page.getByTestId("providers-table").textContent()).toContain("https://llm.example.com/v1");
    const table = await page.getByTestId("providers-table").textContent();
    expect(table).toContain("…9999");
    expect(table).not.toContain("gsk-test-edit");
    const list = await api<{ providers: { provider_id: string; base_url: string | null; api_key_masked: string | null; provider_type: string }[] }>("/v1/providers");
    expect(list.body.providers.find((p) => p.provider_id === "groq-edit")).toMatchObject({ provider_type: "groq", base_url: "https://llm.example.com/v1", api_key_masked: "…9999" });
    await shot("providers-edited");
    noProblems();
  }, 60_000);

  it("API keys: mint shows the plaintext once, revoke after confirmation", async () => {
    await open("/keys", "API keys");
    await page.getByLabel("Name").fill("browser-minted");
    await page.getByLabel("Tenant (binds the key to one tenant)").fill("acme");
    await page.getByRole("button", { name: "Mint key" }).click();
    const plaintext = (await page.getByTestId("minted-plaintext").textContent()) ?? "";
    expect(plaintext).toMatch(/^vk_/);
    await expect.poll(() => page.getByTestId("keys-table").textContent()).toContain("browser-minted");
    const whoami = await api<{ tenant_id: string }>("/api/whoami", plaintext);
    expect(whoami.body.tenant_id).toBe("acme");
    await shot("keys");
    page.once("dialog", (d) => void d.accept());
    await page.getByRole("row", { name: /browser-minted/ }).getByRole("button", { name: "Revoke" }).click();
    await expect.poll(() => page.getByRole("row", { name: /browser-minted/ }).textContent()).toContain("revoked");
    expect((await fetch(`${server.baseUrl}/api/whoami`, { headers: { authorization: `Bearer ${plaintext}` } })).status).toBe(401);
    noProblems();
  }, 60_000);

  it("audit log: the project created above, with its actor, filterable", async () => {
    await open("/audit?entity_type=project", "Audit log");
    const table = await page.getByTestId("audit-table").textContent();
    expect(table).toContain("web-demo");
    expect(table).toContain("static:ops");
    await shot("audit");
    noProblems();
  }, 60_000);

  it("a read key sees the data and no write action; admin pages say what it cannot do", async () => {
    const reader = await browser.newPage();
    const readerProblems = watch(reader);
    await reader.goto(`${server.baseUrl}/projects`);
    await reader.getByLabel("API key").fill(READ_KEY);
    await reader.getByRole("button", { name: "Sign in" }).click();
    await reader.getByRole("heading", { level: 1, name: "Projects" }).waitFor();
    await reader.getByTestId("projects-table").waitFor();
    expect(await reader.getByTestId("project-form").count()).toBe(0);
    expect(await reader.getByRole("button", { name: "Delete…" }).count()).toBe(0);
    await reader.goto(`${server.baseUrl}/billing`);
    await reader.getByTestId("rate-card").waitFor();
    expect(await reader.getByTestId("rule-editor").count()).toBe(0);
    await reader.goto(`${server.baseUrl}/keys`);
    await reader.getByText("This key cannot manage API keys").waitFor();
    await reader.waitForLoadState("networkidle");
    await shot("read-key", reader);
    expect(readerProblems.filter((p) => !p.includes("/api/whoami") || !/401/.test(p))).toEqual([]);
    await reader.close();
  }, 60_000);

  it("dark theme follows the system", async () => {
    const dark = await launchBrowser({ colorScheme: "dark" });
    try {
      const p = await dark.newPage();
      await p.goto(`${server.baseUrl}/`);
      await p.getByLabel("API key").fill(OPS_KEY);
      await p.getByRole("button", { name: "Sign in" }).click();
      await expect.poll(() => p.getByTestId("tile-cost-today").textContent()).toContain(usd(EXPECTED.costToday));
      await p.waitForLoadState("networkidle");
      const bg = await p.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
      expect(bg).toBe("rgb(15, 17, 21)");
      await shot("overview-dark", p);
    } finally {
      await dark.close();
    }
  }, 60_000);
});
