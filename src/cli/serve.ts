import { boot } from "../server.js";

/** `voxgate serve`: runs until SIGTERM/SIGINT, then drains and exits 0. */
export async function serveCommand(opts: { port?: number; host?: string }): Promise<void> {
  const running = await boot(opts);
  const stop = (signal: string) => {
    running.services.log.info({ signal }, "signal received");
    running.shutdown().then(
      () => process.exit(0),
      (err: unknown) => {
        running.services.log.error({ err }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
}
