import type pg from "pg";

/** The parts of pg's connection a COPY needs; pg passes it to a custom query's handlers. */
interface CopyConnection {
  query(text: string): void;
  sendCopyFromChunk(chunk: Buffer): void;
  endCopyFrom(): void;
  sendCopyFail(message: string): void;
  stream: NodeJS.WritableStream & { writableNeedDrain?: boolean };
}

/**
 * `COPY ... FROM STDIN` over pg's own connection, without pg-copy-streams: pg runs any object
 * with a `submit` method as a query and hands it the protocol messages, so this one answers the
 * server's CopyInResponse by sending the chunks, then CopyDone (or CopyFail if the source throws).
 * Resolves to the number of rows the server copied.
 */
export function copyFrom(client: pg.Client, statement: string, chunks: AsyncIterable<Buffer>, onChunk?: (chunk: Buffer) => Promise<void> | void): Promise<number> {
  return new Promise((resolve, reject) => {
    let rows = 0;
    let failure: Error | null = null;
    let settled = false;
    const settle = () => {
      if (settled) return;
      settled = true;
      if (failure) reject(failure);
      else resolve(rows);
    };
    const submittable = {
      submit(connection: CopyConnection) {
        connection.query(statement);
      },
      handleCopyInResponse(connection: CopyConnection) {
        void (async () => {
          try {
            for await (const chunk of chunks) {
              // After a server error keep reading (a writer may be blocked on a pipe) but stop sending.
              if (failure) continue;
              connection.sendCopyFromChunk(chunk);
              if (connection.stream.writableNeedDrain) await new Promise((r) => connection.stream.once("drain", r));
              await onChunk?.(chunk);
            }
            if (!failure) connection.endCopyFrom();
          } catch (error) {
            const wasFailed = failure !== null;
            failure ??= error instanceof Error ? error : new Error(String(error));
            if (!wasFailed) connection.sendCopyFail(failure.message);
          }
        })();
      },
      handleCommandComplete(message: { text?: string }) {
        rows = Number(/COPY (\d+)/.exec(message.text ?? "")?.[1] ?? 0);
      },
      handleError(error: Error) {
        // After an error the server still sends ReadyForQuery, but pg no longer routes it here.
        failure ??= error;
        settle();
      },
      handleReadyForQuery() {
        settle();
      },
      handleCopyData() {},
      handleRowDescription() {},
      handleDataRow() {},
      handleEmptyQuery() {},
      handlePortalSuspended() {},
    };
    void client.query(submittable as never);
  });
}
