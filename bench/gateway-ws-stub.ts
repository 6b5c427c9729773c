/**
 * The loopback Deepgram stub of bench:gateway-ws, in its own process (its CPU is not the load
 * generator's): WS /v1/listen answers every audio frame with a `Results`; WS /v1/realtime (the
 * realtime mode) answers every client event with a small server event. Prints its port on stdout.
 */
import { DeepgramStub } from "../test/support/stubs/deepgram.js";

const ACK = JSON.stringify({ type: "input_audio_buffer.speech_started", event_id: "event_bench", audio_start_ms: 0, item_id: "item_bench" });
const stub = new DeepgramStub();
stub.ws("/v1/realtime", (ws) => ws.onMessage(() => void ws.send(ACK)));
await stub.start();
process.stdout.write(`${new URL(stub.url).port}\n`);
process.on("SIGTERM", () => void stub.stop().then(() => process.exit(0)));
