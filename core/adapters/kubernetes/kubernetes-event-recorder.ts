import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { type EventsV1Api, V1MicroTime, type V1ObjectMeta } from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { Status } from "../../domain/state-machine.ts";
import type { InspectionRecord } from "../../ports/records.ts";
import { INSPECTION_RESOURCE } from "../../schemas/inspection-resource.ts";
import { resourceName } from "./inspection-resource.ts";

/** What each move is called in `kubectl describe` and `kubectl get events`. */
const MOVED: Record<Status, { reason: string; type: "Normal" | "Warning" }> = {
  created: { reason: "Created", type: "Normal" },
  in_progress: { reason: "CaptureOpened", type: "Normal" },
  processing: { reason: "Submitted", type: "Normal" },
  completed: { reason: "Completed", type: "Normal" },
  canceled: { reason: "Canceled", type: "Normal" },
  expired: { reason: "Expired", type: "Normal" },
  failed: { reason: "Failed", type: "Warning" },
};

/**
 * Kubernetes Events (events.k8s.io/v1) about the Inspection resources, as controllers record them:
 * each move, a report that asks for review, and each failed detection attempt, so that `kubectl
 * describe inspection` and `kubectl get events` tell a platform team what happened. Recording is
 * best effort: a failure is logged and never holds up the move it tells of.
 *
 * Each Event names its Inspection as client-go's recorder does (apiVersion, kind, name, namespace,
 * uid, resourceVersion): `kubectl describe` finds an object's Events by its uid, so an Event without
 * it is listed by `kubectl get events` and never by `describe`. The uid and resourceVersion are the
 * Inspection's as `inspection` answers them (the store's cache, given at composition); an inspection
 * the cache has not seen yet gets its Event without them.
 */
export class KubernetesEventRecorder {
  readonly #api: EventsV1Api;
  readonly #namespace: string;
  readonly #log: Logger;
  readonly #instance = hostname();
  readonly #inspection: (id: string) => V1ObjectMeta | undefined;

  constructor(api: EventsV1Api, namespace: string, log: Logger, inspection: (id: string) => V1ObjectMeta | undefined) {
    this.#api = api;
    this.#namespace = namespace;
    this.#log = log;
    this.#inspection = inspection;
  }

  /** The inspection moved to its current status. */
  moved(r: InspectionRecord, from: Status): void {
    const { reason, type } = MOVED[r.status];
    let note = `${from} → ${r.status}`;
    if (r.status === "completed" && r.summary) note += `: ${r.summary.findings} findings, grade ${r.summary.grade}`;
    if (r.status === "failed" && r.failure) note += `: ${r.failure.code}: ${r.failure.message}`;
    this.#record(r, type, reason, note);
    if (r.status === "completed" && r.summary?.needs_review)
      this.#record(r, "Normal", "ReviewRequired", "the report waits for a person's review");
  }

  /** A detection attempt failed; it is tried again, or the inspection fails when attempts run out. */
  detectionFailed(r: InspectionRecord, attempt: number, error: unknown): void {
    const why = error instanceof Error ? error.message : String(error);
    this.#record(r, "Warning", "DetectionFailed", `attempt ${attempt} failed: ${why}`.slice(0, 1024));
  }

  #record(r: InspectionRecord, type: "Normal" | "Warning", reason: string, note: string): void {
    const name = resourceName(r.id);
    const seen = this.#inspection(r.id);
    const body = {
      // As client-go names them: the object's name and a unique hexadecimal suffix.
      metadata: { name: `${name}.${randomBytes(8).toString("hex")}`, namespace: this.#namespace },
      eventTime: new V1MicroTime(),
      reportingController: `${INSPECTION_RESOURCE.group}/operator`,
      reportingInstance: this.#instance,
      action: "Reconcile",
      type,
      reason,
      note,
      regarding: {
        apiVersion: `${INSPECTION_RESOURCE.group}/${INSPECTION_RESOURCE.version}`,
        kind: INSPECTION_RESOURCE.kind,
        name,
        namespace: this.#namespace,
        ...(seen?.uid ? { uid: seen.uid } : {}),
        ...(seen?.resourceVersion ? { resourceVersion: seen.resourceVersion } : {}),
      },
    };
    this.#api
      .createNamespacedEvent({ namespace: this.#namespace, body })
      .catch((err) => this.#log.warn({ err, inspection_id: r.id, reason }, "recording a Kubernetes Event failed"));
  }
}
