// Placeholder web app until the dashboard issue: shows health and links the API.
const root = document.querySelector<HTMLDivElement>("#app");
if (root) {
  root.innerHTML = "<h1>Voxgate</h1><p>Loading status…</p>";
  fetch("/health")
    .then((r) => r.json())
    .then((h: { status: string; version: string; uptime_seconds: number }) => {
      root.innerHTML = `<h1>Voxgate</h1><p>Status: ${h.status} · version ${h.version} · up ${Math.round(h.uptime_seconds)} s</p>`;
    })
    .catch(() => {
      root.innerHTML = "<h1>Voxgate</h1><p>Could not reach /health.</p>";
    });
}
