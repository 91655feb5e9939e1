import Fastify from "fastify";

/** The baseline: a bare Fastify server answering a fixed JSON body of the same size as an inspection. */
const body = {
  id: "insp_0a1b2c3d4e5f6g7h8i9j0k1l",
  object: "inspection",
  status: "created",
  livemode: false,
  reference: "bench",
  vehicle: { vin: "1HGCM82633A004352", make: "Honda", model: "Accord", year: 2003 },
  notify_url: null,
  capture_url: "http://127.0.0.1:1/c/VJ9bDnc_rX8t3BIscXVz6Wqk39xhWQZIi6jcqG5gx84",
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
