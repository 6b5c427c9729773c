import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

export default defineConfig({
  root: import.meta.dirname,
  base: "/",
  plugins: [react()],
  // No inline scripts or styles anywhere in the build: the server's CSP (src/http/security-headers.ts)
  // allows only same-origin files. modulePreload's polyfill is bundled, never inlined.
  build: { outDir: "dist", emptyOutDir: true, assetsInlineLimit: 0, chunkSizeWarningLimit: 800 },
});
