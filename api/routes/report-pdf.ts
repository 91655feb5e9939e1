import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { findInspection } from "../../core/operations/inspections.ts";
import { commonErrorResponses, ErrorBody } from "../../core/schemas/common.ts";
import { IdParams } from "../../core/schemas/inspection.ts";
import type { Services } from "../../core/runtime/services.ts";
import { reportPdf, reportPdfHeaders } from "../pdf/report-pdf.ts";

export const reportPdfRoutes =
  (s: Services): FastifyPluginAsyncZod =>
  async (app) => {
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
        const inspection = await findInspection(s, request.scope, request.params.id);
        const pdf = await reportPdf(s, inspection);
        // An attachment: a report is filed with a claim, and the id names it on disk.
        return reply.headers(reportPdfHeaders(inspection.id, pdf)).send(pdf);
      },
    );
  };
