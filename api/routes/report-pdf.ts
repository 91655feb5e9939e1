import fp from "fastify-plugin";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { commonErrorResponses, ErrorBody } from "../../core/schemas/common.ts";
import { IdParams } from "../../core/schemas/inspection.ts";
import { reportPdfHeaders } from "../pdf/report-pdf.ts";
import type {} from "../plugins/inspections.ts";

/** The report as a PDF, through the `inspections` decorator (api/plugins/inspections.ts). */
const routes: FastifyPluginAsyncZod = async (app) => {
  const { inspections } = app;
  app.get(
    "/v1/inspections/:id/report.pdf",
    {
      schema: {
        operationId: "retrieveReportPdf",
        summary: "Retrieve the report of a completed inspection as a printable PDF",
        params: IdParams,
        response: {
          200: { description: "The condition report, A4.", content: { "application/pdf": { schema: z.any() } } },
          409: ErrorBody,
          ...commonErrorResponses,
        },
      },
    },
    async (request, reply) => {
      const inspection = await inspections.find(request.scope, request.params.id);
      const pdf = await inspections.pdf(inspection);
      // An attachment: a report is filed with a claim, and the id names it on disk.
      return reply.headers(reportPdfHeaders(inspection.id, pdf)).send(pdf);
    },
  );
};

export const reportPdfRoutes = fp(routes, { name: "report-pdf-routes", dependencies: ["inspections"], encapsulate: true });
