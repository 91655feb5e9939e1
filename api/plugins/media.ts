import type { FastifyReply, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import { sendPhoto } from "./send-photo.ts";
import type { MediaRecord, Scope } from "../../core/ports/records.ts";
import type { Services } from "../../core/runtime/services.ts";

/** Photos and evidence photos: who may see which, and sending one as JPEG (send-photo.ts). */
export type Media = {
  /** The photo's record where the scope may see it, else null. */
  get(scope: Scope, id: string): Promise<MediaRecord | null>;
  /** Answers with the photo (ETag, 304, streamed from the blob store); `what` names it in a 404. */
  send(request: FastifyRequest, reply: FastifyReply, id: string, media: MediaRecord | null, what?: string): Promise<FastifyReply>;
};

declare module "fastify" {
  interface FastifyInstance {
    media: Media;
  }
}

/** The `media` decorator, for the route plugins that declare it as a dependency. */
export const mediaPlugin = fp<{ services: Services }>(
  async (app, { services: s }) => {
    app.decorate("media", {
      get: (scope, id) => s.inspections.getMedia(scope, id),
      send: (request, reply, id, media, what) => sendPhoto(s, request, reply, id, media, what),
    } satisfies Media);
  },
  { name: "media" },
);
