import type { DeliveryAttemptRecord, EventRecord, Scope } from "./records.ts";

/**
 * The events of state changes and their webhook deliveries: a durable outbox. Events are appended
 * by InspectionStore in the same transaction as the move they describe.
 */
export interface EventStore {
  list(scope: Scope, limit: number, afterId?: string): Promise<EventRecord[] | null>;
  get(scope: Scope, id: string): Promise<EventRecord | null>;
  /** The events of one inspection of the scope, oldest first: its history, for the dashboard. */
  forInspection(scope: Scope, inspectionId: string): Promise<EventRecord[]>;
  attempts(eventIds: readonly string[]): Promise<Map<string, DeliveryAttemptRecord[]>>;
  /** Pending deliveries whose next attempt is due, oldest first. */
  due(now: number, limit: number): Promise<EventRecord[]>;
  /** Appends an attempt and moves the delivery on: a new due time, or a final status. */
  recordAttempt(attempt: DeliveryAttemptRecord, next: { nextAttemptAt: number } | { status: "succeeded" | "failed" }): Promise<void>;
  /**
   * Puts a delivered, failed or pending event back to pending, due at `now`, its retry schedule
   * starting again from the attempts made so far, and not yet published. Null when the scope has no
   * such event, or its delivery status is `none` (no notify_url: nowhere to send it).
   */
  resend(scope: Scope, id: string, now: number): Promise<EventRecord | null>;
  /**
   * For the cluster's relay to the bus (operator/webhook-relay.ts): pending deliveries not yet
   * published, oldest first. An event is unpublished from its append, and again from each resend.
   */
  unpublished(limit: number): Promise<EventRecord[]>;
  /**
   * The event was published as of the schedule start `scheduleFrom`. A resend made since then
   * started another schedule: the event stays unpublished, so the relay publishes the resend too.
   */
  markPublished(id: string, scheduleFrom: number): Promise<void>;
  /**
   * Pending deliveries published to the bus whose next attempt was due before `dueBefore`, most
   * overdue first: a message the bus has lost (dead-lettered when the store failed on its last
   * delivery, purged), which the relay publishes again.
   */
  stalled(dueBefore: number, limit: number): Promise<EventRecord[]>;
}
