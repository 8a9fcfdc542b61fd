/**
 * A value wired after the parts that call it are built. The runtime is built with the approval
 * service and the schedule tools, and both submit runs to it: they hold the runtime as a `Late` and
 * reach it with `get()` only when they act (a dispatch, a decision), never while the gateway is
 * being composed.
 */
export interface Late<T> {
  /** The value; throws when it is not set yet (a wiring mistake, not a runtime condition). */
  get(): T;
  set(value: T): void;
}

/** `what` names the value in the error a too-early `get()` throws. */
export function late<T>(what: string): Late<T> {
  let holder: { value: T } | null = null;
  return {
    get() {
      if (holder === null) throw new Error(`${what} was used before createGateway set it`);
      return holder.value;
    },
    set(value) {
      if (holder !== null) throw new Error(`${what} was set twice`);
      holder = { value };
    },
  };
}
