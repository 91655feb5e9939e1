import type { FastifyReply, FastifyRequest } from "fastify";
import { notFound } from "../../core/domain/errors.ts";
import type { MediaRecord } from "../../core/ports/records.ts";
import type { Services } from "../../core/runtime/services.ts";

/**
 * A photo or evidence photo as JPEG, for GET /v1/media/:id/full.jpg, the dashboard's photos and the
 * shared report's: ETag and 304 before the blob is even opened, then the blob streamed from the
 * store (S3's response piped through), never held whole. `media` is null where the caller may not
 * see it: the caller decides what it may see (scope, inspection), this only answers.
 */
export async function sendPhoto(
  s: Pick<Services, "blobs">,
  request: FastifyRequest,
  reply: FastifyReply,
  id: string,
  media: MediaRecord | null,
  what = "photo",
): Promise<FastifyReply> {
  if (!media) throw notFound(what, id);
  // Private: a photo is the customer's; a browser may keep it, no shared cache may.
  reply.header("etag", media.etag).header("cache-control", "private, max-age=3600");
  if (request.headers["if-none-match"]?.split(/\s*,\s*/).includes(media.etag)) return reply.code(304).send();
  const blob = await s.blobs.open(media.blobKey);
  if (!blob) throw notFound(what, id);
  return reply.type("image/jpeg").header("content-length", blob.bytes).send(blob.stream);
}
