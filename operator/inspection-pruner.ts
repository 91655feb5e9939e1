import type { Logger } from "pino";
import type { InspectionRecords } from "../core/adapters/kubernetes/inspection-records.ts";
import type { Clock } from "../core/time.ts";
import { repeat } from "./repeat.ts";

export type InspectionPrunerOptions = {
  records: Pick<InspectionRecords, "prunable" | "prune">;
  /** How long a finished inspection's resource stays. */
  retentionMs: number;
  everyMs: number;
  clock: Clock;
  log: Logger;
};

/**
 * Where the Inspection resources are the store (INSPECTION_STORE=kubernetes): the leading operator
 * prunes finished ones after the retention, so etcd holds what is current and not every inspection
 * ever made. Each is archived to the blob store first, and is read from there from then on: its
 * record, report, photos and events stay readable through the API.
 */
export function startInspectionPruner(o: InspectionPrunerOptions): { stop(): Promise<void> } {
  return repeat(
    async () => {
      for (const v of o.records.prunable(o.clock.now(), o.retentionMs)) {
        const pruned = await o.records.prune(v);
        if (pruned) o.log.info({ inspection_id: v.record.id }, "finished inspection's resource pruned; its record is archived");
      }
    },
    o.everyMs,
    (err) => o.log.warn({ err }, "pruning finished inspections failed; trying again"),
  );
}
