import { EVENT_TYPES } from "../../core/domain/state-machine.ts";
import { PLAIN_TEXT_PATTERN } from "../plugins/strict-input.ts";
import { LINKS } from "./links.ts";
import { PHOTO_CONTENT_TYPES } from "../../core/schemas/capture.ts";
import { WEBHOOK_TEST_EVENT_TYPE } from "../../core/schemas/webhook.ts";
// Imported for its registration: the zod provider puts every named schema under components.
import "../../core/schemas/event.ts";

/**
 * What the OpenAPI document needs beyond what each route's zod schemas give it: the server, tags,
 * a description for every status, the response headers every operation shares, the capture API's
 * token authentication, Idempotency-Key on every /v1 POST, the rule every string of a query or a
 * JSON body follows (strict-input.ts), which bodies may be left out, the links from each response to
 * the operations that take its identifiers (links.ts), and the webhooks the service sends. These are
 * facts about the HTTP edge as a whole, so they are stated here once rather than on each route. A
 * plain function over the document.
 */

// biome-ignore lint/suspicious/noExplicitAny: an OpenAPI document is JSON of many shapes, edited in place here
type Json = Record<string, any>;

const TAGS = [
  { name: "Inspections", prefix: "/v1/inspections", description: "Create inspections, follow them, cancel them and fetch their reports." },
  { name: "Events", prefix: "/v1/events", description: "One event per state change, with its webhook delivery attempts." },
  { name: "Media", prefix: "/v1/media", description: "Photos and evidence photos, as JPEG." },
  {
    name: "Webhook setup",
    prefix: "/v1/webhook_",
    description: "The secret webhooks are signed with, its rotation, and test deliveries to a URL.",
  },
  {
    name: "Capture",
    prefix: "/capture/v1",
    description: "What the hosted capture page and native capture apps use; authenticated by the capture token in the path.",
  },
] as const;

/** What every request's input follows that the schemas cannot say (api/plugins/strict-input.ts), in words. */
const INPUT_RULES =
  "Every string of a query or a JSON body is free of control characters, bidirectional overrides and lone surrogates (each such string carries the pattern for the first two; a lone surrogate, which JSON writes only as an escape, is refused too); JSON bodies are UTF-8, at most 64 KiB, nested at most 32 deep. A method a path does not list answers 405 with Allow.";

const STATUS_DESCRIPTIONS: Record<string, string> = {
  200: "Success.",
  201: "Created.",
  202: "Accepted: the work it asks for has started (processing, or a delivery).",
  304: "Not modified: the photo matches If-None-Match.",
  400: "The request is invalid: a parameter is missing, unknown or invalid, or the body is not valid JSON (see `error.code` and `error.param`).",
  401: "No valid API key: missing, malformed, unknown or revoked.",
  404: "No such object, or not one this key can see.",
  409: "The request conflicts with the object's state (see `error.code`).",
  410: "The capture link is no longer active (the inspection was submitted, canceled or expired).",
  413: "The body is too large (JSON: 64 KiB; photos: 15 MiB or 40 megapixels).",
  415: "The Content-Type is not accepted, or the body is not what it declares.",
  422: "This Idempotency-Key was used with a different request.",
  429: "Too many requests: retry after Retry-After seconds.",
  500: "An internal error; retry, or contact support with the Request-Id.",
  503: "The request is recorded but its outcome is not yet confirmed; retry it to see the outcome.",
};

const digits = { type: "string", pattern: "^[0-9]+$" };
const HEADERS: Json = {
  "Request-Id": {
    description: "The request's id (`req_…`), also in an error's `request_id`.",
    required: true,
    schema: { type: "string", pattern: "^req_[a-z0-9]+$" },
  },
  "RateLimit-Limit": {
    description: "Requests allowed in the window (per API key; failed authentications per client address).",
    schema: digits,
  },
  "RateLimit-Remaining": { description: "Requests left in the window.", schema: digits },
  "RateLimit-Reset": { description: "Seconds until the window resets.", schema: digits },
  "Retry-After": { description: "Seconds to wait before retrying.", required: true, schema: digits },
  "Idempotent-Replayed": {
    description: "`true` when this is the stored response of an earlier request with the same Idempotency-Key.",
    schema: { type: "string", enum: ["true"] },
  },
  ETag: { description: "The photo's entity tag, for If-None-Match.", required: true, schema: { type: "string" } },
  Location: { description: "The path of the created inspection.", required: true, schema: { type: "string" } },
  "Content-Disposition": {
    description: 'A download named after the inspection: `attachment; filename="insp_….pdf"`.',
    required: true,
    schema: { type: "string" },
  },
  "WWW-Authenticate": { description: "The Bearer challenge (RFC 6750).", required: true, schema: { type: "string" } },
};

const ref = (name: string) => ({ $ref: `#/components/headers/${name}` });

/** The headers a response of this operation and status carries. */
function headersFor(path: string, method: string, status: string): string[] {
  const names = ["Request-Id", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"];
  if (status === "429") names.push("Retry-After");
  if (status === "401") names.push("WWW-Authenticate");
  if (method === "post" && path.startsWith("/v1/")) names.push("Idempotent-Replayed");
  if (status === "201") names.push("Location");
  if (path.startsWith("/v1/media/") && (status === "200" || status === "304")) names.push("ETag");
  if (path.endsWith("/report.pdf") && status === "200") names.push("Content-Disposition");
  return names;
}

const IDEMPOTENCY_KEY = {
  name: "Idempotency-Key",
  in: "header",
  required: false,
  description:
    "Makes a retry safe: the first response is replayed for 24 hours for the same request (see the contract's Idempotency section).",
  schema: { type: "string", minLength: 1, maxLength: 255, pattern: "^[\\x21-\\x7e][\\x20-\\x7e]*$" },
};

const PHOTO_BODY = {
  required: true,
  description: "The photo's bytes; the format must be the one Content-Type names.",
  content: Object.fromEntries(PHOTO_CONTENT_TYPES.map((type) => [type, { schema: { type: "string", format: "binary" } }])),
};

/** Each event type as an OpenAPI 3.1 webhook: the signed POST the service sends to notify_url. */
function webhooks(): Json {
  const signatureHeaders = [
    {
      name: "webhook-id",
      in: "header",
      required: true,
      description: "The event id (`evt_…`); deduplicate by it.",
      schema: { type: "string" },
    },
    { name: "webhook-timestamp", in: "header", required: true, description: "Unix seconds when the delivery was signed.", schema: digits },
    {
      name: "webhook-signature",
      in: "header",
      required: true,
      description:
        "`v1,<base64 HMAC-SHA256 of id.timestamp.body>` (Standard Webhooks); during a secret rotation's overlap, one per secret, space-separated.",
      schema: { type: "string" },
    },
  ];
  const signedPost = (type: string, summary: string, schema: Json, answered: string) => ({
    post: {
      operationId: `webhook_${type.replace(".", "_")}`,
      summary,
      tags: ["Webhooks"],
      parameters: signatureHeaders,
      requestBody: { required: true, content: { "application/json": { schema } } },
      responses: { "200": { description: answered } },
    },
  });
  const retried = "Any 2xx within 15 s counts as delivered; anything else is retried on the contract's schedule.";
  return {
    ...Object.fromEntries(
      EVENT_TYPES.map((type) => [
        type,
        signedPost(
          type,
          `${type}: the inspection moved to ${type.split(".")[1]}`,
          { allOf: [{ $ref: "#/components/schemas/WebhookEvent" }, { type: "object", properties: { type: { const: type } } }] },
          retried,
        ),
      ]),
    ),
    [WEBHOOK_TEST_EVENT_TYPE]: signedPost(
      WEBHOOK_TEST_EVENT_TYPE,
      `${WEBHOOK_TEST_EVENT_TYPE}: sent only by POST /v1/webhook_tests, to check a receiver`,
      { $ref: "#/components/schemas/WebhookTestEvent" },
      "Any 2xx within 15 s counts as received; the test is not stored and not retried.",
    ),
  };
}

const COMPONENT_REF = "#/components/schemas/";

/**
 * Gives every string of a request schema that has no pattern, enum or const of its own the pattern
 * of the characters strict-input.ts refuses in every string of a query and a JSON body (control
 * characters, bidirectional overrides; lone surrogates are said in INPUT_RULES), following
 * references into components. A string with a pattern of its own (a VIN, a cursor, an integer in the
 * query) already excludes those characters.
 */
function plainTextInputs(doc: Json): void {
  const seen = new Set<Json>();
  const visit = (schema: unknown): void => {
    if (schema === null || typeof schema !== "object" || seen.has(schema as Json)) return;
    const node = schema as Json;
    seen.add(node);
    if (typeof node.$ref === "string" && node.$ref.startsWith(COMPONENT_REF)) {
      visit(doc.components.schemas[node.$ref.slice(COMPONENT_REF.length)]);
    }
    const types = [node.type].flat();
    if (types.includes("string") && node.pattern === undefined && node.enum === undefined && node.const === undefined) {
      node.pattern = PLAIN_TEXT_PATTERN;
    }
    for (const key of ["items", "additionalProperties", "not"]) visit(node[key]);
    for (const key of ["prefixItems", "anyOf", "oneOf", "allOf"]) for (const sub of node[key] ?? []) visit(sub);
    for (const sub of Object.values(node.properties ?? {})) visit(sub);
  };
  for (const operations of Object.values(doc.paths as Json)) {
    for (const op of Object.values(operations as Json)) {
      for (const parameter of op.parameters ?? []) if (parameter.in === "query") visit(parameter.schema);
      visit(op.requestBody?.content?.["application/json"]?.schema);
    }
  }
}

/**
 * A JSON body that may be null may also be left out (the service reads no body as none): Fastify's
 * OpenAPI output marks every body required, so such a body is marked optional here, as Stripe's
 * document marks the body of an operation whose parameters are all optional.
 */
function optionalBodies(op: Json): void {
  const schema = op.requestBody?.content?.["application/json"]?.schema;
  if (schema?.anyOf?.some((branch: Json) => branch.type === "null")) op.requestBody.required = false;
}

/** Components nothing refers to (the zod provider registers an input twin of each named schema). */
function dropUnused(doc: Json): void {
  const text = JSON.stringify({ ...doc, components: { ...doc.components, schemas: undefined } });
  let schemas = doc.components.schemas as Json;
  for (;;) {
    const used = new Set([...`${text}${JSON.stringify(schemas)}`.matchAll(/#\/components\/schemas\/([\w.-]+)/g)].map((m) => m[1]));
    const kept = Object.fromEntries(Object.entries(schemas).filter(([name]) => used.has(name)));
    if (Object.keys(kept).length === Object.keys(schemas).length) break;
    schemas = kept;
  }
  doc.components.schemas = schemas;
}

export function completeDocument(doc: Json, publicUrl: string): Json {
  doc.servers = [{ url: publicUrl, description: "This deployment (PUBLIC_URL)." }];
  doc.info.description = `${doc.info.description} ${INPUT_RULES}`;
  doc.info.license = { name: "Proprietary" };
  doc.tags = [
    ...TAGS.map(({ name, description }) => ({ name, description })),
    { name: "Webhooks", description: "What the service POSTs to notify_url, signed per Standard Webhooks." },
  ];
  doc.components.headers = HEADERS;
  for (const [path, operations] of Object.entries(doc.paths as Json)) {
    for (const [method, op] of Object.entries(operations as Json)) {
      const tag = TAGS.find((t) => path.startsWith(t.prefix));
      if (tag) op.tags = [tag.name];
      if (path.startsWith("/capture/")) op.security = [];
      if (method === "post" && path.startsWith("/v1/")) {
        op.parameters = [...(op.parameters ?? []).filter((p: Json) => p.name.toLowerCase() !== "idempotency-key"), IDEMPOTENCY_KEY];
      }
      if (method === "put" && (path.endsWith("/photos/{angle}") || path.endsWith("/closeups/{n}"))) op.requestBody = PHOTO_BODY;
      optionalBodies(op);
      for (const [status, response] of Object.entries(op.responses as Json)) {
        if (!response.description || response.description === "Default Response")
          response.description = STATUS_DESCRIPTIONS[status] ?? "See the contract.";
        response.headers = Object.fromEntries(headersFor(path, method, status).map((name) => [name, ref(name)]));
        const links = LINKS[op.operationId]?.[status];
        if (links) response.links = links;
      }
    }
  }
  doc.webhooks = webhooks();
  dropUnused(doc);
  plainTextInputs(doc);
  return doc;
}
