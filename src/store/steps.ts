/**
 * How a mutation is written once for both engines: the algorithm is a generator that yields the
 * steps it needs ({@link StepCall}: a method name and its arguments) and reads each answer; an
 * engine runs it inside its own transaction with {@link runSync} (SQLite, whose queries answer at
 * once) or {@link runAsync} (PostgreSQL). The order of the steps, and every decision between them,
 * therefore lives in one place.
 */

/** One step the algorithm asks its engine to take: a method of the steps `S` and its arguments. */
export interface StepCall<S> {
  name: keyof S;
  args: unknown[];
}

/** The same steps, each answering a promise (an engine whose queries are asynchronous). */
export type AsyncSteps<T> = {
  [K in keyof T]: T[K] extends (...args: infer A) => infer R ? (...args: A) => Promise<R> : never;
};

/** What the engine answers to step `K` of `S`: the algorithm reads each answer as `Answer<S, K>`. */
export type Answer<S, K extends keyof S> = S[K] extends (...args: never[]) => infer R ? R : never;

/**
 * The step constructor for the steps `S`, typed as they declare their parameters. Algorithms
 * yield these directly: delegating to a generator per step (`yield*`) costs several times more.
 */
export function stepsOf<S>() {
  return function call<K extends keyof S>(
    name: K,
    ...args: S[K] extends (...a: infer A) => unknown ? A : never
  ): StepCall<S> {
    return { name, args };
  };
}

/** Runs `procedure` on an engine whose steps answer at once (inside a synchronous transaction). */
export function runSync<S, R>(procedure: Generator<StepCall<S>, R, unknown>, steps: S): R {
  let next = procedure.next();
  while (!next.done) {
    const { name, args } = next.value;
    next = procedure.next((steps[name] as (...a: unknown[]) => unknown)(...args));
  }
  return next.value;
}

/** Runs `procedure` on an engine whose steps answer promises. */
export async function runAsync<S, R>(
  procedure: Generator<StepCall<S>, R, unknown>,
  steps: AsyncSteps<S>,
): Promise<R> {
  let next = procedure.next();
  while (!next.done) {
    const { name, args } = next.value;
    next = procedure.next(await (steps[name] as (...a: unknown[]) => Promise<unknown>)(...args));
  }
  return next.value;
}
