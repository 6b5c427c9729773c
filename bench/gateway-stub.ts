/**
 * The loopback stub vendor of bench:gateway, in its own process (so its CPU is not the load
 * generator's): OpenAI chat completions, JSON and SSE. Prints its port on stdout.
 */
import { openaiChatStub } from "../test/support/stubs/openai-chat.js";

const stub = openaiChatStub();
stub.keepHits = false; // nobody reads them here; kept, they grow the stub's heap and GC over the run
await stub.start();
process.stdout.write(`${stub.port}\n`);
process.on("SIGTERM", () => void stub.close().then(() => process.exit(0)));
