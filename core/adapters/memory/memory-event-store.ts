import { inScope } from "../../domain/inspection-queries.ts";
import type { EventStore } from "../../ports/event-store.ts";
import type { DeliveryAttemptRecord, EventRecord, InspectionRecord, Scope } from "../../ports/records.ts";
import { constraint, snapshot, type MemoryState } from "./memory-state.ts";

/**
 * Appends an event to the outbox, delivered where the inspection has a notify_url. Checks before it
 * writes, so a caller that writes only after it has returned changes both or neither.
 */
export function appendEvent(
  state: MemoryState,
  inspection: InspectionRecord,
  at: number,
  e: { id: string; type: string; data: string },
): void {
  constraint(!state.eventSeq.has(e.id), "events.id");
  const deliver = inspection.notifyUrl !== null;
  state.eventSeq.set(e.id, state.events.length);
  state.events.push(
    snapshot({
      id: e.id,
      accountId: inspection.accountId,
      livemode: inspection.livemode,
      inspectionId: inspection.id,
      type: e.type,
      createdAt: at,
      data: e.data,
      notifyUrl: inspection.notifyUrl,
      deliveryStatus: deliver ? "pending" : "none",
      nextAttemptAt: deliver ? at : null,
      attemptCount: 0,
      scheduleFrom: 0,
    }),
  );
}

/** The outbox in memory, over the state its InspectionStore appends to. */
export class MemoryEventStore implements EventStore {
  readonly #state: MemoryState;

  constructor(state: MemoryState) {
    this.#state = state;
  }

  async list(scope: Scope, limit: number, afterId?: string): Promise<EventRecord[] | null> {
    const events = this.#state.events;
    let before = events.length;
    if (afterId !== undefined) {
      const cursor = this.#find(scope, afterId);
      if (cursor === undefined) return null;
      before = cursor;
    }
    const page: EventRecord[] = [];
    for (let seq = before - 1; seq >= 0 && page.length < limit; seq--) {
      if (inScope(events[seq]!, scope)) page.push(events[seq]!);
    }
    return page;
  }

  async get(scope: Scope, id: string): Promise<EventRecord | null> {
    const seq = this.#find(scope, id);
    return seq === undefined ? null : this.#state.events[seq]!;
  }

  /** The event's sequence number, if the scope has it. */
  #find(scope: Scope, id: string): number | undefined {
    const seq = this.#state.eventSeq.get(id);
    return seq !== undefined && inScope(this.#state.events[seq]!, scope) ? seq : undefined;
  }

  async forInspection(scope: Scope, inspectionId: string): Promise<EventRecord[]> {
    return this.#state.events.filter((e) => e.inspectionId === inspectionId && inScope(e, scope));
  }

  async attempts(eventIds: readonly string[]): Promise<Map<string, DeliveryAttemptRecord[]>> {
    return new Map(eventIds.map((id) => [id, [...(this.#state.attempts.get(id) ?? [])]]));
  }

  async due(now: number, limit: number): Promise<EventRecord[]> {
    return this.#state.events
      .filter((e) => e.deliveryStatus === "pending" && e.nextAttemptAt !== null && e.nextAttemptAt <= now)
      .sort((a, b) => a.nextAttemptAt! - b.nextAttemptAt!)
      .slice(0, limit);
  }

  async recordAttempt(a: DeliveryAttemptRecord, next: { nextAttemptAt: number } | { status: "succeeded" | "failed" }): Promise<void> {
    const made = this.#state.attempts.get(a.eventId) ?? [];
    constraint(!made.some((x) => x.n === a.n), "delivery_attempts (event_id, n)");
    this.#state.attempts.set(
      a.eventId,
      [...made, snapshot(a)].sort((x, y) => x.n - y.n),
    );
    const seq = this.#state.eventSeq.get(a.eventId);
    if (seq === undefined) return;
    const moved = "status" in next ? { deliveryStatus: next.status, nextAttemptAt: null } : { nextAttemptAt: next.nextAttemptAt };
    this.#state.events[seq] = snapshot({ ...this.#state.events[seq]!, attemptCount: a.n, ...moved });
  }

  async resend(scope: Scope, id: string, now: number): Promise<EventRecord | null> {
    const seq = this.#find(scope, id);
    if (seq === undefined) return null;
    const e = this.#state.events[seq]!;
    if (e.deliveryStatus === "none") return null;
    const resent = snapshot({ ...e, deliveryStatus: "pending" as const, nextAttemptAt: now, scheduleFrom: e.attemptCount });
    this.#state.events[seq] = resent;
    this.#state.publishedEvents.delete(id);
    return resent;
  }

  async unpublished(limit: number): Promise<EventRecord[]> {
    const published = this.#state.publishedEvents;
    return this.#state.events.filter((e) => e.deliveryStatus === "pending" && !published.has(e.id)).slice(0, limit);
  }

  async stalled(dueBefore: number, limit: number): Promise<EventRecord[]> {
    const published = this.#state.publishedEvents;
    return this.#state.events
      .filter((e) => e.deliveryStatus === "pending" && published.has(e.id) && (e.nextAttemptAt ?? 0) < dueBefore)
      .sort((a, b) => (a.nextAttemptAt ?? 0) - (b.nextAttemptAt ?? 0))
      .slice(0, limit);
  }

  async markPublished(id: string, scheduleFrom: number): Promise<void> {
    const seq = this.#state.eventSeq.get(id);
    if (seq !== undefined && this.#state.events[seq]!.scheduleFrom === scheduleFrom) this.#state.publishedEvents.add(id);
  }
}
