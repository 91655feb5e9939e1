import fp from "fastify-plugin";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { commonErrorResponses } from "../../core/schemas/common.ts";
import { IdParams } from "../../core/schemas/inspection.ts";
import type {} from "../plugins/media.ts";

/** Photos as JPEG, through the `media` decorator (api/plugins/media.ts). */
const routes: FastifyPluginAsyncZod = async (app) => {
  const { media } = app;
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
    async (request, reply) => media.send(request, reply, request.params.id, await media.get(request.scope, request.params.id), "media"),
  );
};

export const mediaRoutes = fp(routes, { name: "media-routes", dependencies: ["media"], encapsulate: true });
