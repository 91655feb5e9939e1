import type { FastifyInstance } from "fastify";
import type { Nats } from "../../core/adapters/nats/nats-connection.ts";
import type { Metrics } from "../../core/runtime/metrics.ts";
import type { Services } from "../../core/runtime/services.ts";

/**
 * One named readiness check, as controller-runtime's healthz.Checker: resolves while what it names
 * answers, throws why not. /readyz is ready when every check of the workload passes.
 */
export type ReadyCheck = { name: string; check: () => Promise<void> };
export type CheckResult = { name: string; ok: boolean; reason?: string };

/** How long a check's answer stands, so probes every second (or several probers) cost one call. */
export const CHECK_CACHE_MS = 1_000;
/** The longest a check may take: under the kubelet's default probe timeout (1 s). */
export const CHECK_TIMEOUT_MS = 800;

/**
 * A check whose answer (pass or fail) is kept CHECK_CACHE_MS, with one call in flight at a time
 * that every probe meanwhile waits on, and that fails after CHECK_TIMEOUT_MS without an answer.
 */
export function cached(name: string, check: () => Promise<void>, cacheMs = CHECK_CACHE_MS, timeoutMs = CHECK_TIMEOUT_MS): ReadyCheck {
  let last: { at: number; result: Promise<void> } | null = null;
  return {
    name,
    check: () => {
      const now = Date.now();
      if (!last || now - last.at >= cacheMs) {
        let timer: NodeJS.Timeout | undefined;
        const timeout = new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no answer in ${timeoutMs} ms`)), timeoutMs);
        });
        const result = Promise.race([check(), timeout]).finally(() => clearTimeout(timer));
        // Counted from when the answer came (pass or fail), so a slow answer is not asked again at once.
        const entry = { at: Number.POSITIVE_INFINITY, result };
        last = entry;
        void result.catch(() => {}).then(() => (entry.at = Date.now()));
      }
      return last.result;
    },
  };
}

/** Runs every check at once: each one's result, and why where it failed. */
export async function runChecks(checks: ReadyCheck[]): Promise<CheckResult[]> {
  return Promise.all(
    checks.map(({ name, check }) =>
      check().then(
        () => ({ name, ok: true }),
        (error: unknown) => ({ name, ok: false, reason: (error as Error)?.message ?? String(error) }),
      ),
    ),
  );
}

/** The store of record answers (SQLite, or the Inspection resources). */
export async function storeAnswers(s: Pick<Services, "inspections">): Promise<void> {
  await s.inspections.getById("insp_readiness_probe");
}

/** NATS answers a ping; fails at once while the connection is down (the client reconnecting). */
export async function natsAnswers(nats: Nats): Promise<void> {
  if (!nats.connected()) throw new Error("disconnected; reconnecting");
  await nats.nc.rtt();
}

/** The blob store answers a listing of one name (S3: one ListObjectsV2 of a prefix nothing is under). */
export async function blobsAnswer(s: Pick<Services, "blobs">): Promise<void> {
  await s.blobs.list("readyz/", null, 1);
}

/**
 * A workload's checks, each cached: `store` (the workloads that own the store), `s3` where blobs are
 * in S3 (every workload reads or writes photos), `nats` where there is NATS (its KV stores and bus).
 */
export function serviceChecks(s: Pick<Services, "inspections" | "blobs" | "config"> & { nats?: Nats | null }): ReadyCheck[] {
  const checks = [cached("store", () => storeAnswers(s))];
  if (s.config.blobs.kind === "s3") checks.push(cached("s3", () => blobsAnswer(s)));
  if (s.nats) checks.push(natsCheck(s.nats));
  return checks;
}

export const natsCheck = (nats: Nats): ReadyCheck => cached("nats", () => natsAnswers(nats));

/**
 * What every workload answers its supervisor on: `/healthz` (alive while the process answers) and
 * `/readyz` (ready while every check passes: the workload can do its work), as controller-runtime
 * serves them: 200 `{"status":"ready"}`; `?verbose` lists each check (`"ok"`, or `"failed: why"`);
 * 503 `{"status":"unavailable", checks}` names each check and why the failing ones fail.
 */
export function probeRoutes(ready: () => Promise<CheckResult[]>) {
  return async (app: FastifyInstance) => {
    app.get("/healthz", { schema: { hide: true } }, async () => ({ status: "ok" }));
    app.get("/readyz", { schema: { hide: true } }, async (request, reply) => {
      const results = await ready().catch((error: unknown) => [{ name: "readiness", ok: false, reason: String(error) }]);
      const ok = results.every((r) => r.ok);
      const verbose = Object.hasOwn((request.query as Record<string, unknown>) ?? {}, "verbose");
      if (ok && !verbose) return { status: "ready" };
      const checks = Object.fromEntries(results.map((r) => [r.name, r.ok ? "ok" : `failed: ${r.reason}`]));
      return reply.code(ok ? 200 : 503).send({ status: ok ? "ready" : "unavailable", checks });
    });
  };
}

/**
 * `/metrics` (Prometheus text), without an API key: served on METRICS_PORT only, never on the port
 * the API, the capture page and the dashboard share, so the chart decides who may reach it (its
 * Service and Ingress expose PORT; the metrics port is for the cluster's Prometheus).
 */
export function metricsRoute(metrics: Metrics) {
  return async (app: FastifyInstance) => {
    app.get("/metrics", { schema: { hide: true } }, async (_request, reply) => {
      const { body, contentType } = await metrics.scrape();
      return reply.type(contentType).send(body);
    });
  };
}
