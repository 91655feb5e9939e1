import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import { STATUSES } from "../domain/state-machine.ts";
import { RequestTally } from "./request-tally.ts";

/** Every metric of the service's own carries it, as a platform team's dashboards and rules expect of one product's series. */
export const METRIC_PREFIX = "vehicle_inspection_";

/**
 * The service's metric names, defined here once: the chart's PrometheusRule, the docs and the tests
 * name these (a chart test and a docs test check they agree). prom-client's defaults (`process_*`,
 * `nodejs_*`) keep their usual names, which the usual Node.js dashboards read.
 */
export const METRIC = {
  httpRequests: `${METRIC_PREFIX}http_requests_total`,
  httpRequestSeconds: `${METRIC_PREFIX}http_request_duration_seconds`,
  webhookAttempts: `${METRIC_PREFIX}webhook_delivery_attempts_total`,
  detectionSeconds: `${METRIC_PREFIX}detection_duration_seconds`,
  inferenceSeconds: `${METRIC_PREFIX}inference_duration_seconds`,
  detectionJobs: `${METRIC_PREFIX}detection_jobs`,
  leader: `${METRIC_PREFIX}operator_leader`,
  reconcileErrors: `${METRIC_PREFIX}reconcile_errors_total`,
  reconciles: `${METRIC_PREFIX}reconcile_total`,
  reconcileSeconds: `${METRIC_PREFIX}reconcile_duration_seconds`,
  kubernetesRequests: `${METRIC_PREFIX}kubernetes_requests_total`,
  inspections: `${METRIC_PREFIX}inspections`,
  informerStaleness: `${METRIC_PREFIX}informer_staleness_seconds`,
  queueDepth: `${METRIC_PREFIX}queue_depth`,
} as const;

/**
 * A reconcile's result as controller-runtime's `controller_runtime_reconcile_total` names it:
 * `success` (done until something changes), `error` (threw; queued again with a backoff),
 * `requeue` (to be handled again at once), `requeue_after` (to be handled again at a later time).
 */
export type ReconcileResult = "success" | "error" | "requeue" | "requeue_after";

/**
 * The process's requests to the Kubernetes API server, by verb and code: one tally per process, as
 * the KubeConfig every client of the process is made from is one (bin/commands/kube-config.ts
 * counts into it), read by each registry's counter when scraped.
 */
const kubernetesRequests = new Map<string, { verb: string; code: string; count: number }>();

/**
 * Counts one request to the Kubernetes API server: its verb (the HTTP method, `WATCH` for a GET
 * that watches) and its status code, or `<error>` where no response came (client-go's label for it).
 */
export function countKubernetesRequest(verb: string, code: string): void {
  const key = `${verb} ${code}`;
  const seen = kubernetesRequests.get(key);
  if (seen) seen.count++;
  else kubernetesRequests.set(key, { verb, code, count: 1 });
}

/**
 * The service's Prometheus metrics, one registry per process, labelled with its workload (`start`,
 * `api`, `operator`, `inference`); served at /metrics by every workload. Each component records
 * what it alone sees (the HTTP edge its requests, the controller its queue and detection, the
 * dispatchers their attempts); gauges read from a source when scraped are hooked on by whoever owns
 * the source (`countInspections`, `queueDepth`).
 */
export class Metrics {
  readonly registry = new Registry();
  /**
   * Requests answered, by method, route (the pattern, never a path with ids) and status class, and
   * their time: the requests counter and duration histogram read it when scraped.
   */
  readonly httpRequests = new RequestTally([0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]);
  readonly webhookAttempts: Counter<"outcome">;
  /** An inspection's detection as the controller sees it, start to result: observed once, by the controller alone. */
  readonly detectionSeconds: Histogram<"outcome">;
  /** A worker's run of one detection job (an inference process or a Job's pod): where the model's time goes, per worker. */
  readonly inferenceSeconds: Histogram<"outcome">;
  readonly detectionJobs: Gauge<"state">;
  /** 1 while this operator replica leads (holds the lease), else 0: the sum over replicas is 1 in health. */
  readonly leader: Gauge;
  /** Reconciles that threw and were put back with a backoff, by controller: a rate above zero for long is an alert. */
  readonly reconcileErrors: Counter<"controller">;
  /** Every reconcile a controller's work queue ran, by controller and result (controller-runtime's reconcile_total). */
  readonly reconciles: Counter<"controller" | "result">;
  /** A reconcile's run, from the handler's start to its result or error (controller-runtime's reconcile_time_seconds). */
  readonly reconcileSeconds: Histogram<"controller">;
  readonly #depths = new Map<string, () => number | Promise<number>>();
  readonly #staleness = new Map<string, () => number>();
  #countInspections: (() => Promise<Map<string, number>>) | null = null;

  constructor(workload: string) {
    this.registry.setDefaultLabels({ workload });
    collectDefaultMetrics({ register: this.registry });
    const registers = [this.registry];
    const detectionBuckets = [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300];
    this.httpRequests.counter({
      name: METRIC.httpRequests,
      help: "HTTP requests answered, by method, route (the pattern, not the path) and status class (2xx, 4xx, 5xx).",
      registers,
    });
    this.httpRequests.histogram({
      name: METRIC.httpRequestSeconds,
      help: "HTTP requests by method, route (the pattern, not the path) and status class, from arrival to the response sent.",
      registers,
    });
    this.webhookAttempts = new Counter({
      name: METRIC.webhookAttempts,
      help: "Webhook delivery attempts by outcome: succeeded; retry (failed, another attempt scheduled); failed (failed for good).",
      labelNames: ["outcome"],
      registers,
    });
    this.detectionSeconds = new Histogram({
      name: METRIC.detectionSeconds,
      help: "Detection of one inspection's photos as the controller sees it, from its start to its result (outcome completed, failed or unusable); the queue's wait included.",
      labelNames: ["outcome"],
      buckets: detectionBuckets,
      registers,
    });
    this.inferenceSeconds = new Histogram({
      name: METRIC.inferenceSeconds,
      help: "One detection job run by a worker (an inference process or a detection Job's pod), from taking it to its result (outcome completed or failed).",
      labelNames: ["outcome"],
      buckets: detectionBuckets,
      registers,
    });
    this.detectionJobs = new Gauge({
      name: METRIC.detectionJobs,
      help: "Detection's Kubernetes Jobs by state: queued (suspended), starting, running (a pod ready), stuck (no pod ready for DETECTION_JOBS_STUCK_AFTER_MS), finished.",
      labelNames: ["state"],
      registers,
    });
    this.leader = new Gauge({
      name: METRIC.leader,
      help: "1 while this operator replica leads (holds the operator lease), 0 while it stands by.",
      registers,
    });
    this.reconcileErrors = new Counter({
      name: METRIC.reconcileErrors,
      help: "Reconciles that failed and were queued again with a backoff, by controller: inspection (the controller).",
      labelNames: ["controller"],
      registers,
    });
    this.reconciles = new Counter({
      name: METRIC.reconciles,
      help: "Reconciles run, by controller (inspection) and result: success, error (queued again with a backoff), requeue (again at once), requeue_after (again at a later time).",
      labelNames: ["controller", "result"],
      registers,
    });
    this.reconcileSeconds = new Histogram({
      name: METRIC.reconcileSeconds,
      help: "One reconcile's run, by controller (inspection), from its start to its result or error.",
      labelNames: ["controller"],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    });
    new Counter({
      name: METRIC.kubernetesRequests,
      help: "Requests this process made to the Kubernetes API server, by verb (the HTTP method; WATCH for a watch) and status code (<error> where none came back).",
      labelNames: ["verb", "code"],
      registers,
      collect() {
        this.reset();
        for (const { verb, code, count } of kubernetesRequests.values()) this.inc({ verb, code }, count);
      },
    });
    const metrics = this;
    new Gauge({
      name: METRIC.inspections,
      help: "Inspections stored, by phase (status).",
      labelNames: ["phase"],
      registers,
      async collect() {
        if (!metrics.#countInspections) return;
        const counts = await metrics.#countInspections();
        for (const phase of STATUSES) this.set({ phase }, counts.get(phase) ?? 0);
      },
    });
    new Gauge({
      name: METRIC.informerStaleness,
      help: "Seconds since a list-watch cache of Kubernetes resources last heard from the API server (a list, an event or a bookmark).",
      labelNames: ["resource"],
      registers,
      collect() {
        for (const [resource, seconds] of metrics.#staleness) this.set({ resource }, seconds());
      },
    });
    new Gauge({
      name: METRIC.queueDepth,
      help: "Items waiting in a queue: controller (keys due for reconcile), detection (jobs not yet taken by a worker).",
      labelNames: ["queue"],
      registers,
      async collect() {
        for (const [queue, depth] of metrics.#depths) this.set({ queue }, await depth());
      },
    });
  }

  /** Hooks a list-watch cache's time since it last heard from the API server on the informer staleness gauge. */
  informerStaleness(resource: string, seconds: () => number): void {
    this.#staleness.set(resource, seconds);
  }

  /** Hooks the inspections gauge on the store's counts (the workload that owns the store). */
  countInspections(count: () => Promise<Map<string, number>>): void {
    this.#countInspections = count;
  }

  /** Hooks a queue's depth on the queue depth gauge. */
  queueDepth(queue: string, depth: () => number | Promise<number>): void {
    this.#depths.set(queue, depth);
  }

  /** The text /metrics answers, and its content type. */
  async scrape(): Promise<{ body: string; contentType: string }> {
    return { body: await this.registry.metrics(), contentType: this.registry.contentType };
  }
}
