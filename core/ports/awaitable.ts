/**
 * What a port's per-request read gives: the value itself where the adapter holds it in this process
 * (the embedded memory and SQLite adapters), else a promise (NATS, Kubernetes). Every other port
 * method is asynchronous, as style.md's kysely habit has it; these three reads (the rate limit's
 * take, the API key's lookup, the inspection's read by id) run on every API request, and a promise
 * that is already settled costs each a turn of the microtask queue: together 16.8 against 15.4 µs of
 * a GET by id's CPU, about 8% (docs/benchmarks.md, "GET by id warmed"). A caller that `await`s needs nothing else.
 */
export type Awaitable<T> = T | Promise<T>;

/**
 * Whether `x` is still to come. Told by its `then`, not by `instanceof Promise`, so a promise from
 * another realm or library is never taken for a value (records and allowances have no `then`).
 */
export function isPending<T>(x: Awaitable<T>): x is Promise<T> {
  return typeof (x as { then?: unknown } | null)?.then === "function";
}

/**
 * `next(value)`: at once where `x` is a value, else once it settles. A rejection goes to
 * `otherwise` where one is given (it is never called for a value).
 */
export function whenReady<T, R>(x: Awaitable<T>, next: (value: T) => R, otherwise?: (error: unknown) => R): Awaitable<R> {
  return isPending(x) ? x.then(next, otherwise) : next(x);
}
