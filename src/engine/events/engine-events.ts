import type { EngineEvent, EngineEventMap, EngineEventName } from "./event-map.ts";

/** Listeners of some events, by name: what a subscriber (the metrics, traces, health) hears. */
export type EngineSubscriber = { [K in EngineEventName]?: (payload: EngineEventMap[K]) => void };

type Listener = (payload: never) => void;

/**
 * A process's one emitter of engine events (`EngineEventMap`). Parts emit; subscribers listen by
 * name (`subscribe`) or to everything (`onAny`, the log). An event no one listens to costs a map
 * look-up. A subscriber that throws is its own failure, not the emitter's: the worker's loop or
 * the scheduler's tick that emitted goes on, and the error is written to stderr once per
 * subscriber and event name.
 */
export class EngineEvents {
  readonly #byName = new Map<EngineEventName, Set<Listener>>();
  readonly #any = new Set<(event: EngineEvent) => void>();
  readonly #reported = new Set<string>();

  /** Listens to one event; returns the function that stops listening. */
  on<K extends EngineEventName>(name: K, listener: (payload: EngineEventMap[K]) => void): () => void {
    return this.#add(name, listener as Listener);
  }

  /** Listens to each event the subscriber names; returns the function that stops them all. */
  subscribe(subscriber: EngineSubscriber): () => void {
    const offs = (Object.keys(subscriber) as EngineEventName[]).map((name) => this.#add(name, subscriber[name] as Listener));
    return () => {
      for (const off of offs) off();
    };
  }

  /** Listens to every event, with its name. */
  onAny(listener: (event: EngineEvent) => void): () => void {
    this.#any.add(listener);
    return () => {
      this.#any.delete(listener);
    };
  }

  /** Whether anyone listens to `name`: an emitter may skip building a costly payload. */
  heard(name: EngineEventName): boolean {
    return this.#any.size > 0 || (this.#byName.get(name)?.size ?? 0) > 0;
  }

  emit<K extends EngineEventName>(name: K, payload: EngineEventMap[K]): void {
    const listeners = this.#byName.get(name);
    if (listeners) {
      for (const listener of listeners) {
        try {
          (listener as (payload: EngineEventMap[K]) => void)(payload);
        } catch (error) {
          this.#report(name, error);
        }
      }
    }
    if (this.#any.size === 0) return;
    const event = { name, payload } as EngineEvent;
    for (const listener of this.#any) {
      try {
        listener(event);
      } catch (error) {
        this.#report(name, error);
      }
    }
  }

  #add(name: EngineEventName, listener: Listener): () => void {
    let set = this.#byName.get(name);
    if (!set) this.#byName.set(name, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
    };
  }

  #report(name: EngineEventName, error: unknown): void {
    const message = error instanceof Error ? error.message : String(error);
    const key = `${name}\n${message}`;
    if (this.#reported.has(key)) return;
    this.#reported.add(key);
    process.stderr.write(`a subscriber of ${name} failed: ${message}\n`);
  }
}
