import { CustomObjectsApi, type KubeConfig, type KubernetesObject, Watch } from "@kubernetes/client-node";
import { ResourceCache, type ResourceCacheOptions } from "./resource-cache.ts";
import { INSPECTION_RESOURCE } from "../../schemas/inspection-resource.ts";
import type { InspectionResource } from "./inspection-resource.ts";

type Resource = { readonly group: string; readonly version: string; readonly plural: string };

/** A full relist this often besides the watch, as informers resync: the service's, unless a test says otherwise. */
export const INSPECTION_RELIST_MS = 5 * 60_000;

/**
 * An object without its managedFields, which no reader here needs and which the API server sends
 * with every object: about as much again as the fields they describe (server-side apply's record
 * of who set what). A write made from a held object leaves them out, and the API server keeps them.
 */
export function withoutManagedFields<T extends KubernetesObject>(o: T): T {
  if (!o.metadata?.managedFields) return o;
  const { managedFields: _, ...metadata } = o.metadata;
  return { ...o, metadata };
}

/**
 * A namespace's Inspection resources (or, given `resource`, another kind of the service's, as its
 * InspectionRecords), listed and watched through `kc` (the Kubernetes inspection store reads them).
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
    transform: withoutManagedFields,
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
