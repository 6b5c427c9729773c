/** A background task that must be stopped (and drained) on shutdown; the composition root stops them in reverse start order. */
export interface Worker {
  name: string;
  stop(): Promise<void>;
}
