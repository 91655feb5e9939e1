import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import { STATUSES } from "../domain/state-machine.ts";

/**
 * The service's Prometheus metrics, one registry per process, labelled with its workload (`start`,
 * `api`, `operator`, `inference`); served at /metrics by every workload. Each component records
 * what it alone sees (the HTTP edge its requests, the controller its queue and detection, the
 * dispatchers their attempts); gauges read from a source when scraped are hooked on by whoever owns
 * the source (`countInspections`, `queueDepth`).
 */
export class Metrics {
  readonly registry = new Registry();
  readonly httpRequestSeconds: Histogram<"method" | "route" | "status_code">;
  readonly webhookAttempts: Counter<"outcome">;
  readonly detectionSeconds: Histogram<"outcome">;
  readonly detectionJobs: Gauge<"state">;
  /** 1 while this operator replica leads (holds the lease), else 0: the sum over replicas is 1 in health. */
  readonly leader: Gauge;
  /** Reconciles that threw and were put back with a backoff, by controller: a rate above zero for long is an alert. */
  readonly reconcileErrors: Counter<"controller">;
  readonly #depths = new Map<string, () => number | Promise<number>>();
  readonly #staleness = new Map<string, () => number>();
  #countInspections: (() => Promise<Map<string, number>>) | null = null;

  constructor(workload: string) {
    this.registry.setDefaultLabels({ workload });
    collectDefaultMetrics({ register: this.registry });
    const registers = [this.registry];
    this.httpRequestSeconds = new Histogram({
      name: "http_request_duration_seconds",
      help: "HTTP requests by method, route (the pattern, not the path) and status code, from arrival to the response sent.",
      labelNames: ["method", "route", "status_code"],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.webhookAttempts = new Counter({
      name: "webhook_delivery_attempts_total",
      help: "Webhook delivery attempts by outcome: succeeded; retry (failed, another attempt scheduled); failed (failed for good).",
      labelNames: ["outcome"],
      registers,
    });
    this.detectionSeconds = new Histogram({
      name: "detection_duration_seconds",
      help: "Detection of one inspection's photos, from its start to its result (outcome completed, failed or unusable).",
      labelNames: ["outcome"],
      buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300],
      registers,
    });
    this.detectionJobs = new Gauge({
      name: "detection_jobs",
      help: "Detection's Kubernetes Jobs by state: queued (suspended), starting, running (a pod ready), stuck (no pod ready for DETECTION_JOBS_STUCK_AFTER_MS), finished.",
      labelNames: ["state"],
      registers,
    });
    this.leader = new Gauge({
      name: "operator_leader",
      help: "1 while this operator replica leads (holds the operator lease), 0 while it stands by.",
      registers,
    });
    this.reconcileErrors = new Counter({
      name: "reconcile_errors_total",
      help: "Reconciles that failed and were queued again with a backoff, by controller: inspection (the controller), projector (keeping Inspection resources).",
      labelNames: ["controller"],
      registers,
    });
    const metrics = this;
    new Gauge({
      name: "inspections",
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
      name: "informer_staleness_seconds",
      help: "Seconds since a list-watch cache of Kubernetes resources last heard from the API server (a list, an event or a bookmark).",
      labelNames: ["resource"],
      registers,
      collect() {
        for (const [resource, seconds] of metrics.#staleness) this.set({ resource }, seconds());
      },
    });
    new Gauge({
      name: "queue_depth",
      help: "Items waiting in a queue: controller (keys due for reconcile), detection (jobs not yet taken by a worker).",
      labelNames: ["queue"],
      registers,
      async collect() {
        for (const [queue, depth] of metrics.#depths) this.set({ queue }, await depth());
      },
    });
  }

  /** Hooks a list-watch cache's time since it last heard from the API server on the `informer_staleness_seconds` gauge. */
  informerStaleness(resource: string, seconds: () => number): void {
    this.#staleness.set(resource, seconds);
  }

  /** Hooks the `inspections` gauge on the store's counts (the workload that owns the store). */
  countInspections(count: () => Promise<Map<string, number>>): void {
    this.#countInspections = count;
  }

  /** Hooks a queue's depth on the `queue_depth` gauge. */
  queueDepth(queue: string, depth: () => number | Promise<number>): void {
    this.#depths.set(queue, depth);
  }

  /** The text /metrics answers, and its content type. */
  async scrape(): Promise<{ body: string; contentType: string }> {
    return { body: await this.registry.metrics(), contentType: this.registry.contentType };
  }
}
