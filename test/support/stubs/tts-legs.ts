import type { WsContext } from "./vendor-stub.js";

/**
 * How one TTS WebSocket connection of a scripted vendor (Cartesia, ElevenLabs, Deepgram speak) fails,
 * at its generation number `at` (0-based; what a generation is, each stub says): answering it with
 * the vendor's server-side error (`error`) or its refusal of the request (`refuse`: the vendor's 4xx
 * shape), dropping the TCP connection (`drop`, the client sees 1006), closing 1011 (`close`), or
 * never answering (`stall`); `afterAudio` first sends that generation some audio.
 */
export interface TtsLegScript {
  how: "error" | "refuse" | "drop" | "close" | "stall";
  at: number;
  afterAudio?: boolean;
}

/**
 * The failing part of a script, once the generation's audio (if any) is sent: `vendorError` is the
 * vendor's own error frame for `error` and `refuse` (then `closeAfterError` closes as the vendor does).
 */
export async function failLeg(ws: WsContext, how: TtsLegScript["how"], vendorError: string, closeAfterError?: { code: number; reason: string }): Promise<void> {
  if (how === "error" || how === "refuse") {
    await ws.send(vendorError);
    if (closeAfterError) ws.close(closeAfterError.code, closeAfterError.reason);
  } else if (how === "drop") ws.socket.terminate();
  else if (how === "close") ws.close(1011, "internal error");
  // stall: the vendor says nothing more.
}
