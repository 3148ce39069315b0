import type pg from "pg";
import { systemClock } from "../../core/model/clock.ts";
import { Backoff, retryWithBackoff, type BackoffOptions } from "../../core/policy/backoff.ts";
import { isConnectionError, isTransientConflict } from "./connection.ts";
import { SESSION_SQL, SQL, type StatementName } from "./sql.ts";

type Row = Record<string, any>;

/** A deadlock between two transactions is resolved by the server aborting one; it runs again. */
const MAX_CONFLICT_RETRIES = 5;

/**
 * Marks a promise as handled. Statements are sent ahead and awaited later; when an earlier one
 * fails (a dropped connection fails them all) the later ones are never awaited, and their
 * rejection must not end the process. Whoever awaits it still gets the error.
 */
export function observed<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => {});
  return promise;
}

/**
 * Paces retries while the server is unreachable, up to a deadline (real time): a scheduler or
 * worker rides out a restart or a network blip instead of failing its loop. The first retry is
 * at once, then after 50 ms, doubling up to 1 s.
 */
function reconnecting(withinMs: number): BackoffOptions {
  return { firstMs: 0, minMs: 50, maxMs: 1_000, withinMs, clock: systemClock };
}

/**
 * Statements of one transaction. `send` puts a statement on the wire at once (the connection
 * pipelines: statements whose results are not needed before the next go out together, which
 * saves round trips, while the server still runs them one after the other, in order).
 * Every statement sent is awaited before COMMIT, so a failure can never be committed past.
 */
export class Tx {
  readonly #client: pg.PoolClient;
  readonly #pending: Promise<unknown>[] = [];
  #corked = false;

  constructor(client: pg.PoolClient) {
    this.#client = client;
  }

  /**
   * Holds this connection's writes until the statements sent in the same stretch of code (and
   * the promise reactions it queues) are all on the buffer, then writes them at once: one
   * syscall and one packet for a round trip's statements instead of one per statement (pg
   * writes each on its own). The writes go out before the event loop polls again, so no
   * statement waits for them.
   */
  cork(): void {
    if (this.#corked) return;
    const stream = (this.#client as unknown as { connection?: { stream?: { cork?: () => void; uncork?: () => void } } }).connection?.stream;
    if (!stream?.cork || !stream.uncork) return;
    this.#corked = true;
    stream.cork();
    process.nextTick(() => {
      this.#corked = false;
      stream.uncork!();
    });
  }

  /** BEGIN, sent through the same held writes as the statements that follow it. */
  begin(): Promise<unknown> {
    this.cork();
    return observed(this.#client.query(SESSION_SQL.begin));
  }

  send(name: StatementName, values: unknown[] = []): Promise<pg.QueryResult<Row>> {
    this.cork();
    const result = observed(this.#client.query<Row>({ name, text: SQL[name], values }));
    this.#pending.push(result);
    return result;
  }

  rows(name: StatementName, values: unknown[] = []): Promise<Row[]> {
    return observed(this.send(name, values).then((r) => r.rows));
  }

  first(name: StatementName, values: unknown[] = []): Promise<Row | undefined> {
    return observed(this.send(name, values).then((r) => r.rows[0]));
  }

  /**
   * Sends COMMIT behind whatever is still in flight and waits for all of it. A statement that
   * failed aborts the transaction, and COMMIT then answers ROLLBACK: either way it is an error.
   */
  async commit(): Promise<void> {
    this.cork();
    const commit = observed(this.#client.query(SESSION_SQL.commit));
    await Promise.all(this.#pending);
    if ((await commit).command === "ROLLBACK") throw new Error("state store: the transaction was rolled back");
  }
}

/** A result computed once the transaction has committed, so COMMIT can go out with the last statements. */
export class AfterCommit<T> {
  constructor(readonly result: () => Promise<T>) {}
}

/**
 * Transactions and single statements over the pool, riding out a lost connection: a call that
 * failed for want of a server is tried again (a transaction only if its COMMIT never went out,
 * so it surely did not happen) until `reconnectWithinMs`; after that, or when COMMIT's fate is
 * unknown, it fails as an ordinary error.
 */
export class Transactions {
  readonly #pool: pg.Pool;
  readonly #reconnectWithinMs: number;

  constructor(pool: pg.Pool, reconnectWithinMs: number) {
    this.#pool = pool;
    this.#reconnectWithinMs = reconnectWithinMs;
  }

  /**
   * Runs `work` in a transaction. When the connection breaks before COMMIT went out, nothing
   * happened and it runs again on a fresh connection. When it breaks after, nobody knows whether
   * it committed: it runs again only if running it twice is harmless (`once: false`, the default:
   * creating a run that exists, renewing a lease, finishing a fenced attempt a second time).
   */
  async tx<T>(work: (tx: Tx) => Promise<T | AfterCommit<T>>, { once = false }: { once?: boolean } = {}): Promise<T> {
    const reconnect = new Backoff(reconnecting(this.#reconnectWithinMs));
    for (let conflicts = 0; ; ) {
      let client: pg.PoolClient;
      try {
        client = await this.#pool.connect();
      } catch (error) {
        if (isConnectionError(error) && (await reconnect.again())) continue;
        throw error;
      }
      let committing = false;
      try {
        const tx = new Tx(client);
        const begun = tx.begin();
        const result = await work(tx);
        await begun;
        committing = true;
        await tx.commit();
        client.release();
        return result instanceof AfterCommit ? await result.result() : result;
      } catch (error) {
        const broken = isConnectionError(error);
        if (!broken) await client.query(SESSION_SQL.rollback).catch(() => {});
        client.release(broken ? (error as Error) : undefined);
        if (broken && (!committing || !once) && (await reconnect.again())) continue;
        if (isTransientConflict(error) && conflicts++ < MAX_CONFLICT_RETRIES) continue;
        throw error;
      }
    }
  }

  async rows(name: StatementName, values: unknown[] = []): Promise<Row[]> {
    return (await this.idempotent(name, values)).rows;
  }

  async first(name: StatementName, values: unknown[] = []): Promise<Row | undefined> {
    return (await this.rows(name, values))[0];
  }

  /** A write that must not happen twice (an audit row, a counter): it runs again only if it surely never committed. */
  async write(name: StatementName, values: unknown[] = []): Promise<pg.QueryResult<Row>> {
    return this.tx((tx) => tx.send(name, values), { once: true });
  }

  /** A read, or a write that may run twice with the same effect (renewals, upserts): one round trip. */
  async idempotent(name: StatementName, values: unknown[] = []): Promise<pg.QueryResult<Row>> {
    return retryWithBackoff(() => this.#pool.query<Row>({ name, text: SQL[name], values }), {
      ...reconnecting(this.#reconnectWithinMs),
      retryable: isConnectionError,
    });
  }
}
