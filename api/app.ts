import Fastify, { LogController } from "fastify";
import swagger from "@fastify/swagger";
import { z } from "zod";
import {
  jsonSchemaTransform,
  jsonSchemaTransformObject,
  serializerCompiler,
  validatorCompiler,
  type ZodTypeProvider,
} from "fastify-type-provider-zod";
import type { ApiError } from "../core/domain/errors.ts";
import { newId } from "../core/domain/ids.ts";
import type { Services } from "../core/runtime/services.ts";
import type { Nats } from "../core/adapters/nats/nats-connection.ts";
import { capturesPlugin } from "../capture/plugins/captures.ts";
import { accountsPlugin } from "../dashboard/plugins/accounts.ts";
import { configPlugin } from "./plugins/config.ts";
import { eventsPlugin } from "./plugins/events.ts";
import { inspectionsPlugin } from "./plugins/inspections.ts";
import { mediaPlugin } from "./plugins/media.ts";
import { webhooksPlugin } from "./plugins/webhooks.ts";
import { captureRoutes } from "../capture/routes/capture-routes.ts";
import { pageRoutes } from "../capture/routes/page-routes.ts";
import { dashboardRoutes } from "../dashboard/dashboard-routes.ts";
import { sharedReportRoutes } from "../dashboard/routes/shared-report.ts";
import { authenticate, FAILED_AUTH_CODES, keyUseNoter } from "./plugins/auth.ts";
import { completeDocument } from "./openapi/complete-document.ts";
import { answerBareRequests, clientErrorHandler, errorHandler, frameworkErrors, requireHost } from "./plugins/error-handler.ts";
import { FailedAuthLimiter } from "./plugins/failed-auth-limit.ts";
import { idempotency } from "./plugins/idempotency.ts";
import { jsonBodyText, refuseBadStrings } from "./plugins/strict-input.ts";
import { perKeyRateLimit, perLinkRateLimit } from "./plugins/rate-limit.ts";
import { RouteMethods } from "./plugins/route-methods.ts";
import { requestMetrics } from "./plugins/request-metrics.ts";
import { requestLogger } from "./plugins/request-logger.ts";
import { probeRoutes, runChecks, serviceChecks } from "./routes/probe-routes.ts";
import { eventRoutes } from "./routes/events.ts";
import { inspectionRoutes } from "./routes/inspections.ts";
import { mediaRoutes } from "./routes/media.ts";
import { webhookRoutes } from "./routes/webhooks.ts";
import { reportPdfRoutes } from "./routes/report-pdf.ts";
import { siteRoutes } from "./routes/site-routes.ts";

export const JSON_BODY_LIMIT = 64 * 1024;
const NO_QUERY = z.strictObject({});
/** Where the dashboard's pages are, with a not-found page of their own. */
export const DASHBOARD_PREFIX = "/dashboard";

/** The HTTP application: the /v1 API and the capture API. Wiring only; behaviour lives in the plugins and routes. */
export async function buildApp(s: Services) {
  const routes = new RouteMethods();
  const app = Fastify({
    loggerInstance: s.log,
    bodyLimit: JSON_BODY_LIMIT,
    genReqId: () => newId("req"),
    // Each request's logger is made when it first logs, not for every request (request-logger.ts).
    childLoggerFactory: requestLogger,
    requestIdHeader: false,
    // Per-request lines only at debug: at info a busy API would log mostly noise.
    logController: new LogController({
      requestIdLogLabel: "request_id",
      disableRequestLogging: s.config.logLevel !== "debug" && s.config.logLevel !== "trace",
    }),
    routerOptions: { ignoreTrailingSlash: true },
    frameworkErrors,
    clientErrorHandler: clientErrorHandler(routes),
    connectionTimeout: 60_000,
    requestTimeout: 60_000,
    http: { requireHostHeader: false },
  }).withTypeProvider<ZodTypeProvider>();
  answerBareRequests(app.server, routes);

  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  // An empty body with a JSON content type is "no body" (cancel accepts it), not a parse error.
  const parseJson = app.getDefaultJsonParser("error", "error");
  app.addContentTypeParser("application/json", { parseAs: "buffer" }, (request, body, done) => {
    if ((body as Buffer).length === 0) return done(null, undefined);
    let text: string;
    try {
      text = jsonBodyText(request.headers["content-type"], body as Buffer);
    } catch (error) {
      return done(error as ApiError, undefined);
    }
    parseJson(request, text, done);
  });
  app.addHook("onRoute", (route) => {
    if (!/^\/(capture\/)?v1\//.test(route.url) || !route.schema) return;
    const takesStrings = route.schema.querystring !== undefined || route.schema.body !== undefined;
    // Unknown query parameters are refused on every route of both APIs, not only where a route
    // declares some: a route that takes none declares an empty, strict query.
    route.schema.querystring ??= NO_QUERY;
    // Strings are checked where a route takes them: a strict empty query has none.
    if (takesStrings) route.preValidation = [refuseBadStrings, ...hooksOf(route.preValidation)];
  });

  // Every request passes this hook: a callback one, as it does nothing asynchronous (an async hook
  // costs each request a promise and a turn of the microtask queue). A throw still goes to the error handler.
  app.addHook("onRequest", (request, reply, done) => {
    reply.header("request-id", request.id);
    requireHost(request);
    done();
  });
  await app.register(requestMetrics, { metrics: s.metrics });

  await app.register(errorHandler, { routes, ownNotFound: [DASHBOARD_PREFIX] });
  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "Vehicle Inspection API",
        version: "v1",
        description: "Create inspections, follow them through capture and processing, fetch reports and evidence.",
      },
      components: { securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "sk_test_… or sk_live_…" } } },
      security: [{ bearer: [] }],
    },
    transform: jsonSchemaTransform,
    transformObject: (input) =>
      completeDocument(jsonSchemaTransformObject(input) as Parameters<typeof completeDocument>[0], s.config.publicUrl),
  });
  // The application's own plugins: decorators the route plugins below declare as dependencies.
  for (const plugin of [configPlugin, capturesPlugin, inspectionsPlugin, eventsPlugin, webhooksPlugin, mediaPlugin, accountsPlugin]) {
    await app.register(plugin, { services: s });
  }

  const failedAuth = new FailedAuthLimiter({
    limit: s.config.rateLimit.failedAuthPerMinute,
    windowMs: 60_000,
    clock: s.clock,
    store: s.rateLimits.failedAuth,
  });
  await app.register(async (v1) => {
    v1.addHook("onRequest", failedAuth.guard(authenticate(s.keys, keyUseNoter(s.users, s.clock)), FAILED_AUTH_CODES));
    v1.addHook("onRequest", perKeyRateLimit(s.config.rateLimit, s.rateLimits.requests, s.clock));
    // Idempotency keys mean something on POST only: its hooks go on those routes, so the reads,
    // the bulk of the traffic, do not pass through three hooks that would do nothing.
    const idem = idempotency(s.idempotency, s.clock);
    v1.addHook("onRoute", (route) => {
      if (![route.method].flat().includes("POST")) return;
      // After the string checks (strict-input.ts) the app adds first; the key is claimed only once
      // validation has passed (preHandler), so a refused request holds no key.
      route.preValidation = [...hooksOf(route.preValidation), idem.preValidation];
      route.preHandler = [idem.preHandler, ...hooksOf(route.preHandler)];
      route.onSend = [idem.onSend, ...hooksOf(route.onSend)];
      route.onResponse = [idem.onResponse, ...hooksOf(route.onResponse)];
    });
    await v1.register(inspectionRoutes);
    await v1.register(reportPdfRoutes);
    await v1.register(eventRoutes);
    await v1.register(webhookRoutes);
    await v1.register(mediaRoutes);
  });

  await app.register(async (capture) => {
    // An unknown capture token is a failed authentication too: tokens are guessed like keys.
    capture.setErrorHandler(failedAuth.errorHandler(new Set(["resource_missing"])));
    capture.addHook("onRequest", perLinkRateLimit(s.config.rateLimit.capturePerSecond, s.rateLimits.requests, s.clock));
    await capture.register(captureRoutes);
  });
  await app.register(pageRoutes);
  await app.register(dashboardRoutes, {
    prefix: DASHBOARD_PREFIX,
    cookieSecret: s.signingKeys.cookies,
    rateLimits: s.rateLimits.requests,
  });
  // Read-only report links: the dashboard's pages, without its session, at /r/.
  await app.register(sharedReportRoutes);

  app.get("/v1/openapi.json", { schema: { hide: true } }, async () => app.swagger());
  // `/`, `/favicon.ico` and the API reference rendered at /docs.
  await app.register(siteRoutes(DASHBOARD_PREFIX));
  // Ready while the store answers, and S3 and NATS where the workload has them (METRICS_PORT's /readyz says the same).
  const checks = serviceChecks(s as Services & { nats?: Nats | null });
  await app.register(probeRoutes(() => runChecks(checks)));
  return app;
}

/** A route option's hooks as a list: Fastify takes none, one, or an array. */
function hooksOf<T>(hooks: T | T[] | undefined): T[] {
  return hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks];
}

export type App = Awaited<ReturnType<typeof buildApp>>;
