import type { InspectionRecord } from "../ports/records.ts";
import type { TransitionPatch } from "../ports/inspection-store.ts";
import { nextStatus, type Trigger } from "./state-machine.ts";

/**
 * What the controller does with an inspection, derived from the state machine's table and the
 * intents recorded on it: pure, so the controller holds no rule of its own and no status name.
 */

/** A submission recorded before expires_at counts even if the controller sees it later. */
const submitted = (r: InspectionRecord) => r.submitRequestedAt !== null && r.submitRequestedAt < r.expiresAt;

/**
 * Each intent-driven trigger with the condition that fires it and what its move records, in the
 * order they win: a cancel first, then the customer's moves, then the clock.
 */
const INTENT_TRIGGERS: ReadonlyArray<{
  on: Trigger;
  fires(r: InspectionRecord, now: number): boolean;
  patch(r: InspectionRecord, now: number): TransitionPatch;
}> = [
  { on: "cancel_requested", fires: (r) => r.cancelRequestedAt !== null, patch: (_r, now) => ({ canceledAt: now }) },
  { on: "capture_opened", fires: (r) => r.openedAt !== null || submitted(r), patch: () => ({}) },
  { on: "capture_submitted", fires: submitted, patch: (r) => ({ submittedAt: r.submitRequestedAt! }) },
  { on: "link_expired", fires: (r, now) => r.expiresAt <= now, patch: () => ({}) },
];

/** The move due now, if any: the first trigger that fires and that the table allows from the status. */
export function dueMove(r: InspectionRecord, now: number): { on: Trigger; patch: TransitionPatch } | null {
  for (const t of INTENT_TRIGGERS) {
    if (nextStatus(r.status, t.on) !== null && t.fires(r, now)) return { on: t.on, patch: t.patch(r, now) };
  }
  return null;
}

/** A status that a stored report moves on: the inspection is waiting for detection and grading. */
export const awaitsDetection = (r: InspectionRecord): boolean => nextStatus(r.status, "report_stored") !== null;

/**
 * When to look at the inspection again if nothing else wakes the controller: when its capture link
 * expires, or when its next detection attempt is due; null when only an intent can move it.
 */
export function lookAgainAt(r: InspectionRecord): number | null {
  if (nextStatus(r.status, "link_expired") !== null) return r.expiresAt;
  if (awaitsDetection(r)) return r.processingDueAt;
  return null;
}
