/**
 * The OpenAPI links of the document: from each response, to the operations that take an identifier
 * it carries (an inspection's id and capture token, an event's id, a photo's media id), so a client
 * generated from the document, a stateful fuzzer or a person reading it can tell where every
 * identifier comes from. Stripe's document has none; its identifiers are named by convention only.
 */

type Link = { operationId: string; parameters: Record<string, string>; description: string };
type Links = Record<string, Link>;

const body = (pointer: string) => `$response.body#${pointer}`;
/** The capture token of the request being answered: capture responses carry no token of their own. */
const REQUEST_TOKEN = "$request.path.token";

const link = (operationId: string, parameters: Record<string, string>, description: string): Link => ({
  operationId,
  parameters,
  description,
});

/** What an inspection's id leads to; `at` points at the inspection in the response body. */
function inspectionLinks(at: string): Links {
  const id = { id: body(`${at}/id`) };
  return {
    RetrieveInspection: link("retrieveInspection", id, "The inspection, to follow its status."),
    CancelInspection: link("cancelInspection", id, "Cancel it before completion."),
    RetrieveReport: link("retrieveReport", id, "Its report, once completed."),
    RetrieveReportPdf: link("retrieveReportPdf", id, "Its report as a PDF, once completed."),
    ReviewInspection: link("reviewInspection", id, "Review its report, once completed."),
  };
}

/**
 * What a capture token leads to: the capture API, which the customer's phone uses. `token` is a
 * runtime expression: the inspection's `capture_token` (the last path segment of its capture_url),
 * or the token of the capture request being answered.
 */
function captureLinks(token: string): Links {
  const t = { token };
  return {
    CaptureSession: link("captureSession", t, "The capture session (opening it moves the inspection to in_progress)."),
    CapturePhoto: link("capturePhoto", t, "Upload the photo of an angle."),
    CaptureCloseup: link("captureCloseup", t, "Upload a close-up of damage."),
    CaptureVinDecode: link("captureVinDecode", t, "Decode a VIN for the customer to check."),
    CaptureVin: link("captureVin", t, "Confirm the VIN."),
    CaptureSubmit: link("captureSubmit", t, "Submit the walkaround for processing."),
  };
}

/** What an event's id leads to; `at` points at the event in the response body. */
function eventLinks(at: string): Links {
  const id = { id: body(`${at}/id`) };
  return {
    RetrieveEvent: link("retrieveEvent", id, "The event and its delivery attempts."),
    ResendEvent: link("resendEvent", id, "Deliver the event again."),
    RetrieveEventInspection: link("retrieveInspection", { id: body(`${at}/data/id`) }, "The inspection the event is about."),
  };
}

/** What a report leads to: its photos, and its inspection's operations. */
function reportLinks(): Links {
  const id = { id: body("/inspection_id") };
  return {
    RetrievePhoto: link("retrieveMedia", { id: body("/photos/0/media_id") }, "A photo of the report (each photo's media_id)."),
    RetrieveInspection: link("retrieveInspection", id, "The inspection."),
    RetrieveReportPdf: link("retrieveReportPdf", id, "The report as a PDF."),
    ReviewInspection: link("reviewInspection", id, "Review the report: decide its findings, add your own."),
  };
}

/** What a photo upload leads to: the stored photo, and the rest of the capture. */
function photoLinks(): Links {
  return {
    RetrievePhoto: link("retrieveMedia", { id: body("/media_id") }, "The photo as stored (an API key is needed)."),
    ...captureLinks(REQUEST_TOKEN),
  };
}

const nextPage = (operationId: string): Links => ({
  NextPage: link(operationId, { cursor: body("/next_cursor") }, "The next page, while has_more is true."),
});

/** By operationId, then status: the links of that response. */
export const LINKS: Record<string, Record<string, Links>> = {
  createInspection: { 201: { ...inspectionLinks(""), ...captureLinks(body("/capture_token")) } },
  retrieveInspection: { 200: { ...inspectionLinks(""), ...captureLinks(body("/capture_token")) } },
  listInspections: { 200: { ...inspectionLinks("/data/0"), ...nextPage("listInspections") } },
  cancelInspection: { 200: { RetrieveInspection: inspectionLinks("").RetrieveInspection! } },
  retrieveReport: { 200: reportLinks() },
  reviewInspection: { 200: reportLinks() },
  listEvents: { 200: { ...eventLinks("/data/0"), ...nextPage("listEvents") } },
  retrieveEvent: { 200: eventLinks("") },
  resendEvent: { 202: eventLinks("") },
  captureSession: {
    200: {
      ...captureLinks(REQUEST_TOKEN),
      RetrieveInspection: link("retrieveInspection", { id: body("/inspection_id") }, "The inspection (an API key is needed)."),
    },
  },
  capturePhoto: { 200: photoLinks() },
  captureCloseup: { 200: photoLinks() },
  captureVin: { 200: captureLinks(REQUEST_TOKEN) },
  captureVinDecode: { 200: captureLinks(REQUEST_TOKEN) },
};
