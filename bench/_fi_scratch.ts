import { openDatabase } from "../src/db/client.js";
import { fleetIndex } from "../src/fleet/index-queries.js";
const url = process.argv[2] ?? "";
const period = (process.argv[3] ?? "month") as "month";
const database = await openDatabase({ url });
await (await import("../src/db/migrate.js")).runMigrations(database);
const db = database.db;
for (let i = 0; i < 3; i++) await fleetIndex(db, { tenantId: null, period, limit: 100, offset: 0, sort: "cost" });
const t: number[] = [];
const c0 = process.cpuUsage();
for (let i = 0; i < 10; i++) {
  const s = performance.now();
  await fleetIndex(db, { tenantId: null, period, limit: 100, offset: 0, sort: "cost" });
  t.push(performance.now() - s);
}
const c = process.cpuUsage(c0);
console.log(period, "ms each:", t.map((x) => x.toFixed(1)).join(" "), "node cpu per call ms:", ((c.user + c.system) / 1000 / 10).toFixed(1));
await database.close();
