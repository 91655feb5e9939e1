import { describe, expect, it } from "vitest";
import {
  capturePlanOf,
  desiredStatus,
  idOfResource,
  inspectionResource,
  prunedAt,
  resourceName,
} from "../../core/adapters/kubernetes/inspection-resource.ts";
import { sampleInspection } from "../contract/fixtures.ts";
import { DEFAULT_CAPTURE_PLAN } from "../../core/domain/capture-plan.ts";

describe("an inspection as its Inspection resource", () => {
  it("is named from its id and back, labelled with its account and environment, its spec the creation request", () => {
    const capture = {
      steps: [
        { angle: "front" as const, required: true },
        { angle: "dashboard" as const, required: false },
      ],
      closeups: "guided" as const,
      locale: "de-CH",
    };
    const r = sampleInspection({
      id: "insp_abc123",
      reference: "ref-1",
      notifyUrl: "https://example.com/hook",
      livemode: true,
      capture,
      createdAt: 1_000_000,
      expiresAt: 1_000_000 + 86_400_000,
    });
    expect(resourceName(r.id)).toBe("insp-abc123");
    expect(idOfResource("insp-abc123")).toBe("insp_abc123");
    const resource = inspectionResource(r, "claims");
    expect(resource.metadata).toEqual({
      name: "insp-abc123",
      namespace: "claims",
      labels: { "inspection.dev/account": "acct_a", "inspection.dev/livemode": "true" },
    });
    expect(resource.spec).toEqual({
      reference: "ref-1",
      vehicle: { vin: r.vin },
      notify_url: "https://example.com/hook",
      capture,
      accountId: "acct_a",
      livemode: true,
    });
    // The browser's locale (null) is the field left out, as the creation request leaves it out.
    expect(inspectionResource({ ...r, capture: { ...capture, locale: null } }, "claims").spec.capture).not.toHaveProperty("locale");
    // Read back as it was asked; a resource made before capture existed asked for the default walkaround.
    expect(capturePlanOf(resource.spec)).toEqual(capture);
    const { capture: _, ...before } = resource.spec;
    expect(capturePlanOf(before)).toEqual(DEFAULT_CAPTURE_PLAN);
  });

  it("shows the phase, summary and times, and conditions that keep their transition time while they hold", () => {
    const created = sampleInspection({ status: "created" });
    const t0 = Date.parse("2026-11-25T10:00:00Z");
    const first = desiredStatus(created, 1, undefined, t0);
    expect(first.phase).toBe("created");
    expect(first.conditions!.map((c) => [c.type, c.status, c.reason, c.lastTransitionTime])).toEqual([
      ["Submitted", "False", "AwaitingPhotos", "2026-11-25T10:00:00.000Z"],
      ["ReportReady", "False", "AwaitingSubmission", "2026-11-25T10:00:00.000Z"],
      ["Reviewed", "False", "NotCompleted", "2026-11-25T10:00:00.000Z"],
    ]);
    // Nothing moved: the very same status, so nothing is written.
    expect(desiredStatus(created, 1, first.conditions, t0 + 60_000)).toEqual(first);
    const done = sampleInspection({
      ...created,
      status: "completed",
      submittedAt: t0 + 1_000,
      completedAt: t0 + 2_000,
      summary: { findings: 2, grade: "moderate", needs_review: false, new_findings: null },
    });
    const later = desiredStatus(done, 1, first.conditions, t0 + 120_000);
    expect(later).toMatchObject({ phase: "completed", grade: "moderate", findings: 2, completedAt: "2026-11-25T10:00:02.000Z" });
    expect(later.conditions!.map((c) => [c.type, c.status, c.reason, c.lastTransitionTime])).toEqual([
      ["Submitted", "True", "Submitted", "2026-11-25T10:02:00.000Z"],
      ["ReportReady", "True", "Completed", "2026-11-25T10:02:00.000Z"],
      ["Reviewed", "False", "NotRequired", "2026-11-25T10:00:00.000Z"],
    ]);
    expect(later.review).toBe("not_required");
    const asked = desiredStatus(
      { ...done, summary: { findings: 2, grade: "moderate", needs_review: true, new_findings: null } },
      1,
      later.conditions,
      t0,
    );
    expect(asked.review).toBe("required");
    expect(asked.conditions![2]).toMatchObject({ type: "Reviewed", status: "False", reason: "ReviewRequired" });
    const review = {
      by: "claims@acme.example",
      at: t0 + 180_000,
      note: null,
      decisions: [],
      added: [],
      summary: { findings: 1, grade: "minor" as const, needs_review: false as const, new_findings: null },
    };
    const reviewed = desiredStatus({ ...done, review, summary: review.summary }, 1, asked.conditions, t0 + 180_000);
    expect(reviewed).toMatchObject({ review: "completed", reviewedBy: "claims@acme.example", grade: "minor", findings: 1 });
    expect(reviewed.conditions![2]).toMatchObject({
      type: "Reviewed",
      status: "True",
      reason: "Reviewed",
      message: "reviewed by claims@acme.example at 2026-11-25T10:03:00.000Z: 1 findings, grade minor",
      lastTransitionTime: "2026-11-25T10:03:00.000Z",
    });
    const failed = desiredStatus(
      { ...done, status: "failed", summary: null, failure: { code: "photos_unusable", message: "no photo readable" } },
      2,
      later.conditions,
      t0,
    );
    expect(failed.conditions![1]).toMatchObject({
      status: "False",
      reason: "Failed",
      message: "photos_unusable: no photo readable",
      observedGeneration: 2,
    });
    expect(failed.conditions![0]!.lastTransitionTime).toBe("2026-11-25T10:02:00.000Z");
  });

  it("is pruned a retention after it finished, never while it is open", () => {
    expect(prunedAt(sampleInspection({ status: "processing", updatedAt: 1_000 }), 500)).toBeNull();
    expect(prunedAt(sampleInspection({ status: "canceled", updatedAt: 1_000 }), 500)).toBe(1_500);
  });
});
