import { ApiException } from "@kubernetes/client-node";

/** The API server's answers its callers act on: a write on a version replaced since, an object gone. */
export const CONFLICT = 409;
export const NOT_FOUND = 404;

/** The HTTP status of a failed call to the API server; null for any other failure (the server out of reach). */
export const apiStatus = (error: unknown): number | null => (error instanceof ApiException ? error.code : null);
