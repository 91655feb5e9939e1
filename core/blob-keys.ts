/** Where each kind of blob lives in the blob store; one place, so writers and readers agree. */
export const photoBlobKey = (inspectionId: string, mediaId: string) => `photos/${inspectionId}/${mediaId}.jpg`;
export const evidenceBlobKey = (inspectionId: string, mediaId: string) => `evidence/${inspectionId}/${mediaId}.jpg`;
