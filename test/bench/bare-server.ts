import Fastify from "fastify";

/**
 * The baseline: a bare Fastify server answering an inspection as GET /v1/inspections/:id answers it
 * for the bench's create (its fields, sizes and default capture plan: 1,039 bytes against the
 * service's 1,042), returned from the handler as an object and so serialized on each request, as a
 * bare route's answer is.
 */
const body = {
  id: "insp_0a1b2c3d4e5f6g7h8i9j0k1l",
  object: "inspection",
  status: "created",
  livemode: false,
  reference: "bench",
  vehicle: { vin: "1HGCM82633A004352", make: "Honda", model: "Accord", year: 2003 },
  notify_url: null,
  baseline_inspection: null,
  capture: {
    steps: ["front", "front_left", "left", "rear_left", "rear", "rear_right", "right", "front_right", "vin", "odometer"].map((angle) => ({
      angle,
      required: angle !== "odometer",
    })),
    closeups: "optional",
    locale: null,
    expires_in: 604800,
  },
  capture_url: "http://127.0.0.1:1/c/VJ9bDnc_rX8t3BIscXVz6Wqk39xhWQZIi6jcqG5gx84",
  capture_token: "VJ9bDnc_rX8t3BIscXVz6Wqk39xhWQZIi6jcqG5gx84",
  expires_at: "2026-11-28T10:28:25Z",
  created_at: "2026-11-21T10:28:25Z",
  updated_at: "2026-11-21T10:28:25Z",
  submitted_at: null,
  completed_at: null,
  canceled_at: null,
  report_url: null,
  summary: null,
  failure: null,
};
const app = Fastify();
app.all("/*", async () => body);
await app.listen({ port: Number(process.env.PORT), host: "127.0.0.1" });
console.log("ready");
