import fp from "fastify-plugin";
import type { Locale } from "../../core/domain/locales.ts";
import { isCaptureOpen } from "../../core/domain/state-machine.ts";
import { cancelInspection, createdUnder, createInspection, findInspection } from "../../core/operations/inspections.ts";
import { completedReport, modelReport } from "../../core/operations/reports.ts";
import { submitReview } from "../../core/operations/reviews.ts";
import type { ListFilter } from "../../core/ports/inspection-store.ts";
import type { InspectionRecord, Scope } from "../../core/ports/records.ts";
import type { Services } from "../../core/runtime/services.ts";
import type { CreateInspectionBody, Inspection } from "../../core/schemas/inspection.ts";
import type { Report } from "../../core/schemas/report.ts";
import type { ReviewBody } from "../../core/schemas/review.ts";
import { inspectionView } from "../../core/views/inspection-view.ts";
import { type Baseline, loadBaseline } from "../../core/views/new-since.ts";
import { reportPdf } from "../pdf/report-pdf.ts";
import type { Awaitable } from "../../core/ports/awaitable.ts";

/**
 * The inspection operations (core/operations/) bound to this process's services: what the /v1
 * inspection routes and the dashboard call, each throwing ApiError on a client's mistake.
 */
export type Inspections = {
  /** The inspection, or the API's 404 (at once where the store answers at once). */
  find(scope: Scope, id: string): Awaitable<InspectionRecord>;
  /** The store's read: null where the scope has no such inspection. */
  get(scope: Scope, id: string): Promise<InspectionRecord | null>;
  /** Any account's inspection by id (a shared report link names it), or null. */
  byId(id: string): Promise<InspectionRecord | null>;
  list(scope: Scope, filter: ListFilter): Promise<InspectionRecord[]>;
  create(scope: Scope, body: CreateInspectionBody, idempotencyKey?: string): Promise<InspectionRecord>;
  /** The inspection a create under this Idempotency-Key made, if it did. */
  createdUnder(scope: Scope, body: CreateInspectionBody, idempotencyKey: string): Promise<InspectionRecord | null>;
  cancel(scope: Scope, id: string): Promise<InspectionRecord>;
  /** The inspection as the API shows it, with its capture link while capture is open. */
  view(r: InspectionRecord): Inspection;
  /** The capture link's URL (derived from the id, shown while capture is open). */
  captureUrl(id: string): string;
  /** A baseline inspection with its report, for comparing a later one with it (core/views/new-since.ts). */
  baseline(scope: Scope, id: string): Promise<Baseline>;
  /** The completed inspection's report as stored (serialized); the API's 409 before completion. */
  report(r: InspectionRecord): Promise<string>;
  /** The report as the models made it, before any review. */
  modelReport(r: InspectionRecord): Promise<Report>;
  review(scope: Scope, id: string, body: ReviewBody, reviewer: string): Promise<Report>;
  /** The completed inspection's report as an A4 PDF (api/pdf/report-pdf.ts). */
  pdf(r: InspectionRecord, o?: { locale?: Locale }): Promise<Buffer>;
};

declare module "fastify" {
  interface FastifyInstance {
    inspections: Inspections;
  }
}

/** The `inspections` decorator, for the route plugins that declare it as a dependency. */
export const inspectionsPlugin = fp<{ services: Services }>(
  async (app, { services: s }) => {
    app.decorate("inspections", {
      find: (scope, id) => findInspection(s, scope, id),
      get: async (scope, id) => s.inspections.get(scope, id),
      byId: (id) => s.inspections.getById(id),
      list: (scope, filter) => s.inspections.list(scope, filter),
      create: (scope, body, key) => createInspection(s, scope, body, key),
      createdUnder: (scope, body, key) => createdUnder(s, scope, body, key),
      cancel: (scope, id) => cancelInspection(s, scope, id),
      view: (r) => inspectionView(r, s.config.publicUrl, isCaptureOpen(r.status) ? s.captureLinks.link(r.id) : null),
      captureUrl: (id) => s.captureLinks.url(id),
      baseline: (scope, id) => loadBaseline(s, scope, id),
      report: (r) => completedReport(s, r),
      modelReport: (r) => modelReport(s, r),
      review: (scope, id, body, reviewer) => submitReview(s, scope, id, body, reviewer),
      pdf: (r, o) => reportPdf(s, r, o),
    } satisfies Inspections);
  },
  { name: "inspections" },
);
