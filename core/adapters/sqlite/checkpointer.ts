import { Worker } from "node:worker_threads";
import type { Database } from "./database.ts";

// Plain CommonJS, run with eval: the thread needs nothing of the project but a connection of its own.
const WORKER = `
const { DatabaseSync } = require("node:sqlite");
const { parentPort, workerData } = require("node:worker_threads");
const db = new DatabaseSync(workerData.file, { timeout: 5000 });
const timer = setInterval(() => {
  try { db.exec("PRAGMA wal_checkpoint(PASSIVE)"); } catch { /* busy: the next tick tries again */ }
}, workerData.everyMs);
parentPort.on("message", () => { clearInterval(timer); db.close(); parentPort.close(); });
`;

/** Past this many WAL pages the writer checkpoints itself: only if the checkpointer thread has stopped. */
const SAFETY_NET_PAGES = 50_000;
const SQLITE_DEFAULT_PAGES = 1000;

/**
 * Copies the WAL back into the database file from a thread of its own. SQLite's automatic
 * checkpoint runs inside whichever commit crosses the threshold, with a file sync, and that commit's
 * request (and every request behind it on the event loop) waits: it set the POST p99. A passive
 * checkpoint never blocks the writer or readers; the writer's own automatic checkpoint stays as a
 * safety net, far above what the thread lets the WAL grow to.
 */
export class Checkpointer {
  readonly #worker: Worker;
  readonly #exited: Promise<void>;
  #closing = false;

  /** `onStop`: the thread stopped on its own (an error); the writer then checkpoints itself again. */
  constructor(db: Database, file: string, options: { everyMs?: number; onStop?: (error: unknown) => void } = {}) {
    db.exec(`PRAGMA wal_autocheckpoint = ${SAFETY_NET_PAGES}`);
    this.#worker = new Worker(WORKER, { eval: true, workerData: { file, everyMs: options.everyMs ?? 200 } });
    // The thread holds no request: it must not keep the process alive, nor take it down.
    this.#worker.unref();
    let failure: unknown;
    this.#worker.on("error", (error) => (failure = error));
    this.#exited = new Promise((resolve) =>
      this.#worker.once("exit", () => {
        if (!this.#closing) {
          // Without the thread the WAL would grow to the safety net: back to SQLite's own default.
          db.exec(`PRAGMA wal_autocheckpoint = ${SQLITE_DEFAULT_PAGES}`);
          options.onStop?.(failure);
        }
        resolve();
      }),
    );
  }

  async close(): Promise<void> {
    this.#closing = true;
    // While close waits for the thread, the thread must keep the process alive: unreferenced, a
    // process with nothing else to do would exit mid-close, before its caller closes the database.
    this.#worker.ref();
    this.#worker.postMessage("stop");
    await this.#exited;
  }
}
