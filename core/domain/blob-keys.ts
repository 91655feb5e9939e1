/** Where each kind of blob lives in the blob store; one place, so writers and readers agree. */
export const photoBlobKey = (inspectionId: string, mediaId: string) => `photos/${inspectionId}/${mediaId}.jpg`;
export const evidenceBlobKey = (inspectionId: string, mediaId: string) => `evidence/${inspectionId}/${mediaId}.jpg`;
/** An inspection's report, the JSON `GET /v1/inspections/:id/report` answers: written once (BlobStore.create). */
export const reportBlobKey = (inspectionId: string) => `reports/${inspectionId}.json`;
/** A photo's pixels scaled for a model's input size, made on upload (inference/detection/model-input.ts). */
export const modelInputBlobKey = (inspectionId: string, mediaId: string, size: number) =>
  `model-inputs/${inspectionId}/${mediaId}-${size}.rgb`;

/** The recycled-photo index of one account and environment (core/operations/photo-index.ts): its folder. */
export const photoIndexFolder = (accountId: string, livemode: boolean) => `photo-index/${accountId}/${livemode ? "live" : "test"}`;

/**
 * A key as every blob store takes it: a relative path inside the store (a directory, a bucket, a
 * map), so no key can reach outside it. Keys are made by the service, but this is the last guard.
 */
export function checkedBlobKey(key: string): string {
  if (key === "" || key.startsWith("/") || key.split("/").includes("..")) throw new Error(`blob key escapes the store: ${key}`);
  return key;
}

/** Names in byte order (as S3 lists keys), after `startAfter`, at most `limit`. */
export function byteOrder(names: string[], startAfter: string | null, limit: number): string[] {
  const order = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));
  return names
    .filter((n) => startAfter === null || order(n, startAfter) > 0)
    .sort(order)
    .slice(0, limit);
}
