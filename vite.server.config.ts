import { defineConfig } from "vite";

/**
 * The server bundle (`npm run build:server`, after tsc): src/cli/main.ts and the dependencies it
 * loads, in one file over tsc's dist/cli/main.js, so `npm start`, the bin and the Docker image run
 * it. Resolving and reading ~1,000 node_modules files at each start cost ~a quarter of the CPU to a
 * healthy /health (docs/perf/startup.md). Lazy `import()`s stay lazy: they become chunks beside it.
 * The library exports (./client, ./livekit) stay tsc's modules.
 */

// Left to node_modules: wasm and data files found from their own path (pglite), packages loaded
// on first use only or by path in a worker (the rest), where bundling saves nothing at start.
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
