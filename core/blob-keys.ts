/** Where each kind of blob lives in the blob store; one place, so writers and readers agree. */
export const photoBlobKey = (inspectionId: string, mediaId: string) => `photos/${inspectionId}/${mediaId}.jpg`;
export const evidenceBlobKey = (inspectionId: string, mediaId: string) => `evidence/${inspectionId}/${mediaId}.jpg`;
/** A photo's pixels scaled for a model's input size, made on upload (inference/detection/model-input.ts). */
export const modelInputBlobKey = (inspectionId: string, mediaId: string, size: number) =>
  `model-inputs/${inspectionId}/${mediaId}-${size}.rgb`;
