/**
 * The OTLP receiver's writers: exports wait here (after claiming their traces) and a writer takes every
 * export of one tenant waiting at that moment, up to MAX_GROUP_SPANS spans, and writes them as ONE
 * batch (one transaction, one fold of the rollups). An export of 511 spans carries ~126 records where
 * an ingest batch carries 500, and about half of its cost was the batch's own (statements, the
 * rollup fold, the commit), whatever its size: exports arriving together share it. An export is still
 * stored whole or not at all (its group's transaction), and answered only after the commit.
 */

/** Writers at once (each holds a pooled connection while it writes). */
export const MAX_CONCURRENT_WRITES = 2;
/** Largest group a writer takes (spans of all its exports; a single larger export goes alone). */
export const MAX_GROUP_SPANS = 4096;

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
}

export const emptyWriteQueue = <J, R>(): WriteQueue<J, R> => ({ writers: 0, waiting: [] });

/**
 * Queues `job` (of tenant `key`, `spans` spans) and resolves with its own result once a writer wrote its
 * group: `write` gets the group's jobs in arrival order and answers one result per job, in that order.
 */
export function queueWrite<J, R>(q: WriteQueue<J, R>, job: J, key: string | null, spans: number, write: (jobs: J[]) => Promise<R[]>): Promise<R> {
  return new Promise<R>((resolve, reject) => {
    q.waiting.push({ job, key, spans, resolve, reject });
    pump(q, write);
  });
}

function pump<J, R>(q: WriteQueue<J, R>, write: (jobs: J[]) => Promise<R[]>): void {
  while (q.writers < MAX_CONCURRENT_WRITES && q.waiting.length > 0) {
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
        pump(q, write);
      });
  }
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
  return group;
}
