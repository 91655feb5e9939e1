import { CustomObjectsApi, type KubeConfig, type KubernetesObject, Watch } from "@kubernetes/client-node";
import { ResourceCache, type ResourceCacheOptions } from "./resource-cache.ts";
import { INSPECTION_RESOURCE } from "../../schemas/inspection-resource.ts";
import type { InspectionResource } from "./inspection-resource.ts";

type Resource = { readonly group: string; readonly version: string; readonly plural: string };

/** A full relist this often besides the watch, as informers resync: the service's, unless a test says otherwise. */
export const INSPECTION_RELIST_MS = 5 * 60_000;

/**
 * A namespace's Inspection resources (or, given `resource`, another kind of the service's, as its
 * InspectionRecords), listed and watched through `kc` (the projector and the Kubernetes inspection
 * store read them).
 */
export function inspectionCache<T extends KubernetesObject = InspectionResource>(
  kc: KubeConfig,
  namespace: string,
  options: Partial<Omit<ResourceCacheOptions<T>, "list" | "watch" | "path">> = {},
  resource: Resource = INSPECTION_RESOURCE,
): ResourceCache<T> {
  const api = kc.makeApiClient(CustomObjectsApi);
  const { group, version, plural } = resource;
  return new ResourceCache<T>({
    relistMs: INSPECTION_RELIST_MS,
    ...options,
    list: async () => {
      const listed = (await api.listNamespacedCustomObject({ group, version, plural, namespace })) as {
        items: T[];
        metadata: { resourceVersion: string };
      };
      return { items: listed.items, resourceVersion: listed.metadata.resourceVersion };
    },
    watch: new Watch(kc),
    path: `/apis/${group}/${version}/namespaces/${namespace}/${plural}`,
  });
}
