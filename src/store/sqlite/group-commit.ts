/** How one request of a shared transaction ended. */
export type Outcome<T> = { ok: true; value: T } | { ok: false; error: unknown };

/**
 * Group commit: requests that arrive in the same turn of the event loop share one write
 * transaction, and every caller's promise settles only after it committed. `commit` runs the
 * batch; with `isolate` it must give each request a savepoint of its own and report each
 * outcome, so that one refused request (a key conflict, a purged conversation) fails alone.
 */
export class GroupCommit<Request, Result> {
  private batch: Array<{ request: Request; resolve: (r: Result) => void; reject: (e: unknown) => void }> = [];

  constructor(
    private readonly commit: (requests: readonly Request[], isolate: boolean) => Array<Outcome<Result>>,
  ) {}

  submit(request: Request): Promise<Result> {
    return new Promise((resolve, reject) => {
      this.batch.push({ request, resolve, reject });
      if (this.batch.length === 1) queueMicrotask(() => this.flush());
    });
  }

  private flush(): void {
    const batch = this.batch;
    this.batch = [];
    const requests = batch.map((item) => item.request);
    let outcomes: Array<Outcome<Result>>;
    try {
      // Bare first: a savepoint per request costs about half the throughput.
      outcomes = this.commit(requests, false);
    } catch (error) {
      // One refused request rolled back the whole batch; replay it with each in its own
      // savepoint so only that one fails.
      try {
        if (batch.length === 1) throw error;
        outcomes = this.commit(requests, true);
      } catch (fatal) {
        for (const item of batch) item.reject(fatal);
        return;
      }
    }
    batch.forEach((item, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) item.resolve(outcome.value);
      else item.reject(outcome.error);
    });
  }
}
