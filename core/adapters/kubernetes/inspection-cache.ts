import { CustomObjectsApi, type KubeConfig, Watch } from "@kubernetes/client-node";
import { ResourceCache, type ResourceCacheOptions } from "./resource-cache.ts";
import { INSPECTION_RESOURCE } from "../../schemas/inspection-resource.ts";
import type { InspectionResource } from "./inspection-resource.ts";

/** A full relist this often besides the watch, as informers resync: the service's, unless a test says otherwise. */
export const INSPECTION_RELIST_MS = 5 * 60_000;

/**
 * A namespace's Inspection resources, listed and watched through `kc` (the projector and the
 * Kubernetes inspection store read them).
 */
export function inspectionCache(
  kc: KubeConfig,
  namespace: string,
  options: Partial<Omit<ResourceCacheOptions<InspectionResource>, "list" | "watch" | "path">> = {},
): ResourceCache<InspectionResource> {
  const api = kc.makeApiClient(CustomObjectsApi);
  const { group, version, plural } = INSPECTION_RESOURCE;
  return new ResourceCache<InspectionResource>({
    relistMs: INSPECTION_RELIST_MS,
    ...options,
    list: async () => {
      const listed = (await api.listNamespacedCustomObject({ group, version, plural, namespace })) as {
        items: InspectionResource[];
        metadata: { resourceVersion: string };
      };
      return { items: listed.items, resourceVersion: listed.metadata.resourceVersion };
    },
    watch: new Watch(kc),
    path: `/apis/${group}/${version}/namespaces/${namespace}/${plural}`,
  });
}
