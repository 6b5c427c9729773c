import { MutationCache, QueryCache, QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { type ComponentType, lazy, StrictMode, Suspense } from "react";
import { createRoot } from "react-dom/client";
import { BrowserRouter, NavLink, Route, Routes } from "react-router";
import { ApiError, currentKey } from "./api/client";
import { AuthGate, SIGNED_OUT_EVENT, useAuth } from "./auth";
import { OverviewPage, prefetchOverview } from "./pages/Overview";
import { Loading } from "./ui/components";
import "./styles.css";

// The overview is in the first bundle (it is what opens first); every other page loads on demand.
const page = <K extends string>(load: () => Promise<Record<K, ComponentType>>, name: K) =>
  lazy(async () => ({ default: (await load())[name] }));

/** Every page: its path, its component and its entry in the sidebar (a detail page has none), in the sidebar's order. */
const PAGES: { path: string; Page: ComponentType; nav?: string }[] = [
  { path: "/", Page: OverviewPage, nav: "Overview" },
  { path: "/costs", Page: page(() => import("./pages/Costs"), "CostsPage"), nav: "Costs" },
  { path: "/latency", Page: page(() => import("./pages/Latency"), "LatencyPage"), nav: "Latency" },
  { path: "/logs", Page: page(() => import("./pages/Logs"), "LogsPage"), nav: "Logs" },
  { path: "/sessions", Page: page(() => import("./pages/Sessions"), "SessionsPage"), nav: "Sessions" },
  { path: "/sessions/:id", Page: page(() => import("./pages/Sessions"), "SessionDetailPage") },
  { path: "/calls", Page: page(() => import("./pages/Calls"), "CallsPage"), nav: "Calls" },
  { path: "/calls/:ref", Page: page(() => import("./pages/Calls"), "CallDetailPage") },
  { path: "/fleet", Page: page(() => import("./pages/Fleet"), "FleetPage"), nav: "Fleet" },
  { path: "/billing", Page: page(() => import("./pages/Billing"), "BillingPage"), nav: "Billing" },
  { path: "/projects", Page: page(() => import("./pages/Projects"), "ProjectsPage"), nav: "Projects" },
  { path: "/providers", Page: page(() => import("./pages/Providers"), "ProvidersPage"), nav: "Providers" },
  { path: "/models", Page: page(() => import("./pages/Models"), "ModelsPage"), nav: "Models" },
  { path: "/keys", Page: page(() => import("./pages/Keys"), "KeysPage"), nav: "API keys" },
  { path: "/audit", Page: page(() => import("./pages/Audit"), "AuditPage"), nav: "Audit log" },
];

// A 401 anywhere means the key in this tab no longer works (revoked, or the server's keys changed):
// drop it and show the sign-in screen. whoami's own 401 is the sign-in screen already.
const onError = (error: unknown) => {
  if (error instanceof ApiError && error.status === 401 && currentKey() !== null) window.dispatchEvent(new Event(SIGNED_OUT_EVENT));
};

const queryClient = new QueryClient({
  queryCache: new QueryCache({ onError: (error, query) => query.queryKey[0] !== "whoami" && onError(error) }),
  mutationCache: new MutationCache({ onError }),
  defaultOptions: {
    queries: {
      staleTime: 15_000,
      refetchOnWindowFocus: true,
      // Client errors (401/403/404/422) will not change on retry; network and 5xx get two more tries.
      retry: (n, error) => !(error instanceof ApiError && error.status < 500) && n < 2,
    },
  },
});

function Shell() {
  const { whoami, signOut } = useAuth();
  return (
    <div className="shell">
      <a className="skip" href="#main">
        Skip to content
      </a>
      <nav className="sidebar" aria-label="Sections">
        <div className="brand">
          <span className="logo" aria-hidden="true" />
          Voxgate
        </div>
        <ul>
          {PAGES.map(({ path, nav }) =>
            nav === undefined ? null : (
              <li key={path}>
                <NavLink to={path} end={path === "/"}>
                  {nav}
                </NavLink>
              </li>
            ),
          )}
        </ul>
        <div className="whoami" data-testid="whoami">
          <div>
            {whoami.auth_enabled ? <span title={whoami.actor}>{whoami.kind === "virtual" ? "vk_ key" : "static key"}</span> : <span>auth off (operator)</span>}
          </div>
          <div className="muted">
            scopes {whoami.scopes.join(", ") || "none"} · {whoami.tenant_id === null ? "all tenants" : `tenant ${whoami.tenant_id}`}
          </div>
          {whoami.auth_enabled ? (
            <button type="button" className="link" onClick={signOut}>
              Sign out
            </button>
          ) : null}
        </div>
      </nav>
      <main id="main" tabIndex={-1}>
        <Suspense fallback={<Loading />}>
          <Routes>
          {PAGES.map(({ path, Page }) => (
            <Route key={path} path={path} element={<Page />} />
          ))}
          <Route path="*" element={<p className="state">No such page.</p>} />
          </Routes>
        </Suspense>
      </main>
    </div>
  );
}

const root = document.getElementById("app");
// Signed in (a key in this tab) and opening on the overview: fetch its figures beside /api/whoami.
if (window.location.pathname === "/" && currentKey() !== null) prefetchOverview(queryClient);
if (root) {
  createRoot(root).render(
    <StrictMode>
      <QueryClientProvider client={queryClient}>
        <BrowserRouter>
          <AuthGate>
            <Shell />
          </AuthGate>
        </BrowserRouter>
      </QueryClientProvider>
    </StrictMode>,
  );
}
