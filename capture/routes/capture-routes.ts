import type { FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { CLOSEUP } from "../../core/domain/closeups.ts";
import { checkPlace, type PhotoPlace, type VinCheck } from "../../core/operations/captures.ts";
import {
  type ANGLES,
  CaptureSession,
  CloseupParams,
  CloseupQuery,
  PHOTO_CONTENT_TYPES,
  PhotoParams,
  PhotoResult,
  SubmitResult,
  TokenParams,
  VinBody,
  VinResult,
} from "../../core/schemas/capture.ts";
import { ErrorBody } from "../../core/schemas/common.ts";
import { checkedAsItArrives, PHOTO_LIMITS } from "../photos/ingest-photo.ts";
import type {} from "../plugins/captures.ts";

const errors = {
  400: ErrorBody,
  404: ErrorBody,
  409: ErrorBody,
  410: ErrorBody,
  413: ErrorBody,
  415: ErrorBody,
  429: ErrorBody,
  500: ErrorBody,
  503: ErrorBody,
};

/**
 * The route's own check of its path parameters and query, run ahead of validation's place in the
 * lifecycle (a preParsing hook): the error is the one validation would raise, so it is answered the
 * same way, and a malformed request is 400 whatever state its link is in (not 410 for a closed one).
 */
function refuseInvalidParams(request: FastifyRequest): void {
  for (const [part, value] of [
    ["params", request.params],
    ["querystring", request.query],
  ] as const) {
    const result = request.getValidationFunction(part)?.(value) as { error?: unknown[] } | boolean | undefined;
    if (result && typeof result === "object" && result.error) {
      throw Object.assign(new Error(`Invalid ${part === "params" ? "path parameters" : "query"}.`), {
        statusCode: 400,
        validation: result.error,
        validationContext: part,
      });
    }
  }
}

/** The media type a request declares, without its parameters. */
const declaredType = (contentType: string | undefined) => (contentType ?? "").split(";")[0]!.trim().toLowerCase();

/**
 * The capture API: what the hosted page (and native capture apps) use. Authenticated by the capture
 * token alone; usable while the inspection is created or in_progress and before expires_at. What
 * each route does is the `captures` decorator's (capture/plugins/captures.ts); the routes parse HTTP
 * and shape the answers.
 */
const routes: FastifyPluginAsyncZod = async (app) => {
  const { captures } = app;
  app.addContentTypeParser([...PHOTO_CONTENT_TYPES], { parseAs: "buffer", bodyLimit: PHOTO_LIMITS.maxBytes }, (_request, body, done) =>
    done(null, body),
  );

  const upload = async (request: FastifyRequest, token: string, place: PhotoPlace) => {
    const declared = declaredType(request.headers["content-type"]);
    const { mediaId, photo, suggested } = await captures.upload(token, place, { body: request.body, declaredType: declared });
    return {
      media_id: mediaId,
      angle: place.angle as (typeof ANGLES)[number] | typeof CLOSEUP,
      width: photo.width,
      height: photo.height,
      quality: photo.quality,
      part: place.part,
      suggested_closeups: suggested,
    };
  };
  const vinResult = (vin: string, { matchesVehicle, decoded }: VinCheck) => ({
    vin,
    valid: true,
    matches_vehicle: matchesVehicle,
    ...decoded,
  });

  // The path (a photo's angle, a close-up's slot), the link, then the body's format as its first
  // bytes arrive: none waits for the whole body, and a malformed path is 400 whatever the link's state.
  const checkedFirst = async (request: FastifyRequest, _reply: unknown, payload: Parameters<typeof checkedAsItArrives>[0]) => {
    refuseInvalidParams(request);
    const params = request.params as { token: string; angle?: string };
    checkPlace(await captures.open(params.token), params.angle ?? CLOSEUP);
    const type = declaredType(request.headers["content-type"]);
    // Another Content-Type is refused by the router (415) without reading the body.
    return (PHOTO_CONTENT_TYPES as readonly string[]).includes(type) ? checkedAsItArrives(payload, type) : payload;
  };

  app.get(
    "/capture/v1/:token",
    {
      schema: {
        operationId: "captureSession",
        summary: "The capture session (opens the inspection)",
        tags: ["capture"],
        params: TokenParams,
        response: { 200: CaptureSession, ...errors },
      },
    },
    async (request) => captures.session(request.params.token),
  );

  app.put(
    "/capture/v1/:token/photos/:angle",
    {
      bodyLimit: PHOTO_LIMITS.maxBytes,
      preParsing: checkedFirst,
      schema: {
        operationId: "capturePhoto",
        summary: "Upload the photo of one angle (a retake replaces it)",
        tags: ["capture"],
        params: PhotoParams,
        response: { 200: PhotoResult, ...errors },
      },
    },
    async (request) => upload(request, request.params.token, { angle: request.params.angle, slot: null, part: null }),
  );

  app.put(
    "/capture/v1/:token/closeups/:n",
    {
      bodyLimit: PHOTO_LIMITS.maxBytes,
      preParsing: checkedFirst,
      schema: {
        operationId: "captureCloseup",
        summary: "Upload close-up n of damage, optionally naming its part (optional; a retake replaces it)",
        tags: ["capture"],
        params: CloseupParams,
        querystring: CloseupQuery,
        response: { 200: PhotoResult, ...errors },
      },
    },
    async (request) => upload(request, request.params.token, { angle: CLOSEUP, slot: request.params.n, part: request.query.part ?? null }),
  );

  app.get(
    "/capture/v1/:token/vin",
    {
      schema: {
        operationId: "captureVinDecode",
        summary: "Decode a VIN for the customer to check, without recording it",
        tags: ["capture"],
        params: TokenParams,
        querystring: VinBody,
        response: { 200: VinResult, ...errors },
      },
    },
    // Normalised and checked by VinBody's Vin.
    async (request) => vinResult(request.query.vin, await captures.checkVin(request.params.token, request.query.vin)),
  );

  app.post(
    "/capture/v1/:token/vin",
    {
      schema: {
        operationId: "captureVin",
        summary: "Confirm the VIN read from the vehicle or typed",
        tags: ["capture"],
        params: TokenParams,
        body: VinBody,
        response: { 200: VinResult, ...errors },
      },
    },
    async (request) => vinResult(request.body.vin, await captures.confirmVin(request.params.token, request.body.vin)),
  );

  app.post(
    "/capture/v1/:token/submit",
    {
      schema: {
        operationId: "captureSubmit",
        summary: "Submit the walkthrough for processing",
        tags: ["capture"],
        params: TokenParams,
        response: { 202: SubmitResult, ...errors },
      },
    },
    async (request, reply) => {
      await captures.submit(request.params.token);
      return reply.code(202).send({ status: "processing" as const });
    },
  );
};

/** Encapsulated (the photo body parser stays here), after the `captures` decorator it declares. */
export const captureRoutes = fp(routes, { name: "capture-routes", dependencies: ["captures"], encapsulate: true });
