import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { sendPhoto } from "../../core/net/send-photo.ts";
import { commonErrorResponses } from "../../core/schemas/common.ts";
import { IdParams } from "../../core/schemas/inspection.ts";
import type { Services } from "../../core/runtime/services.ts";

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
      async (request, reply) =>
        sendPhoto(s, request, reply, request.params.id, await s.inspections.getMedia(request.scope, request.params.id), "media"),
    );
  };
