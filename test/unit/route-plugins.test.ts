import Fastify, { type FastifyPluginCallback } from "fastify";
import fp from "fastify-plugin";
import { describe, expect, it } from "vitest";
import { eventRoutes } from "../../api/routes/events.ts";
import { inspectionRoutes } from "../../api/routes/inspections.ts";
import { mediaRoutes } from "../../api/routes/media.ts";
import { reportPdfRoutes } from "../../api/routes/report-pdf.ts";
import { webhookRoutes } from "../../api/routes/webhooks.ts";
import { captureRoutes } from "../../capture/routes/capture-routes.ts";
import { pageRoutes } from "../../capture/routes/page-routes.ts";
import { dashboardRoutes } from "../../dashboard/dashboard-routes.ts";
import { inspectionPageRoutes } from "../../dashboard/routes/inspection-page.ts";
import { inspectionRoutes as dashboardInspectionRoutes } from "../../dashboard/routes/inspections.ts";
import { keyRoutes } from "../../dashboard/routes/keys.ts";
import { reviewPageRoutes } from "../../dashboard/routes/review-page.ts";
import { reviewQueueRoutes } from "../../dashboard/routes/review-queue.ts";
import { settingsRoutes } from "../../dashboard/routes/settings.ts";
import { sharedReportRoutes } from "../../dashboard/routes/shared-report.ts";
import { signInRoutes } from "../../dashboard/routes/sign-in.ts";
import { teamRoutes } from "../../dashboard/routes/team.ts";
import { webhookRoutes as dashboardWebhookRoutes } from "../../dashboard/routes/webhooks.ts";

/** Each route plugin and the decorators it declares: without any one of them the app refuses to start. */
const DECLARED: [string, unknown, string[]][] = [
  ["capture-routes", captureRoutes, ["captures"]],
  ["capture-page-routes", pageRoutes, ["captures"]],
  ["inspection-routes", inspectionRoutes, ["inspections"]],
  ["report-pdf-routes", reportPdfRoutes, ["inspections"]],
  ["event-routes", eventRoutes, ["events"]],
  ["webhook-routes", webhookRoutes, ["events", "webhooks"]],
  ["media-routes", mediaRoutes, ["media"]],
  ["dashboard-routes", dashboardRoutes, ["inspections", "events", "webhooks", "media", "accounts", "config"]],
  ["dashboard-sign-in-routes", signInRoutes, ["accounts", "config"]],
  ["dashboard-inspection-routes", dashboardInspectionRoutes, ["inspections"]],
  ["dashboard-inspection-page-routes", inspectionPageRoutes, ["inspections", "events", "webhooks", "media", "accounts", "config"]],
  ["dashboard-review-queue-routes", reviewQueueRoutes, ["inspections", "accounts", "config"]],
  ["dashboard-review-page-routes", reviewPageRoutes, ["inspections"]],
  ["dashboard-key-routes", keyRoutes, ["accounts", "config"]],
  ["dashboard-webhook-routes", dashboardWebhookRoutes, ["webhooks", "config"]],
  ["dashboard-team-routes", teamRoutes, ["accounts", "config"]],
  ["dashboard-settings-routes", settingsRoutes, ["accounts", "config"]],
  ["shared-report-routes", sharedReportRoutes, ["inspections", "media", "accounts"]],
];

describe("route plugins", () => {
  for (const [name, plugin, dependencies] of DECLARED)
    for (const dependency of dependencies)
      it(`${name} refuses to load without the ${dependency} decorator it declares`, async () => {
        const app = Fastify();
        // The others present, as named plugins that decorate nothing.
        for (const other of dependencies.filter((d) => d !== dependency)) app.register(fp(async () => {}, { name: other }));
        app.register(plugin as FastifyPluginCallback);
        await expect(app.ready()).rejects.toThrow(new RegExp(`${dependency}.*${name}`));
        await app.close();
      });
});
