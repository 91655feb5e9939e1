import type { Logger } from "pino";
import type { InspectionRecords } from "../core/adapters/kubernetes/inspection-records.ts";
import type { Clock } from "../core/runtime/time.ts";
import { repeat } from "./repeat.ts";

export type InspectionUpkeepOptions = {
  records: Pick<InspectionRecords, "unshown" | "show" | "unmigrated" | "migrate" | "prunable" | "prune" | "unrecognized" | "refuse">;
  /** How long a finished inspection's resource stays. */
  retentionMs: number;
  everyMs: number;
  clock: Clock;
  log: Logger;
};

/**
 * Where the Inspection resources are the store (INSPECTION_STORE=kubernetes), what the leading
 * operator does for them besides moving them:
 * - a resource the api has just made has no status (the api's account may not write it), so
 *   `kubectl get inspections` would show no phase until its first move: its status is written, as
 *   is any whose write after a move failed;
 * - one a release before kept in the Inspection alone (its capture annotation and status.store) is
 *   moved to its InspectionRecord, out of what `kubectl describe` prints;
 * - a finished one is pruned after the retention, so etcd holds what is current and not every
 *   inspection ever made. Each is archived to the blob store first and read from there from then on:
 *   its record, report, photos and events stay readable through the API;
 * - one deleted with kubectl (or with its namespace) is held by its finalizer until it is archived
 *   the same way, whatever its status: a delete loses nothing;
 * - one the service did not make (kubectl create by hand) is told, in its status, why it is ignored.
 */
export function startInspectionUpkeep(o: InspectionUpkeepOptions): { stop(): Promise<void> } {
  return repeat(
    async () => {
      for (const v of o.records.unmigrated()) {
        await o.records.migrate(v.record.id);
        o.log.info({ inspection_id: v.record.id }, "inspection's record moved from its Inspection to its InspectionRecord");
      }
      for (const v of o.records.unshown()) await o.records.show(v.record.id);
      for (const r of o.records.unrecognized()) {
        await o.records.refuse(r);
        o.log.warn({ name: r.metadata?.name }, "an Inspection the service did not make is ignored; its status says why");
      }
      for (const v of o.records.prunable(o.clock.now(), o.retentionMs)) {
        const deleted = v.object.metadata?.deletionTimestamp != null;
        const pruned = await o.records.prune(v);
        if (pruned && deleted)
          o.log.warn(
            { inspection_id: v.record.id, status: v.record.status },
            "inspection's resource deleted; archived first, the API still serves it",
          );
        else if (pruned) o.log.info({ inspection_id: v.record.id }, "finished inspection's resource pruned; its record is archived");
      }
    },
    o.everyMs,
    (err) => o.log.warn({ err }, "keeping the Inspection resources failed; trying again"),
  );
}
