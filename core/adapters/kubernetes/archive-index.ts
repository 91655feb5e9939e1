import { createHash } from "node:crypto";
import type { Status } from "../../domain/state-machine.ts";
import type { ListFilter } from "../../ports/inspection-store.ts";
import type { InspectionRecord, Scope } from "../../ports/records.ts";

/*
 * The list of pruned inspections, kept as blob names (one empty blob per inspection) in a folder per
 * account and environment, so that a listing of the folder in byte order is the API's list order:
 * created second descending, then id descending. Each name also carries what lists filter on, so a
 * page is chosen from the names alone and only its inspections are read.
 *
 *   <9999999999 - created second, 11 digits>~<id, each character mirrored>~<status>~<vin>~<reference digest>
 */

/** The folder of one account's and environment's pruned inspections. */
export const archiveFolder = (scope: Scope): string => `records/index/${scope.accountId}/${scope.livemode ? "live" : "test"}/`;

const LAST_SECOND = 99_999_999_999;
// The characters of ids in byte order; each is mirrored (first ↔ last), so ascending names are descending ids.
const ID_CHARS = "0123456789_abcdefghijklmnopqrstuvwxyz";
const mirror = (id: string) => [...id].map((c) => ID_CHARS[ID_CHARS.length - 1 - ID_CHARS.indexOf(c)] ?? c).join("");
const invertedSecond = (second: number) => String(LAST_SECOND - second).padStart(11, "0");
// A reference may be 255 characters of anything: a digest keeps the name short and path-safe.
const digest = (reference: string | null) =>
  reference === null ? "-" : createHash("sha256").update(reference).digest("base64url").slice(0, 22);
/** Above every character a name holds: a name that is a position plus this sorts after all entries at that position. */
const AFTER = "\x7f";

export type ArchiveEntry = { second: number; id: string; status: Status; vin: string; referenceDigest: string };

export function entryName(r: InspectionRecord): string {
  return [invertedSecond(Math.floor(r.createdAt / 1000)), mirror(r.id), r.status, r.vin, digest(r.reference)].join("~");
}

export function parseEntry(name: string): ArchiveEntry | null {
  const [second, id, status, vin, referenceDigest] = name.split("~");
  if (!second || !id || !status || !vin || !referenceDigest) return null;
  return { second: LAST_SECOND - Number(second), id: mirror(id), status: status as Status, vin, referenceDigest };
}

/** Where a listing for `f` starts: after its cursor, and past what was created at or after createdBefore. */
export function startAfter(f: ListFilter): string | null {
  const starts: string[] = [];
  if (f.after) starts.push(`${invertedSecond(Math.floor(f.after.createdAt / 1000))}~${mirror(f.after.id)}~${AFTER}`);
  // Created before B (by the whole second at or after it): skip every second from B on.
  if (f.createdBefore !== undefined) starts.push(`${invertedSecond(Math.ceil(f.createdBefore / 1000))}~${AFTER}`);
  return starts.sort().at(-1) ?? null;
}

/** Whether a listing for `f` is done at this entry: created before createdFrom (all after it are older still). */
export function pastTheEnd(e: ArchiveEntry, f: ListFilter): boolean {
  return f.createdFrom !== undefined && e.second < Math.ceil(f.createdFrom / 1000);
}

export function entryMatches(e: ArchiveEntry, f: ListFilter): boolean {
  return (
    (f.status === undefined || e.status === f.status) &&
    (f.vin === undefined || e.vin === f.vin) &&
    (f.reference === undefined || e.referenceDigest === digest(f.reference))
  );
}
