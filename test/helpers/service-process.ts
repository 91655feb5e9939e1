import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";

const CLI = join(import.meta.dirname, "../../bin/vehicle-inspection.ts");
const STARTED = "vehicle inspection service started";

export type LogLine = { msg: string; inspection_id?: string; inspection_ids?: string[]; attempts?: number; [k: string]: unknown };

/** The real service as its own process, as `npm start` runs it, with its JSON log lines parsed as they come. */
export class ServiceProcess {
  readonly logs: LogLine[] = [];
  stderr = "";
  readonly exited: Promise<number | string | null>;
  readonly #child: ChildProcess;
  #waiters: (() => void)[] = [];

  /** `workload`: `start` (the embedded service), or one workload of the cluster mode (`api`, `operator`, `inference`). */
  constructor(env: Record<string, string | undefined>, workload = "start") {
    // Metrics on any free port unless told (undefined: unset): test processes run side by side.
    const full = Object.fromEntries(Object.entries({ ...process.env, METRICS_PORT: "0", ...env }).filter(([, v]) => v !== undefined));
    this.#child = spawn(process.execPath, [CLI, workload], { env: full, stdio: ["ignore", "pipe", "pipe"] });
    let partial = "";
    this.#child.stdout!.on("data", (d) => {
      const lines = (partial + String(d)).split("\n");
      partial = lines.pop()!;
      for (const line of lines) if (line.startsWith("{")) this.logs.push(JSON.parse(line));
      for (const wake of this.#waiters.splice(0)) wake();
    });
    this.#child.stderr!.on("data", (d) => (this.stderr += d));
    this.exited = new Promise((r) => this.#child.once("exit", (code, signal) => r(code ?? signal)));
    void this.exited.then(() => {
      for (const wake of this.#waiters.splice(0)) wake();
    });
  }

  /** The first log line that matches, waiting for it; fails if the process exits first. */
  async line(match: (l: LogLine) => boolean, timeoutMs = 30_000): Promise<LogLine> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.logs.find(match);
      if (found) return found;
      if (this.#child.exitCode !== null || Date.now() > deadline) {
        throw new Error(
          `no such log line (exit ${this.#child.exitCode}); got: ${this.logs.map((l) => l.msg).join(" | ")}; stderr: ${this.stderr.slice(-2_000)}`,
        );
      }
      await new Promise<void>((r) => {
        this.#waiters.push(r);
        setTimeout(r, 200);
      });
    }
  }

  async stop(signal: NodeJS.Signals = "SIGTERM"): Promise<number | string | null> {
    this.#child.kill(signal);
    const code = await this.exited;
    if (code !== 0) console.error(`exit ${code}:`, this.stderr, this.logs.slice(-5));
    return code;
  }

  kill(): void {
    if (this.#child.exitCode === null && this.#child.signalCode === null) this.#child.kill("SIGKILL");
  }
}

/** The service started as its own process, once it says it has started. */
export async function startServiceProcess(env: Record<string, string>): Promise<ServiceProcess> {
  const service = new ServiceProcess(env);
  await service.line((l) => l.msg === STARTED);
  return service;
}
