import { numeric, timestamp } from "drizzle-orm/pg-core";

// Money is numeric(20,10): ten decimal places survive a million-row SUM exactly in SQL.
// Drizzle hands numeric back as a string; convert with Number() only at the JSON edge.
export const money = () => numeric({ precision: 20, scale: 10 });

// Every timestamp is timestamptz in UTC, read back as a JS Date.
export const tstz = () => timestamp({ withTimezone: true, mode: "date" });
