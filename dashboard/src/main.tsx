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
const AuditPage = page(() => import("./pages/Audit"), "AuditPage");
const BillingPage = page(() => import("./pages/Billing"), "BillingPage");
const CallsPage = page(() => import("./pages/Calls"), "CallsPage");
const CallDetailPage = page(() => import("./pages/Calls"), "CallDetailPage");
const CostsPage = page(() => import("./pages/Costs"), "CostsPage");
const FleetPage = page(() => import("./pages/Fleet"), "FleetPage");
const KeysPage = page(() => import("./pages/Keys"), "KeysPage");
const LatencyPage = page(() => import("./pages/Latency"), "LatencyPage");
const LogsPage = page(() => import("./pages/Logs"), "LogsPage");
const ModelsPage = page(() => import("./pages/Models"), "ModelsPage");
const ProjectsPage = page(() => import("./pages/Projects"), "ProjectsPage");
const ProvidersPage = page(() => import("./pages/Providers"), "ProvidersPage");
const SessionsPage = page(() => import("./pages/Sessions"), "SessionsPage");
const SessionDetailPage = page(() => import("./pages/Sessions"), "SessionDetailPage");

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

const NAV = [
  { to: "/", label: "Overview", end: true },
  { to: "/costs", label: "Costs" },
  { to: "/latency", label: "Latency" },
  { to: "/logs", label: "Logs" },
  { to: "/sessions", label: "Sessions" },
  { to: "/calls", label: "Calls" },
  { to: "/fleet", label: "Fleet" },
  { to: "/billing", label: "Billing" },
  { to: "/projects", label: "Projects" },
  { to: "/providers", label: "Providers" },
  { to: "/models", label: "Models" },
  { to: "/keys", label: "API keys" },
  { to: "/audit", label: "Audit log" },
];

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
          {NAV.map((n) => (
            <li key={n.to}>
              <NavLink to={n.to} end={n.end}>
                {n.label}
              </NavLink>
            </li>
          ))}
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
          <Route path="/" element={<OverviewPage />} />
          <Route path="/costs" element={<CostsPage />} />
          <Route path="/latency" element={<LatencyPage />} />
          <Route path="/logs" element={<LogsPage />} />
          <Route path="/sessions" element={<SessionsPage />} />
          <Route path="/sessions/:id" element={<SessionDetailPage />} />
          <Route path="/calls" element={<CallsPage />} />
          <Route path="/calls/:ref" element={<CallDetailPage />} />
          <Route path="/fleet" element={<FleetPage />} />
          <Route path="/billing" element={<BillingPage />} />
          <Route path="/projects" element={<ProjectsPage />} />
          <Route path="/providers" element={<ProvidersPage />} />
          <Route path="/models" element={<ModelsPage />} />
          <Route path="/keys" element={<KeysPage />} />
          <Route path="/audit" element={<AuditPage />} />
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
