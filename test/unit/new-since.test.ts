import { describe, expect, it } from "vitest";
import type { Finding, Report } from "../../core/schemas/report.ts";
import { type Baseline, newSince, sinceOf } from "../../core/views/new-since.ts";

const f = (id: string, type: Finding["type"], part: string | null, severity: Finding["severity"]): Finding => ({
  id,
  object: "finding",
  type,
  part,
  severity,
  confidence: 0.9,
  media_id: null,
  bbox: null,
  part_position: null,
  evidence_url: null,
  source: "model",
  review: null,
});
const PICK_UP = Date.parse("2026-11-23T14:05:59Z");
const baseline = (findings: Finding[]): Baseline => ({
  id: "insp_pickup",
  reference: "RA-1042 pick-up",
  completedAt: PICK_UP,
  report: { findings } as unknown as Report,
});

describe("what is new since a baseline, in words", () => {
  const then = [f("b1", "dent", "hood", "minor"), f("b2", "scratch", "trunk", "minor")];
  const now = [f("a1", "dent", "hood", "severe"), f("a2", "scratch", "trunk", "minor"), f("a3", "tire_flat", "wheel", "moderate")];
  const comparison = {
    baseline_inspection: "insp_pickup",
    new: ["a1", "a3"],
    worsened: [{ finding: "a1", baseline_finding: "b1" }],
    preexisting: [{ finding: "a2", baseline_finding: "b2" }],
    not_seen: [],
  };

  it("marks each finding New, Worse than at or Was there at the baseline's minute, naming what a worse one was", () => {
    const since = sinceOf(comparison, baseline(then));
    expect(since.get("a3")).toEqual({ kind: "new", mark: "New", was: null });
    expect(since.get("a1")).toMatchObject({ kind: "worsened", mark: "Worse than at 2026-11-23 14:05 UTC", was: { id: "b1" } });
    expect(since.get("a2")).toMatchObject({ kind: "preexisting", mark: "Was there at 2026-11-23 14:05 UTC", was: { id: "b2" } });
  });

  it("lists the new findings in the report's order with their numbers, and counts the rest", () => {
    const summary = newSince({ comparison, findings: now }, baseline(then))!;
    expect(summary.title).toBe("New since 2026-11-23 14:05 UTC");
    expect(summary.items.map((i) => [i.n, i.words, i.mark, i.was])).toEqual([
      [1, "dent on the hood, severe", "Worse than at 2026-11-23 14:05 UTC", "dent on the hood, minor"],
      [3, "tire flat on the wheel, moderate", "New", null],
    ]);
    expect([summary.preexisting, summary.notSeen]).toEqual([1, 0]);
  });

  it("says nothing without a comparison, and names the baseline plainly where its date is not known", () => {
    expect(newSince({ comparison: null, findings: now }, baseline(then))).toBeNull();
    const unknown = { id: "insp_pickup", reference: null, completedAt: null, report: null };
    expect(newSince({ comparison, findings: now }, unknown)!.title).toBe("New since the baseline");
    expect(sinceOf(comparison, unknown).get("a1")).toEqual({ kind: "worsened", mark: "Worse than at the baseline", was: null });
  });
});
