import { EngineEvents } from "../events/engine-events.ts";
import type { Clock } from "../../core/model/clock.ts";
import type { ChangeEvent, ChangeFeedStore } from "../../store/port.ts";

/** Changes read per query. */
const BATCH = 500;
/** How long a missing id may hold back the ids after it: a transaction that took an id and has not committed yet. */
const GAP_WAIT_MS = 2_000;
/** Without a channel (SQLite), how often the feed looks for new changes while someone listens. */
const POLL_MS = 20;
/** With a channel (PostgreSQL), how often it looks anyway, in case a notification was lost. */
const POLL_WITH_CHANNEL_MS = 1_000;
/** While a gap holds changes back, how often it looks whether the gap has filled. */
const GAP_POLL_MS = 10;

export interface ChangeSubscriber {
  /** Changes in id order, each delivered once. */
  onChanges(changes: ChangeEvent[]): void;
  /** The id asked for is older than what the store keeps (or unknown): the view must reload. */
  onReset(): void;
}

/**
 * One reader of the store's change feed per process, shared by every listener (each browser
 * tab's event stream). It keeps the highest id up to which nothing can still appear ("settled")
 * and hands each subscriber what lies between its own cursor and that. On PostgreSQL, ids come
 * from a sequence and two transactions can commit out of order: a gap in the ids is waited on
 * for a moment (the other transaction commits, or rolled back and never will), then passed.
 */
export class ChangeFeed {
  readonly #store: ChangeFeedStore;
  readonly #clock: Clock;
  readonly #subscribers = new Map<ChangeSubscriber, { cursor: number }>();
  #settled: number | null = null;
  #gapSince: number | null = null;
  #timer: NodeJS.Timeout | null = null;
  #pumping: Promise<void> | null = null;
  /** Set while a pump runs: look again right after it (0) or soon (a gap). */
  #again: number | null = null;
  #unwatch: (() => Promise<void>) | null = null;
  #watching: Promise<void> | null = null;
  readonly #events: EngineEvents;

  constructor(store: ChangeFeedStore, clock: Clock, events: EngineEvents = new EngineEvents()) {
    this.#store = store;
    this.#clock = clock;
    this.#events = events;
  }

  /**
   * Starts delivering changes after `lastEventId` (null: only changes from now on). Returns the
   * function that stops it.
   */
  async subscribe(lastEventId: number | null, subscriber: ChangeSubscriber): Promise<() => void> {
    await this.#start();
    const settled = this.#settled!;
    let cursor = settled;
    if (lastEventId !== null) {
      const { newest, oldest } = await this.#store.changeBounds();
      const pruned = oldest === null ? lastEventId < newest : lastEventId < oldest - 1;
      if (lastEventId > newest || pruned) subscriber.onReset();
      else cursor = lastEventId;
    }
    this.#subscribers.set(subscriber, { cursor });
    this.#schedule(0);
    return () => {
      this.#subscribers.delete(subscriber);
      if (this.#subscribers.size === 0) void this.#stop();
    };
  }

  /** Makes the feed look now (a local write just happened). */
  poke(): void {
    if (this.#subscribers.size > 0) this.#schedule(0);
  }

  get subscribers(): number {
    return this.#subscribers.size;
  }

  async close(): Promise<void> {
    this.#subscribers.clear();
    await this.#stop();
  }

  async #start(): Promise<void> {
    if (this.#settled === null) this.#settled = (await this.#store.changeBounds()).newest;
    if (this.#watching === null && this.#store.watchChanges) {
      this.#watching = this.#store.watchChanges(() => this.poke()).then((unwatch) => {
        this.#unwatch = unwatch;
      });
    }
    await this.#watching;
  }

  async #stop(): Promise<void> {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    const unwatch = this.#unwatch;
    this.#unwatch = null;
    this.#watching = null;
    await unwatch?.();
  }

  #schedule(delayMs: number): void {
    if (this.#pumping) {
      this.#again = Math.min(this.#again ?? delayMs, delayMs);
      return;
    }
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#pumping = this.#pump()
        .catch((error) => this.#events.emit("change-feed:failed", { error: (error as Error).message, reading: true }))
        .finally(() => {
          this.#pumping = null;
          if (this.#subscribers.size === 0) return;
          const again = this.#again;
          this.#again = null;
          this.#schedule(again ?? (this.#store.watchChanges ? POLL_WITH_CHANNEL_MS : POLL_MS));
        });
    }, delayMs);
    this.#timer.unref();
  }

  async #pump(): Promise<void> {
    const before = this.#settled!;
    const fresh = await this.#store.readChanges(before, BATCH);
    const accepted: ChangeEvent[] = [];
    let settled = before;
    for (const change of fresh) {
      if (change.id !== settled + 1) {
        const now = this.#clock.now();
        this.#gapSince ??= now;
        if (now - this.#gapSince < GAP_WAIT_MS) {
          this.#again = Math.min(this.#again ?? GAP_POLL_MS, GAP_POLL_MS);
          break;
        }
      }
      this.#gapSince = null;
      accepted.push(change);
      settled = change.id;
    }
    this.#settled = settled;
    if (fresh.length === BATCH && accepted.length === fresh.length) this.#again = 0;

    for (const [subscriber, state] of this.#subscribers) {
      if (state.cursor >= settled) continue;
      let batch: ChangeEvent[];
      if (state.cursor >= before) batch = accepted.filter((c) => c.id > state.cursor);
      else {
        // Catching up after a reconnect: its own read, up to what is settled.
        batch = (await this.#store.readChanges(state.cursor, BATCH)).filter((c) => c.id <= settled);
        if (batch.length === BATCH) this.#again = 0;
      }
      if (batch.length === 0) {
        state.cursor = settled;
        continue;
      }
      state.cursor = batch.at(-1)!.id;
      if (state.cursor < settled && batch.length < BATCH) state.cursor = settled;
      try {
        subscriber.onChanges(batch);
      } catch (error) {
        this.#events.emit("change-feed:failed", { error: (error as Error).message, reading: false });
      }
    }
  }
}
