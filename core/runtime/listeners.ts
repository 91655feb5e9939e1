/** Listeners of one kind of news, as an EventEmitter of one event: added, each told in turn, removed by the function add answers. */
export class Listeners<T> {
  readonly #listeners = new Set<(value: T) => void>();

  add(listener: (value: T) => void): () => void {
    // Wrapped, so that the same function added twice is two listeners, each removed by its own answer.
    const entry = (value: T) => listener(value);
    this.#listeners.add(entry);
    return () => this.#listeners.delete(entry);
  }

  emit(value: T): void {
    for (const listener of this.#listeners) listener(value);
  }
}
