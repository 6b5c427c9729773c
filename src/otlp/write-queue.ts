/**
 * The OTLP receiver's writers: exports wait here (after claiming their traces) and a writer takes every
 * export of one tenant waiting at that moment, up to MAX_GROUP_SPANS spans, and writes them as ONE
 * batch (one transaction, one fold of the rollups). An export of 511 spans carries ~126 records where
 * an ingest batch carries 500, and about half of its cost was the batch's own (statements, round
 * trips, the rollup fold, the commit), whatever its size: exports arriving together share it. An
 * export is still stored whole or not at all (its group's transaction), and answered only after the
 * commit.
 *
 * Group commit: a writer that just finished answers its exporters, whose next exports tend to follow
 * within a few ms (a BatchSpanProcessor exports again as soon as 512 spans are ready), so it waits up
 * to LINGER_MS for the waiting ones to fill a group instead of writing the few that wait (with two
 * writers each taking what waited, groups of 1-2 exports alternated). A second writer starts only for
 * half a group or more: below that it costs another batch's fixed share for no throughput. An export
 * arriving while no writer is busy or lingering is written at once.
 */

/** Writers at once (each holds a pooled connection while it writes). */
export const MAX_CONCURRENT_WRITES = 2;
/** Largest group a writer takes (spans of all its exports; a single larger export goes alone). */
export const MAX_GROUP_SPANS = 4096;
/** How long a writer that just finished waits for a fuller group (a group of MAX_GROUP_SPANS / 2 spans starts at once). */
export const LINGER_MS = 3;

interface Waiting<J, R> {
  job: J;
  key: string | null;
  spans: number;
  resolve: (r: R) => void;
  reject: (err: unknown) => void;
}

/** Exports waiting for a writer, and the writers running. */
export interface WriteQueue<J, R> {
  writers: number;
  waiting: Waiting<J, R>[];
  /** Spans of the waiting exports. */
  waitingSpans: number;
  /** A writer that finished is lingering (its timer pending): it starts when the timer fires or a group fills. */
  lingering: ReturnType<typeof setTimeout> | null;
}

export const emptyWriteQueue = <J, R>(): WriteQueue<J, R> => ({ writers: 0, waiting: [], waitingSpans: 0, lingering: null });

/**
 * Queues `job` (of tenant `key`, `spans` spans) and resolves with its own result once a writer wrote its
 * group: `write` gets the group's jobs in arrival order and answers one result per job, in that order.
 */
export function queueWrite<J, R>(q: WriteQueue<J, R>, job: J, key: string | null, spans: number, write: (jobs: J[]) => Promise<R[]>): Promise<R> {
  return new Promise<R>((resolve, reject) => {
    q.waiting.push({ job, key, spans, resolve, reject });
    q.waitingSpans += spans;
    pump(q, write);
  });
}

const HALF_GROUP = MAX_GROUP_SPANS / 2;

function pump<J, R>(q: WriteQueue<J, R>, write: (jobs: J[]) => Promise<R[]>): void {
  while (q.waiting.length > 0 && q.writers < MAX_CONCURRENT_WRITES) {
    const half = q.waitingSpans >= HALF_GROUP;
    // Busy (a writer running, or one lingering for its next group): only half a group starts another.
    if ((q.writers > 0 || q.lingering !== null) && !half) return;
    if (q.lingering !== null) {
      clearTimeout(q.lingering);
      q.lingering = null;
    }
    start(q, write);
  }
}

function start<J, R>(q: WriteQueue<J, R>, write: (jobs: J[]) => Promise<R[]>): void {
  const group = takeGroup(q);
  q.writers++;
  write(group.map((w) => w.job))
    .then(
      (results) => {
        group.forEach((w, i) => {
          w.resolve(results[i] as R);
        });
      },
      (err: unknown) => {
        for (const w of group) w.reject(err);
      },
    )
    .finally(() => {
      q.writers--;
      if (q.lingering === null && q.waitingSpans < HALF_GROUP) {
        // The exporters just answered may send again: wait for them (pump starts early on half a group).
        q.lingering = setTimeout(() => {
          q.lingering = null;
          pump(q, write);
        }, LINGER_MS);
        return;
      }
      pump(q, write);
    });
}

/** The first waiting export and every later one of its tenant that fits, in arrival order; the others keep their place. */
function takeGroup<J, R>(q: WriteQueue<J, R>): Waiting<J, R>[] {
  const first = q.waiting[0] as Waiting<J, R>;
  const group: Waiting<J, R>[] = [];
  const rest: Waiting<J, R>[] = [];
  let spans = 0;
  for (const w of q.waiting) {
    if (w === first || (w.key === first.key && spans + w.spans <= MAX_GROUP_SPANS)) {
      group.push(w);
      spans += w.spans;
    } else rest.push(w);
  }
  q.waiting = rest;
  q.waitingSpans -= spans;
  return group;
}
