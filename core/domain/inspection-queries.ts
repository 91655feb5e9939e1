import type { ListFilter, TransitionPatch } from "../ports/inspection-store.ts";
import type { InspectionRecord, Scope } from "../ports/records.ts";
import { isCaptureOpen } from "./state-machine.ts";

/*
 * What the inspection store's reads mean, for the adapters that answer them in code rather than in
 * SQL (memory, Kubernetes): one definition, so they cannot drift apart.
 */

const second = (ms: number) => Math.floor(ms / 1000);

/** Whether a record (an inspection, an event, a media) belongs to the scope: its account and environment. */
export const inScope = (owned: { accountId: string; livemode: boolean }, scope: Scope): boolean =>
  owned.accountId === scope.accountId && owned.livemode === scope.livemode;

/** Lists' order: created_at in whole seconds, then id, both descending. Negative: `a` comes first. */
export function newestFirst(a: { createdAt: number; id: string }, b: { createdAt: number; id: string }): number {
  return second(b.createdAt) - second(a.createdAt) || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);
}

/** The change feed's order: updatedAt, then id, both ascending. */
export function byChange(a: { updatedAt: number; id: string }, b: { updatedAt: number; id: string }): number {
  return a.updatedAt - b.updatedAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** Whether a list of the scope with filter `f` holds `r`. */
export function listed(r: InspectionRecord, scope: Scope, f: ListFilter): boolean {
  return (
    inScope(r, scope) &&
    (f.after === undefined || newestFirst(f.after, r) < 0) &&
    (f.status === undefined || r.status === f.status) &&
    (f.reference === undefined || r.reference === f.reference) &&
    (f.vin === undefined || r.vin === f.vin) &&
    // A date bound falls on the first whole second at or after it, as lists compare.
    (f.createdFrom === undefined || second(r.createdAt) >= Math.ceil(f.createdFrom / 1000)) &&
    (f.createdBefore === undefined || second(r.createdAt) < Math.ceil(f.createdBefore / 1000))
  );
}

/** Whether the controller should look at it now: an intent not reconciled, a link past expiry, processing due. */
export function needsReconcile(r: InspectionRecord, now: number): boolean {
  if (r.reconcileGeneration > 0) return true;
  if (isCaptureOpen(r.status)) return r.expiresAt <= now;
  return r.status === "processing" && (r.processingDueAt === null || r.processingDueAt <= now);
}

/** Whether a photo taken at `capturedAt` may still be stored: the capture open and neither submit nor cancel asked for. */
export function takesPhotos(r: InspectionRecord, capturedAt: number): boolean {
  return isCaptureOpen(r.status) && r.submitRequestedAt === null && r.cancelRequestedAt === null && capturedAt < r.expiresAt;
}

/** The fields a move's patch sets: a summary or failure given replaces the one held; null leaves it. */
export function moved(patch: TransitionPatch): Partial<InspectionRecord> {
  const set: Partial<InspectionRecord> = {};
  if (patch.submittedAt !== undefined) set.submittedAt = patch.submittedAt;
  if (patch.completedAt !== undefined) set.completedAt = patch.completedAt;
  if (patch.canceledAt !== undefined) set.canceledAt = patch.canceledAt;
  if (patch.summary) set.summary = patch.summary;
  if (patch.failure) set.failure = patch.failure;
  return set;
}
