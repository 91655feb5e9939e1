import type { FastifyReply, FastifyRequest } from "fastify";
import { notFound } from "../../core/errors.ts";
import type { MediaRecord } from "../../core/ports/records.ts";
import type { Services } from "../../core/services.ts";

/**
 * A photo or evidence photo as JPEG, as GET /v1/media/:id/full.jpg answers (ETag, 304), for the
 * dashboard's and the shared report's photos. `media` is null where the caller may not see it: the
 * caller decides what it may see (scope, inspection), this only answers.
 */
export async function sendPhoto(
  s: Pick<Services, "blobs">,
  request: FastifyRequest,
  reply: FastifyReply,
  id: string,
  media: MediaRecord | null,
): Promise<FastifyReply> {
  if (!media) throw notFound("photo", id);
  // Private: a photo is the customer's; a browser may keep it, no shared cache may.
  reply.header("etag", media.etag).header("cache-control", "private, max-age=3600");
  if (request.headers["if-none-match"]?.split(/\s*,\s*/).includes(media.etag)) return reply.code(304).send();
  const bytes = await s.blobs.get(media.blobKey);
  if (!bytes) throw notFound("photo", id);
  return reply.type("image/jpeg").header("content-length", bytes.length).send(bytes);
}
