import { defineConfig } from "vite";

/**
 * The server bundle (`npm run build:server`, after tsc): src/cli/main.ts and the dependencies it
 * loads, in one file over tsc's dist/cli/main.js, so `npm start`, the bin and the Docker image run
 * it: a start on Postgres reads 62 files instead of ~590 modules (~380 in node_modules), ~0.56 × the
 * CPU to a healthy /health (docs/perf/startup.md). Lazy `import()`s stay lazy: they become chunks
 * in dist/cli/chunks/. The library exports (./client, ./livekit) stay tsc's modules.
 */

// Left in node_modules: pglite finds its wasm and data files from its own path; bcryptjs is loaded by
// path in a worker; the others are loaded on first use only, so bundling them saves nothing at start.
const EXTERNAL = [/^@electric-sql\/pglite/, /^@scalar\//, /^livekit-server-sdk/, /^@opentelemetry\//, /^bcryptjs/, /^protobufjs/];

export default defineConfig({
  root: import.meta.dirname,
  logLevel: "warn",
  ssr: { noExternal: true, target: "node" },
  build: {
    ssr: "src/cli/main.ts",
    outDir: "dist/cli",
    emptyOutDir: false,
    target: "node20",
    minify: false,
    copyPublicDir: false,
    rolldownOptions: {
      external: EXTERNAL,
      output: { entryFileNames: "main.js", chunkFileNames: "chunks/[name]-[hash].js" },
    },
  },
});
