import { defineConfig } from "drizzle-kit";

// One schema and one migrations folder serve both drivers (pg and PGlite).
export default defineConfig({
  dialect: "postgresql",
  schema: "./src/db/schema/index.ts",
  out: "./migrations",
  casing: "snake_case",
});
