/**
 * The loopback stub vendor of bench:gateway, in its own process (so its CPU is not the load
 * generator's): OpenAI chat completions and Responses, JSON and SSE. Prints its port on stdout.
 */
import { openaiResponsesStub } from "../test/support/stubs/openai-responses.js";

const stub = openaiResponsesStub();
stub.keepHits = false; // nobody reads them here; kept, they grow the stub's heap and GC over the run
await stub.start();
process.stdout.write(`${stub.port}\n`);
process.on("SIGTERM", () => void stub.close().then(() => process.exit(0)));
