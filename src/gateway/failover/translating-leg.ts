import { EventEmitter } from "node:events";
import { WebSocket } from "ws";
import { asBuffer, type StreamMeter } from "../ws/relay.js";
import type { LegSocket } from "./switching-upstream.js";

/**
 * A vendor socket of one protocol that speaks the client's protocol to the leg switch (the bridges
 * of src/gateway/failover/): flow control, close and pings act on the vendor's socket; its close,
 * errors and pongs pass on; subclasses translate the client's frames (`send`) and the vendor's
 * (`fromVendor`, answered through `toClient`).
 */
export abstract class TranslatingLeg extends EventEmitter implements LegSocket {
  /** Whether the vendor may say nothing while nobody speaks (the switch then pings it); unset: as the client's protocol says. */
  readonly quiet?: boolean;
  /** The leg's meter as the switch reads it: frames of the client's protocol, the vendor's bill as units. */
  abstract readonly meter: StreamMeter;

  constructor(protected readonly ws: WebSocket) {
    super();
    ws.on("message", (data, isBinary) => {
      if (!isBinary) this.fromVendor(asBuffer(data));
    });
    ws.on("pong", () => this.emit("pong"));
    ws.on("close", (code, reason) => this.emit("close", code, reason));
    ws.on("error", (err) => {
      // Errors before the switch attached its listener would otherwise throw.
      if (this.listenerCount("error") > 0) this.emit("error", err);
    });
  }

  abstract send(data: Buffer | string, opts: { binary: boolean }): void;
  /** A text frame of the vendor's protocol. */
  protected abstract fromVendor(frame: Buffer): void;

  /** A message of the client's protocol (an object, or a frame already serialized), as if the vendor had sent it. */
  protected toClient(msg: object | string): void {
    this.emit("message", Buffer.from(typeof msg === "string" ? msg : JSON.stringify(msg)), false);
  }

  /** A JSON message of the vendor's protocol, counted on `meter`'s client side (the vendor's bill); dropped once the socket is not open. */
  protected toVendor(msg: object, meter: StreamMeter): void {
    if (this.ws.readyState !== WebSocket.OPEN) return;
    const frame = JSON.stringify(msg);
    meter.client(Buffer.from(frame), false);
    this.ws.send(frame);
  }

  ping(): void {
    this.ws.ping();
  }
  get readyState(): number {
    return this.ws.readyState;
  }
  get bufferedAmount(): number {
    return this.ws.bufferedAmount;
  }
  get isPaused(): boolean {
    return this.ws.isPaused;
  }
  pause(): void {
    this.ws.pause();
  }
  resume(): void {
    this.ws.resume();
  }
  close(code?: number, reason?: string): void {
    this.ws.close(code, reason);
  }
  terminate(): void {
    this.ws.terminate();
  }
}
