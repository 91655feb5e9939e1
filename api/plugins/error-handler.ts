import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import { hasZodFastifySchemaValidationErrors } from "fastify-type-provider-zod";
import { ApiError, isApiError, type ErrorCode } from "../../core/domain/errors.ts";
import { newId } from "../../core/domain/ids.ts";
import { PHOTO_CONTENT_TYPES } from "../../core/schemas/capture.ts";
import { requestLine, type RouteMethods } from "./route-methods.ts";
import { bodyStillArriving, closeInStages } from "./staged-close.ts";

type ValidationIssue = { keyword: string; instancePath: string; message: string; params: Record<string, unknown> };

/** A zod validation failure → the contract's parameter_missing / parameter_unknown / parameter_invalid. */
function fromValidation(issues: ValidationIssue[], context: string | undefined, data: unknown): ApiError {
  const issue = issues[0]!;
  const path = issue.instancePath.split("/").filter(Boolean);
  if (issue.keyword === "unrecognized_keys") {
    const key = (issue.params.keys as string[])[0]!;
    const param = [...path, key].join(".");
    return new ApiError("parameter_unknown", `Received unknown parameter: '${param}'.`, { param });
  }
  const param = path.length ? path.join(".") : context === "body" ? null : (context ?? null);
  const value = path.reduce<unknown>(
    (node, key) => (node !== null && typeof node === "object" ? (node as Record<string, unknown>)[key] : undefined),
    data,
  );
  // A missing enum field is zod's invalid_value, a missing other field its invalid_type: missing either way.
  if ((issue.keyword === "invalid_type" || issue.keyword === "invalid_value") && value === undefined) {
    return new ApiError("parameter_missing", `Missing required parameter: '${param}'.`, { param });
  }
  if (param === null) return new ApiError("parameter_invalid", "The request body must be a JSON object.", { param });
  return new ApiError("parameter_invalid", `Invalid '${param}': ${issue.message.replace(/\.?$/, ".")}`, { param });
}

const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_INVALID_JSON_BODY: "body_invalid_json",
  FST_ERR_CTP_EMPTY_JSON_BODY: "body_invalid_json",
  FST_ERR_CTP_BODY_TOO_LARGE: "body_too_large",
  FST_ERR_CTP_INVALID_MEDIA_TYPE: "unsupported_media_type",
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: "parameter_invalid",
};

const FASTIFY_MESSAGES: Partial<Record<ErrorCode, string>> = {
  body_invalid_json: "The request body is not valid JSON.",
  body_too_large: "The request body is too large: JSON bodies may be at most 64 KiB, photos 15 MiB.",
  unsupported_media_type: `Unsupported Content-Type: send application/json (photos: ${PHOTO_CONTENT_TYPES.join(", ")}).`,
};

export function toApiError(error: FastifyError, request: FastifyRequest): ApiError {
  if (isApiError(error)) {
    // A 5xx the service chose to answer (a store out of reach) is still worth a line in the log.
    if (error.statusCode >= 500 && error.cause !== undefined) {
      request.log.warn({ err: error.cause, method: request.method, url: request.routeOptions.url }, error.message);
    }
    return error;
  }
  if (hasZodFastifySchemaValidationErrors(error)) {
    const context = error.validationContext;
    const data =
      context === "body"
        ? request.body
        : context === "querystring"
          ? request.query
          : context === "params"
            ? request.params
            : request.headers;
    return fromValidation(error.validation as unknown as ValidationIssue[], context, data);
  }
  const code = error.code ? FASTIFY_CODES[error.code] : undefined;
  if (code) return new ApiError(code, FASTIFY_MESSAGES[code] ?? error.message);
  if (error instanceof SyntaxError || (error.statusCode === 400 && /JSON/i.test(error.message))) {
    return new ApiError("body_invalid_json", FASTIFY_MESSAGES.body_invalid_json!);
  }
  if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
    return new ApiError("parameter_invalid", error.message);
  }
  request.log.error({ err: error, method: request.method, url: request.routeOptions.url }, "unhandled error");
  return new ApiError(
    "internal_error",
    "An internal error occurred; it has been logged. Retry the request, or contact support with its request id.",
  );
}

const JSON_UTF8 = "application/json; charset=utf-8";

/** The contract's error body. */
const errorBody = (error: ApiError, requestId: string) =>
  JSON.stringify({ error: { type: error.type, code: error.code, message: error.message, param: error.param, request_id: requestId } });

/**
 * Sets the Request-Id header itself, beside the body's `request_id`: errors the router raises come
 * here without the onRequest hook that sets it on every other response.
 */
export function sendError(reply: FastifyReply, request: FastifyRequest, error: ApiError): FastifyReply {
  for (const [name, value] of Object.entries(error.headers)) reply.header(name, value);
  // Refused before its body was whole (an upload refused from its first bytes): answered, then closed
  // in stages so that the client can read the answer.
  if (bodyStillArriving(request.raw)) {
    reply.header("connection", "close");
    closeInStages(request.raw, request.raw.socket);
  }
  return reply.code(error.statusCode).header("request-id", request.id).type(JSON_UTF8).send(errorBody(error, request.id));
}

/**
 * Errors the router raises before any route or hook runs: a path that is not valid percent-encoding,
 * and a path segment longer than the router takes (Fastify's `frameworkErrors`). Without this they
 * would leave in Fastify's own shape and without a Request-Id.
 */
export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const path = request.url.split("?")[0]!;
  const apiError =
    error.code === "FST_ERR_MAX_PARAM_LENGTH"
      ? // Longer than any id or token the API hands out, so it names nothing.
        new ApiError("resource_missing", `Unrecognized request URL (${request.method} ${path}): a path segment is longer than any id.`)
      : new ApiError(
          "parameter_invalid",
          `The request URL (${request.method} ${path}) is not valid: a path segment is not well-formed percent-encoding.`,
        );
  return sendError(reply, request, apiError);
}

/** An error answered on a raw socket, which then closes: the contract's shape, a Request-Id, and the error's own headers. */
function rawAnswer(apiError: ApiError): string {
  const requestId = newId("req");
  const body = errorBody(apiError, requestId);
  const headers = Object.entries(apiError.headers).map(([name, value]) => `${name}: ${value}\r\n`);
  return `HTTP/1.1 ${apiError.statusCode} ${STATUS_CODES[apiError.statusCode]}\r\n${headers.join("")}Request-Id: ${requestId}\r\nContent-Type: ${JSON_UTF8}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}

/**
 * A method name Node's parser does not know (it knows a fixed list): 405 with Allow where the path
 * is served, 404 where it is not, as Fastify's not-found handler answers the methods it knows.
 */
function unknownMethod(routes: RouteMethods, raw: Buffer): ApiError | null {
  const line = requestLine(raw);
  return line && unrouted(routes, line.method, line.path);
}

/**
 * Requests Node's HTTP parser refuses before Fastify sees them (headers over 16 KiB, a method it does
 * not know, a request that is not HTTP, a client too slow to send one): answered on the raw socket,
 * which then closes, still in the contract's shape and with a Request-Id (Fastify's `clientErrorHandler`).
 */
export function clientErrorHandler(routes: RouteMethods) {
  return (error: Error & { code?: string; rawPacket?: unknown }, socket: Duplex): void => {
    // A reset connection has no one left to answer.
    if (error.code === "ECONNRESET" || socket.destroyed) return;
    const apiError =
      (error.code === "HPE_INVALID_METHOD" && Buffer.isBuffer(error.rawPacket) ? unknownMethod(routes, error.rawPacket) : null) ??
      (error.code === "HPE_HEADER_OVERFLOW"
        ? new ApiError("request_headers_too_large", "The request headers are too large: at most 16 KiB in all.")
        : error.code === "ERR_HTTP_REQUEST_TIMEOUT"
          ? new ApiError("request_timeout", "The request was not received in time.")
          : new ApiError("request_malformed", "The request is not valid HTTP/1.1."));
    if (socket.writable) socket.write(rawAnswer(apiError));
    socket.destroy(error);
  };
}

/**
 * What Node's HTTP server answers on its own, bare, unless told otherwise: an `Expect` other than
 * 100-continue (417) and `CONNECT` (closed without a word). Both get the contract's shape here.
 * A missing Host header is let through to Fastify (`requireHostHeader: false`) and refused by the
 * onRequest hook below, so it is answered like any other error.
 */
export function answerBareRequests(server: Server, routes: RouteMethods): void {
  server.on("checkExpectation", (request: IncomingMessage, response: ServerResponse) => {
    const error = new ApiError(
      "expectation_failed",
      `Expect: ${request.headers.expect} is not supported; send the request without it (100-continue is supported).`,
    );
    const requestId = newId("req");
    const body = errorBody(error, requestId);
    response
      .writeHead(error.statusCode, {
        "request-id": requestId,
        "content-type": JSON_UTF8,
        "content-length": Buffer.byteLength(body),
        connection: "close",
      })
      .end(body);
  });
  // CONNECT to a path is answered as any method a path is not served with; to an authority (host:port), as a proxy request.
  server.on("connect", (request: IncomingMessage, socket: Duplex) => {
    const path = request.url?.startsWith("/") ? request.url.split("?")[0]! : null;
    const error =
      (path === null ? null : routes.methodNotAllowed("CONNECT", path)) ??
      new ApiError("method_not_allowed", "CONNECT is not allowed: this is not a proxy.", { headers: { allow: "GET, POST, PUT" } });
    socket.end(rawAnswer(error));
  });
}

/** For the onRequest hook: HTTP/1.1 requires a Host header (RFC 9112 §3.2), as Node would have enforced. */
export function requireHost(request: FastifyRequest): void {
  if (request.headers.host === undefined && request.raw.httpVersion === "1.1") {
    throw new ApiError("request_malformed", "The request has no Host header; HTTP/1.1 requires one.");
  }
}

/** 405 where the path is served with other methods, else 404. */
const unrouted = (routes: RouteMethods, method: string, path: string): ApiError =>
  routes.methodNotAllowed(method, path) ??
  new ApiError("resource_missing", `Unrecognized request URL (${method} ${path}).`, { param: null });

/**
 * HTTP shaping of every error happens here, once. A request no route takes is answered at once
 * (onRequest: 405 where its path is served with other methods, else 404), before its body is read
 * or parsed, so no body, or its absence, makes it anything else (Fastify would parse one, and wants a
 * Content-Type with QUERY); paths under `ownNotFound` are left to a not-found handler of their own
 * (the dashboard's pages). That hook is the not-found handler's alone: Fastify gives its not-found
 * handler the onRequest hooks of the context it is set in, so the routes, which the hook would only
 * let through, do not run it on every request.
 */
export const errorHandler = fp<{ routes: RouteMethods; ownNotFound: string[] }>(
  async (app, { routes, ownNotFound }) => {
    app.addHook("onRoute", (route) => routes.record(route.url, route.method));
    app.setErrorHandler((error: FastifyError, request, reply) => sendError(reply, request, toApiError(error, request)));
    await app.register(async (notFound) => {
      notFound.addHook("onRequest", (request, reply, done) => {
        const path = request.url.split("?")[0]!;
        if (ownNotFound.some((prefix) => path.startsWith(prefix))) return done();
        sendError(reply, request, unrouted(routes, request.method, path));
      });
      notFound.setNotFoundHandler((request, reply) =>
        sendError(reply, request, unrouted(routes, request.method, request.url.split("?")[0]!)),
      );
    });
  },
  { name: "error-handler" },
);
