// A typed event emitter without node:events (the core also runs on Workers-style runtimes). It keeps the
// EventEmitter behaviour the registry's listeners rely on: listeners run synchronously in the order they were
// added, one added twice runs twice (and `off` removes one of them), a listener removed or added during an emit
// does not change that emit, and a listener that throws stops the emit and throws to its caller.

/** Event name -> the arguments its listeners get. */
export type EventMap<T> = { [K in keyof T]: unknown[] };

type Listeners<T extends EventMap<T>> = { [K in keyof T]?: Array<(...args: T[K]) => void> };

export class Emitter<T extends EventMap<T>> {
  readonly #listeners: Listeners<T> = {};

  on<K extends keyof T>(name: K, listener: (...args: T[K]) => void): this {
    this.#listeners[name] = [...(this.#listeners[name] ?? []), listener];
    return this;
  }

  off<K extends keyof T>(name: K, listener: (...args: T[K]) => void): this {
    const listeners = this.#listeners[name];
    const at = listeners ? listeners.lastIndexOf(listener) : -1;
    if (listeners && at >= 0) this.#listeners[name] = [...listeners.slice(0, at), ...listeners.slice(at + 1)];
    return this;
  }

  /** Whether any listener ran. */
  emit<K extends keyof T>(name: K, ...args: T[K]): boolean {
    // Arrays are replaced, never changed in place: this one stays what it was when the emit began.
    const listeners = this.#listeners[name];
    if (!listeners?.length) return false;
    for (const listener of listeners) listener(...args);
    return true;
  }

  listenerCount(name: keyof T): number {
    return this.#listeners[name]?.length ?? 0;
  }
}
