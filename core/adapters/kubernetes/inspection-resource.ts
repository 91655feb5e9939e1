import type { KubernetesObject } from "@kubernetes/client-node";
import { isTerminal, type Status } from "../../domain/state-machine.ts";
import type { InspectionRecord } from "../../ports/records.ts";
import { type CapturePlan, DEFAULT_CAPTURE_PLAN } from "../../domain/capture-plan.ts";
import { type Condition, INSPECTION_RESOURCE, type InspectionSpec, type InspectionStatus } from "../../schemas/inspection-resource.ts";

/** An `Inspection` as the API server holds it. */
export type InspectionResource = KubernetesObject & { spec: InspectionSpec; status?: InspectionStatus };

/** The resource's name: the id with `_` turned into `-` (ids are `insp_` and lowercase base32). */
export const resourceName = (id: string): string => id.replace("_", "-");
export const idOfResource = (name: string): string => name.replace("-", "_");

/** Labels to select by with kubectl: the account and the environment. */
export const INSPECTION_LABELS = { account: "inspection.dev/account", livemode: "inspection.dev/livemode" } as const;

/** The resource made for an inspection: its spec is the creation request, with whose it is. */
export function inspectionResource(r: InspectionRecord, namespace: string): InspectionResource {
  return {
    apiVersion: `${INSPECTION_RESOURCE.group}/${INSPECTION_RESOURCE.version}`,
    kind: INSPECTION_RESOURCE.kind,
    metadata: {
      name: resourceName(r.id),
      namespace,
      labels: { [INSPECTION_LABELS.account]: r.accountId, [INSPECTION_LABELS.livemode]: String(r.livemode) },
    },
    spec: {
      ...(r.reference === null ? {} : { reference: r.reference }),
      vehicle: { vin: r.vin },
      ...(r.notifyUrl === null ? {} : { notify_url: r.notifyUrl }),
      ...(r.reviewPolicy === null ? {} : { review: r.reviewPolicy }),
      ...(r.baselineInspectionId === null ? {} : { baseline_inspection: r.baselineInspectionId }),
      // Not expires_in: the lifetime is the record's expiresAt (the capture annotation, status.expiresAt),
      // which a deployment's INSPECTION_TTL_HOURS may set outside the bounds a request is held to.
      capture: {
        steps: r.capture.steps,
        closeups: r.capture.closeups,
        ...(r.capture.locale === null ? {} : { locale: r.capture.locale }),
      },
      accountId: r.accountId,
      livemode: r.livemode,
    },
  };
}

/** What the spec's capture asks for; a resource made before capture existed lacks it, and asked for the default walkaround. */
export function capturePlanOf(spec: InspectionSpec): CapturePlan {
  const asked = spec.capture;
  if (!asked) return DEFAULT_CAPTURE_PLAN;
  return {
    // The API server fills in a step's required (the schema's default); a spec written by hand may lack it.
    steps: asked.steps?.map((s) => ({ angle: s.angle, required: s.required ?? true })) ?? DEFAULT_CAPTURE_PLAN.steps,
    closeups: asked.closeups ?? DEFAULT_CAPTURE_PLAN.closeups,
    locale: asked.locale ?? null,
  };
}

const iso = (ms: number | null) => (ms === null ? undefined : new Date(ms).toISOString());

type Said = Pick<Condition, "type" | "status" | "reason" | "message">;

/** `Submitted`: whether the customer's photos are in. */
function submitted(r: InspectionRecord): Said {
  const type = "Submitted";
  if (r.submittedAt !== null) return { type, status: "True", reason: "Submitted", message: "submitted with its photos" };
  const ended: Partial<Record<Status, Said>> = {
    canceled: { type, status: "False", reason: "Canceled", message: "canceled before it was submitted" },
    expired: { type, status: "False", reason: "Expired", message: "the capture link expired before it was submitted" },
  };
  return ended[r.status] ?? { type, status: "False", reason: "AwaitingPhotos", message: "waiting for the customer's photos" };
}

/** `ReportReady`: whether the report can be read, and if not, why. */
function reportReady(r: InspectionRecord): Said {
  const type = "ReportReady";
  switch (r.status) {
    case "completed":
      return {
        type,
        status: "True",
        reason: "Completed",
        message: `${r.summary?.findings ?? 0} findings, grade ${r.summary?.grade ?? "none"}`,
      };
    case "failed":
      return { type, status: "False", reason: "Failed", message: r.failure ? `${r.failure.code}: ${r.failure.message}` : "failed" };
    case "processing":
      return { type, status: "False", reason: "Processing", message: "detecting and grading damage" };
    case "canceled":
      return { type, status: "False", reason: "Canceled", message: "canceled" };
    case "expired":
      return { type, status: "False", reason: "Expired", message: "expired" };
    default:
      return { type, status: "False", reason: "AwaitingSubmission", message: "not submitted yet" };
  }
}

/** `Reviewed`: whether a person has reviewed the completed inspection's report, and if not, whether one should. */
function reviewed(r: InspectionRecord): Said {
  const type = "Reviewed";
  if (r.review) {
    const message = `reviewed by ${r.review.by} at ${new Date(r.review.at).toISOString()}: ${r.review.summary.findings} findings, grade ${r.review.summary.grade}`;
    return { type, status: "True", reason: "Reviewed", message };
  }
  if (r.status !== "completed") return { type, status: "False", reason: "NotCompleted", message: "no report to review yet" };
  return r.summary?.needs_review
    ? { type, status: "False", reason: "ReviewRequired", message: "waiting for a person to review the report" }
    : { type, status: "False", reason: "NotRequired", message: "no review asked for" };
}

/** The review column of `kubectl get inspections`: absent before completion. */
function reviewState(r: InspectionRecord): InspectionStatus["review"] {
  if (r.review) return "completed";
  if (r.status !== "completed") return undefined;
  return r.summary?.needs_review ? "required" : "not_required";
}

/**
 * The status the resource should show for the record, `generation` the spec's it was made from. A
 * condition keeps its lastTransitionTime while its status stays, as metav1.Condition wants, so the
 * status of a record that has not moved is the same object, and nothing is written.
 */
export function desiredStatus(r: InspectionRecord, generation: number, previous: Condition[] | undefined, now: number): InspectionStatus {
  const conditions = [submitted(r), reportReady(r), reviewed(r)].map((c): Condition => {
    const before = previous?.find((p) => p.type === c.type);
    const lastTransitionTime = before && before.status === c.status ? before.lastTransitionTime : new Date(now).toISOString();
    return { ...c, observedGeneration: generation, lastTransitionTime };
  });
  const status: InspectionStatus = {
    phase: r.status,
    observedGeneration: generation,
    conditions,
    expiresAt: iso(r.expiresAt),
    submittedAt: iso(r.submittedAt),
    completedAt: iso(r.completedAt),
    canceledAt: iso(r.canceledAt),
    ...(r.summary ? { grade: r.summary.grade, findings: r.summary.findings } : {}),
    ...(r.failure ? { failure: r.failure } : {}),
    review: reviewState(r),
    reviewedBy: r.review?.by,
  };
  // Absent rather than undefined, as the API server hands it back.
  return JSON.parse(JSON.stringify(status));
}

/** When a finished inspection's resource is pruned; null while it is not finished. */
export const prunedAt = (r: InspectionRecord, retentionMs: number): number | null =>
  isTerminal(r.status) ? r.updatedAt + retentionMs : null;
