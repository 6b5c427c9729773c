import { afterAll } from "vitest";

/**
 * The files of a worker share one process (vitest.config.ts, `isolate: false`): a file that changes
 * process.env and does not put it back changes the next file's world. Run before every file, this
 * fails the file that left a variable set, changed or removed, naming it.
 */
const before = { ...process.env };

/** Set by a native library as it loads, once per process, not by a test: libvips (sharp, under @livekit/agents). */
const SET_BY_NATIVE_LOAD = new Set(["VIPSHOME"]);

afterAll(() => {
  const names = new Set([...Object.keys(before), ...Object.keys(process.env)]);
  const changed = [...names].filter((name) => before[name] !== process.env[name] && !SET_BY_NATIVE_LOAD.has(name));
  if (changed.length > 0) {
    throw new Error(`this file left process.env changed (${changed.join(", ")}): files share a worker, restore it in an after hook`);
  }
});
