/**
 * The loopback Deepgram stub of bench:gateway-ws, in its own process (its CPU is not the load
 * generator's): WS /v1/listen answers every audio frame with a `Results`. Prints its port on stdout.
 */
import { DeepgramStub } from "../test/support/stubs/deepgram.js";

const stub = await new DeepgramStub().start();
process.stdout.write(`${new URL(stub.url).port}\n`);
process.on("SIGTERM", () => void stub.stop().then(() => process.exit(0)));
