import type { DeliveryAttemptRecord, EventRecord, Scope } from "./records.ts";

/**
 * The events of state changes and their webhook deliveries: a durable outbox. Events are appended
 * by InspectionStore in the same transaction as the move they describe.
 */
export interface EventStore {
  list(scope: Scope, limit: number, afterId?: string): EventRecord[] | null;
  get(scope: Scope, id: string): EventRecord | null;
  attempts(eventIds: readonly string[]): Map<string, DeliveryAttemptRecord[]>;
  /** Pending deliveries whose next attempt is due, oldest first. */
  due(now: number, limit: number): EventRecord[];
  /** Appends an attempt and moves the delivery on: a new due time, or a final status. */
  recordAttempt(attempt: DeliveryAttemptRecord, next: { nextAttemptAt: number } | { status: "succeeded" | "failed" }): void;
}
