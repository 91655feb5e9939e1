import { describe, expect, it } from "vitest";
import { entryMatches, entryName, parseEntry, pastTheEnd, startAfter } from "../../core/adapters/kubernetes/archive-index.ts";
import { listed, newestFirst } from "../../core/domain/inspection-queries.ts";
import { TERMINAL_STATUSES } from "../../core/domain/state-machine.ts";
import type { ListFilter } from "../../core/ports/inspection-store.ts";
import { sampleInspection } from "../contract/fixtures.ts";

const scope = { accountId: "acct_a", livemode: false };
const t = Date.UTC(2026, 10, 25, 12);

/** Pruned inspections over three seconds, several a second, with references and VINs to filter on. */
const records = Array.from({ length: 60 }, (_, i) =>
  sampleInspection({
    createdAt: t + (i % 3) * 1000 + (i % 7),
    status: [...TERMINAL_STATUSES][i % TERMINAL_STATUSES.size]!,
    reference: i % 4 === 0 ? null : `ref ${i % 3} ~/é`,
    vin: i % 2 ? "1HGCM82633A004352" : "WVWZZZ1JZXW000001",
  }),
);

/** What a listing of the names selects for `f`, as InspectionRecords.archivedPage reads them. */
function fromNames(f: ListFilter): string[] {
  const names = records.map(entryName).sort();
  const from = startAfter(f);
  const ids: string[] = [];
  for (const name of names) {
    if (from !== null && name <= from) continue;
    const e = parseEntry(name)!;
    if (pastTheEnd(e, f)) break;
    if (entryMatches(e, f)) ids.push(e.id);
    if (ids.length >= f.limit) break;
  }
  return ids;
}

const expected = (f: ListFilter) =>
  records
    .filter((r) => listed(r, scope, f))
    .sort(newestFirst)
    .slice(0, f.limit)
    .map((r) => r.id);

describe("the archive's index of pruned inspections", () => {
  it("names sort in the list's order, and read back as what they name", () => {
    const byName = [...records].sort((a, b) => (entryName(a) < entryName(b) ? -1 : 1)).map((r) => r.id);
    expect(byName).toEqual([...records].sort(newestFirst).map((r) => r.id));
    const r = records[5]!;
    expect(parseEntry(entryName(r))).toMatchObject({ id: r.id, second: Math.floor(r.createdAt / 1000), status: r.status, vin: r.vin });
    expect(entryName(r)).not.toContain("/");
  });

  it("selects what the store's list selects, for every filter and from any cursor", () => {
    const sorted = [...records].sort(newestFirst);
    const filters: Omit<ListFilter, "limit">[] = [
      {},
      { status: "completed" },
      { vin: "WVWZZZ1JZXW000001" },
      { reference: "ref 1 ~/é" },
      { reference: "ref 1 ~/é", vin: "1HGCM82633A004352" },
      { createdFrom: t + 1000 },
      { createdBefore: t + 2000 },
      { createdFrom: t + 500, createdBefore: t + 1500, status: "canceled" },
    ];
    for (const filter of filters) {
      for (const cursor of [undefined, sorted[0], sorted[17], sorted[40], sorted.at(-1)]) {
        const f: ListFilter = { limit: 7, ...filter, ...(cursor ? { after: { createdAt: cursor.createdAt, id: cursor.id } } : {}) };
        expect(fromNames(f), JSON.stringify(f)).toEqual(expected(f));
      }
    }
  });
});
