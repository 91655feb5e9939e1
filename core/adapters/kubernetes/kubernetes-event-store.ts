import { inScope as ownedBy } from "../../domain/inspection-queries.ts";
import type { EventStore } from "../../ports/event-store.ts";
import type { DeliveryAttemptRecord, EventRecord, Scope } from "../../ports/records.ts";
import type { StoredDelivery } from "../../schemas/inspection-resource.ts";
import { type EventView, type InspectionRecords, withCapture } from "./inspection-records.ts";

const inScope = (e: EventView, scope: Scope) => ownedBy(e.view.record, scope);

function eventRecord({ event, delivery, view }: EventView): EventRecord {
  const r = view.record;
  return {
    id: event.id,
    accountId: r.accountId,
    livemode: r.livemode,
    inspectionId: r.id,
    type: event.type,
    createdAt: event.createdAt,
    data: event.data,
    notifyUrl: r.notifyUrl,
    deliveryStatus: delivery.status,
    nextAttemptAt: delivery.nextAttemptAt,
    attemptCount: delivery.attemptCount,
    scheduleFrom: delivery.scheduleFrom,
  };
}

/**
 * Delivery attempts an event keeps in its resource; older ones move to the archive (where there is
 * one), so a resource does not grow with every resend of every event (etcd refuses objects over 1.5 MiB).
 */
export const ATTEMPTS_KEPT = 20;

const pending = (e: EventView) => e.delivery.status === "pending";
const published = (e: EventView) => e.delivery.publishedFrom === e.delivery.scheduleFrom;

/**
 * The outbox of cluster mode, kept in the InspectionRecords beside the moves that make the events
 * (KubernetesInspectionStore appends them in the same write): the first event in the api's capture
 * record (the record's spec), the rest and every delivery in its status, which only the controller
 * writes. A resend, asked for through the api, is recorded in the capture record and read as made until the
 * controller's next write of that delivery takes it in. Events are ordered by their stamp.
 */
export class KubernetesEventStore implements EventStore {
  readonly #records: InspectionRecords;

  constructor(records: InspectionRecords) {
    this.#records = records;
  }

  /** The event, live or of a pruned inspection. */
  async #find(id: string): Promise<EventView | undefined> {
    const v = await this.#records.findByEventId(id);
    return v ? this.#records.events(v).find((e) => e.event.id === id) : undefined;
  }

  async list(scope: Scope, limit: number, afterId?: string): Promise<EventRecord[] | null> {
    let before = Number.POSITIVE_INFINITY;
    if (afterId !== undefined) {
      const cursor = await this.#find(afterId);
      if (!cursor || !inScope(cursor, scope)) return null;
      before = cursor.event.seq;
    }
    // Newest first: from the end, until the page is full.
    const all = this.#records.eventsInOrder();
    const page: EventRecord[] = [];
    for (let i = all.length - 1; i >= 0 && page.length < limit; i--) {
      const e = all[i]!;
      if (e.event.seq < before && inScope(e, scope)) page.push(eventRecord(e));
    }
    return page;
  }

  async get(scope: Scope, id: string): Promise<EventRecord | null> {
    const e = await this.#find(id);
    return e && inScope(e, scope) ? eventRecord(e) : null;
  }

  async forInspection(scope: Scope, inspectionId: string): Promise<EventRecord[]> {
    const v = await this.#records.find(inspectionId);
    return v
      ? this.#records
          .events(v)
          .filter((e) => inScope(e, scope))
          .map(eventRecord)
      : [];
  }

  async attempts(eventIds: readonly string[]): Promise<Map<string, DeliveryAttemptRecord[]>> {
    const found = await Promise.all(eventIds.map((id) => this.#find(id)));
    const all = await Promise.all(
      eventIds.map(async (id, i) => {
        const kept = found[i]?.delivery.attempts ?? [];
        // Attempts before the first one kept were moved to the archive.
        const aside =
          (kept[0]?.attempt ?? 1) > 1 ? (await this.#records.archivedAttempts(id)).filter((a) => a.attempt < kept[0]!.attempt) : [];
        return [...aside, ...kept].map(({ attempt, ...a }) => ({ ...a, eventId: id, n: attempt }));
      }),
    );
    return new Map(eventIds.map((id, i) => [id, all[i]!]));
  }

  async due(now: number, limit: number): Promise<EventRecord[]> {
    return this.#records
      .eventsInOrder()
      .filter((e) => pending(e) && e.delivery.nextAttemptAt !== null && e.delivery.nextAttemptAt <= now)
      .sort((a, b) => a.delivery.nextAttemptAt! - b.delivery.nextAttemptAt!)
      .slice(0, limit)
      .map(eventRecord);
  }

  async recordAttempt(a: DeliveryAttemptRecord, next: { nextAttemptAt: number } | { status: "succeeded" | "failed" }): Promise<void> {
    const { eventId, n, ...made } = a;
    // The oldest attempts past ATTEMPTS_KEPT go to the archive first; the write below drops only those
    // archived (attempts never change once made, so a copy from a view a moment old is the same).
    let archivedBefore = 0;
    // The live resource's attempts, from the cache (the write below is made on the latest version).
    const v = this.#records.keepsAttemptsAside ? this.#records.byEventId(eventId) : null;
    const stored = v ? (this.#records.events(v).find((e) => e.event.id === eventId)?.delivery.attempts ?? []) : [];
    if (stored.length + 1 > ATTEMPTS_KEPT) {
      const aside = stored.slice(0, stored.length + 1 - ATTEMPTS_KEPT);
      await this.#records.putAttempts(eventId, aside);
      archivedBefore = aside.at(-1)!.attempt + 1;
    }
    return this.#updateDelivery(eventId, (d) => {
      if (d.attempts.some((x) => x.attempt === n)) throw new Error("constraint failed: delivery_attempts (event_id, n)");
      const moved = "status" in next ? { status: next.status, nextAttemptAt: null } : { nextAttemptAt: next.nextAttemptAt };
      return {
        ...d,
        attemptCount: a.n,
        ...moved,
        attempts: [...d.attempts.filter((x) => x.attempt >= archivedBefore), { ...made, attempt: n }].sort((x, y) => x.attempt - y.attempt),
      };
    });
  }

  /** Asked for by the api, whose account may not write status: recorded in the capture record. */
  async resend(scope: Scope, id: string, now: number): Promise<EventRecord | null> {
    const found = await this.#find(id);
    if (!found || !inScope(found, scope)) return null;
    return this.#records.updateResource(found.view.record.id, null, (v) => {
      const e = this.#records.events(v).find((x) => x.event.id === id);
      if (!e || e.delivery.status === "none") return { answer: null };
      const count = Math.max(e.delivery.resendsSeen, ...v.capture.resends.filter((r) => r.eventId === id).map((r) => r.count)) + 1;
      const resends = [
        ...v.capture.resends.filter((r) => r.eventId !== id),
        { eventId: id, count, at: now, from: e.delivery.attemptCount },
      ];
      const resent = eventRecord({
        ...e,
        delivery: { ...e.delivery, status: "pending", nextAttemptAt: now, scheduleFrom: e.delivery.attemptCount, publishedFrom: null },
      });
      return { answer: resent, write: withCapture({ ...v.capture, resends }) };
    });
  }

  async unpublished(limit: number): Promise<EventRecord[]> {
    return this.#records
      .eventsInOrder()
      .filter((e) => pending(e) && !published(e))
      .slice(0, limit)
      .map(eventRecord);
  }

  async stalled(dueBefore: number, limit: number): Promise<EventRecord[]> {
    return this.#records
      .eventsInOrder()
      .filter((e) => pending(e) && published(e) && (e.delivery.nextAttemptAt ?? 0) < dueBefore)
      .sort((a, b) => (a.delivery.nextAttemptAt ?? 0) - (b.delivery.nextAttemptAt ?? 0))
      .slice(0, limit)
      .map(eventRecord);
  }

  markPublished(id: string, scheduleFrom: number): Promise<void> {
    return this.#updateDelivery(id, (d) => (d.scheduleFrom === scheduleFrom ? { ...d, publishedFrom: scheduleFrom } : null));
  }

  /** The controller's write of one event's delivery (the resends it takes in recorded as seen); null from `change`: nothing. */
  async #updateDelivery(eventId: string, change: (d: StoredDelivery) => StoredDelivery | null): Promise<void> {
    const v = this.#records.byEventId(eventId);
    if (!v) return;
    await this.#records.updateStatus(v.record.id, undefined, (now) => {
      const e = this.#records.events(now).find((x) => x.event.id === eventId);
      const d = e && change(e.delivery);
      if (!d) return { answer: undefined };
      const deliveries = [...now.store.deliveries.filter((x) => x.eventId !== eventId), d];
      return { answer: undefined, store: { ...now.store, deliveries } };
    });
  }
}
