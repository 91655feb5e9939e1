import type { Branding } from "../../domain/branding.ts";
import type { ReviewPolicy } from "../../domain/review.ts";
import { newId } from "../../domain/ids.ts";
import type { StoredResponse } from "../../ports/idempotency-store.ts";
import type { ApiKeyRecord } from "../../ports/key-store.ts";
import type { DeliveryAttemptRecord, EventRecord, InspectionRecord, MediaRecord, PhotoRecord } from "../../ports/records.ts";
import type { InviteRecord, UserRecord } from "../../ports/user-store.ts";
import { Listeners } from "../../runtime/listeners.ts";

/** A photo as stored: its size is its media's, read with it. */
export type StoredPhoto = Omit<PhotoRecord, "width" | "height">;
/** Where a photo goes among an inspection's: its angle, and a close-up's slot; a retake goes to the same place. */
export const photoPlace = (p: { angle: string; slot: number | null }) => (p.slot === null ? p.angle : `${p.angle}/${p.slot}`);

export type StoredSecret = { secret: string; createdAt: number; previousSecret: string | null; previousExpiresAt: number | null };

export type StoredIdempotencyKey = { fingerprint: string; createdAt: number; response: StoredResponse | null };

/**
 * The data of the in-memory stores, what a Database is to the SQLite ones: every memory adapter of
 * one service is made over one of these, so an inspection's create and its first event, or an
 * account named by both keys and users, are one piece of data. Each adapter's method changes it
 * synchronously, before its promise settles, so every write is atomic against every other.
 * Records in it are frozen snapshots that a write replaces, never edits: callers may keep what
 * they were given, and what they passed in is copied.
 */
export class MemoryState {
  /** Accounts by name, as keys and users both name them. */
  readonly accounts = new Map<string, { id: string; createdAt: number }>();
  /** Account id → name. */
  readonly accountNames = new Map<string, string>();

  readonly inspections = new Map<string, InspectionRecord>();
  /** Capture token hash → inspection id. */
  readonly captureTokens = new Map<string, string>();
  /** Inspection id → photoPlace → photo, each inspection's in the order its places were first stored. */
  readonly photos = new Map<string, Map<string, StoredPhoto>>();
  readonly media = new Map<string, MediaRecord>();

  /** Every event in the order appended: its index is its sequence number. */
  readonly events: EventRecord[] = [];
  /** Event id → index in `events`. */
  readonly eventSeq = new Map<string, number>();
  /** Event id → its attempts, by n. */
  readonly attempts = new Map<string, DeliveryAttemptRecord[]>();
  /** Ids of the pending events the relay has published since they became pending. */
  readonly publishedEvents = new Set<string>();

  readonly apiKeys = new Map<string, ApiKeyRecord>();
  /** Key hash → key id. */
  readonly keyHashes = new Map<string, string>();
  /** By `secretKey(accountId, livemode)`. */
  readonly webhookSecrets = new Map<string, StoredSecret>();
  /** By `pairKey(accountId, livemode)`; absent: the default. */
  readonly reviewPolicies = new Map<string, ReviewPolicy>();
  /** By account id; absent: NO_BRANDING. */
  readonly brandings = new Map<string, Branding>();
  /** By `scopedKey(scope, key)`. */
  readonly idempotencyKeys = new Map<string, StoredIdempotencyKey>();

  readonly users = new Map<string, UserRecord>();
  /** Email → user id. */
  readonly userEmails = new Map<string, string>();
  readonly sessions = new Map<string, { userId: string; expiresAt: number }>();
  readonly invites = new Map<string, InviteRecord>();
  readonly keyUsage = new Map<string, number>();
  /** Told the id of each inspection created or given an intent: InspectionStore.watch, for every adapter over this state. */
  readonly inspectionWrites = new Listeners<string>();

  /** The account's id, made on first use. */
  account(name: string, now: number): string {
    const found = this.accounts.get(name);
    if (found) return found.id;
    const id = newId("acct");
    this.accounts.set(name, { id, createdAt: now });
    this.accountNames.set(id, name);
    return id;
  }
}

/** What `a` and `b` together name, as a map key (ids never hold a NUL). */
export const pairKey = (a: string, b: string | boolean): string => `${a}\0${b}`;

/**
 * Fails as a unique or foreign key of the SQLite schema would, so a caller that breaks one fails
 * here too instead of passing only against memory.
 */
export function constraint(holds: boolean, what: string): void {
  if (!holds) throw new Error(`constraint failed: ${what}`);
}

/** A deep, frozen copy of plain data: what a store keeps and hands out. */
export function snapshot<T>(value: T): T {
  return deepFreeze(structuredClone(value));
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
