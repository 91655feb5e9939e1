import { CustomObjectsApi } from "@kubernetes/client-node";
import { blobStoreFrom } from "../../core/adapters/blob-store-from.ts";
import { apiStatus, NOT_FOUND } from "../../core/adapters/kubernetes/api-status.ts";
import { InspectionRecords, type InspectionView } from "../../core/adapters/kubernetes/inspection-records.ts";
import { prunedAt } from "../../core/adapters/kubernetes/inspection-resource.ts";
import { isTerminal, STATUSES } from "../../core/domain/state-machine.ts";
import type { ListFilter } from "../../core/ports/inspection-store.ts";
import { EXPIRES_IN } from "../../core/domain/capture-plan.ts";
import { type Config, ConfigError } from "../../core/runtime/config.ts";
import { INSPECTION_RECORD_RESOURCE, INSPECTION_RESOURCE } from "../../core/schemas/inspection-resource.ts";
import { accountStoresOnly } from "../account-stores.ts";
import { kubeConfig } from "./kube-config.ts";

/** restored: made live; live: live already; leftArchived: finished inspections within the scan, past the retention. */
export type RestoreCounts = { restored: number; live: number; leftArchived: number };

const DAY_MS = 86_400_000;
/** How long the API server may answer 404 for a kind whose CRD was just put back (its handlers installing). */
const CRD_SETTLING_MS = 30_000;

/** `write`, tried again while the API server answers 404 for the kind, as it may for a moment after its CRD is back. */
async function madeAgain<T>(write: () => Promise<T>, until = Date.now() + CRD_SETTLING_MS): Promise<T> {
  for (;;) {
    try {
      return await write();
    } catch (error) {
      if (apiStatus(error) !== NOT_FOUND || Date.now() > until) throw error;
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  }
}
const PAGE = 1_000;

/** What restore refuses to start on, said as it is to the platform team (exit 1, no usage text). */
export class RestoreRefused extends Error {}

/**
 * The API server serves both kinds, asked once: the caches below would list and watch a kind that is
 * not there, or an API server that cannot be reached, for ever, and the command would wait silently.
 * A 404 is the CRDs not back yet; any other failure (no API server, no permission) is said as it is.
 */
async function crdsServed(namespace: string): Promise<void> {
  const api = kubeConfig().makeApiClient(CustomObjectsApi);
  for (const kind of [INSPECTION_RESOURCE, INSPECTION_RECORD_RESOURCE]) {
    const { group, version, plural } = kind;
    await api.listNamespacedCustomObject({ group, version, plural, namespace, limit: 1 }).catch((error: unknown) => {
      if (apiStatus(error) !== NOT_FOUND) throw error;
      throw new RestoreRefused(
        `restore: the API server does not serve ${plural}.${group} (404): put the CRDs back first (helm upgrade, or kubectl apply -f crds/), then run restore again`,
      );
    });
  }
}

/**
 * `vehicle-inspection restore`: after the Inspection resources were lost (`kubectl delete crd`, which
 * the archive finalizer turns into an archive of every inspection first, or a cluster rebuilt
 * without them), makes live again every archived inspection that would still be live: open ones,
 * and those finished less than the retention ago, their capture links working again. The rest stay
 * in the archive and are served from there as before. Run with the service's own environment, once
 * the CRDs are back (`helm upgrade`); a re-run restores nothing twice.
 */
export async function restoreFromArchive(config: Config, now: number, print: (line: string) => void): Promise<RestoreCounts> {
  if (config.inspectionStore !== "kubernetes")
    throw new ConfigError("restore needs INSPECTION_STORE=kubernetes: it makes archived inspections Inspection resources again");
  await crdsServed(config.namespace);
  const archive = blobStoreFrom(config.blobs);
  // The accounts first: a failure of theirs (NATS away) after the caches had started would leave them
  // listing and watching, and the command running after its error.
  const { keys, close } = await accountStoresOnly(config);
  const records = await InspectionRecords.open(kubeConfig(), config.namespace, { archive }).catch(async (error) => {
    await close();
    throw error;
  });
  const counts: RestoreCounts = { restored: 0, live: 0, leftArchived: 0 };
  // A finished inspection was made at most its capture link's lifetime before it finished (and
  // detection and deliveries take minutes): older ones are past the retention, their entries unread.
  const createdFrom = now - config.resourceRetentionMs - Math.max(EXPIRES_IN.max * 1000, config.inspectionTtlMs) - DAY_MS;
  const restore = async (id: string, status: string, read?: InspectionView) => {
    if (await madeAgain(() => records.restore(id, read))) {
      counts.restored++;
      print(`restored ${id} (${status})`);
    } else counts.live++;
  };
  try {
    for (const account of await keys.accounts()) {
      for (const livemode of [false, true]) {
        const scope = { accountId: account.id, livemode };
        const each = async (filter: Omit<ListFilter, "limit">, act: (id: string) => Promise<void>) => {
          for (let after: ListFilter["after"]; ; ) {
            const page = await records.archivedPage(scope, { ...filter, limit: PAGE, ...(after ? { after } : {}) });
            for (const { id } of page) await act(id);
            if (page.length < PAGE) return;
            after = page.at(-1)!;
          }
        };
        // Open ones, whatever their age: chosen by the index's names alone.
        for (const status of STATUSES.filter((st) => !isTerminal(st))) await each({ status }, (id) => restore(id, status));
        // Finished ones within the retention: read to know when they finished.
        await each({ createdFrom }, async (id) => {
          const v = records.byId(id) ? null : await records.archived(id);
          if (!v) counts.live++;
          else if (!isTerminal(v.record.status))
            return; // restored above
          else if ((prunedAt(v.record, config.resourceRetentionMs) ?? 0) <= now) counts.leftArchived++;
          else await restore(id, v.record.status, v);
        });
      }
    }
  } finally {
    await close();
    await records.close();
  }
  print(
    `${counts.restored} restored, ${counts.live} live already, ${counts.leftArchived} left in the archive (finished more than the retention ago; older ones are not counted)`,
  );
  return counts;
}
