import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { notFound } from "../../core/errors.ts";
import { commonErrorResponses } from "../../core/schemas/common.ts";
import { IdParams } from "../../core/schemas/inspection.ts";
import type { Services } from "../../core/services.ts";

export const mediaRoutes =
  (s: Services): FastifyPluginAsyncZod =>
  async (app) => {
    app.get(
      "/v1/media/:id/full.jpg",
      {
        schema: {
          operationId: "retrieveMedia",
          summary: "Retrieve a photo or evidence photo as JPEG",
          params: IdParams,
          headers: z.object({ "if-none-match": z.string().optional() }),
          response: {
            200: { description: "The JPEG", content: { "image/jpeg": { schema: z.any() } } },
            304: z.null().describe("Not modified"),
            ...commonErrorResponses,
          },
        },
      },
      async (request, reply) => {
        const media = await s.inspections.getMedia(request.scope, request.params.id);
        const bytes = media ? await s.blobs.get(media.blobKey) : null;
        if (!media || !bytes) throw notFound("media", request.params.id);
        reply.header("etag", media.etag).header("cache-control", "private, max-age=3600");
        if (request.headers["if-none-match"]?.split(/\s*,\s*/).includes(media.etag)) return reply.code(304).send(null);
        return reply.type("image/jpeg").header("content-length", bytes.length).send(bytes);
      },
    );
  };
