import Fastify from "fastify";
import { newId } from "../../core/domain/ids.ts";
import { openDatabase, transaction } from "../../core/adapters/sqlite/database.ts";

/**
 * The create's baseline: the naive durable peer. A Fastify route with a JSON Schema for the body that
 * stores each create, the inspection and its event, in a transaction of its own, then answers 201.
 * Same schema and same durability as the service's SQLite store (openDatabase: WAL, synchronous=NORMAL,
 * so an answered create survives the process's crash), without what the service adds: authentication,
 * rate limits, idempotency, the contract's validation, the capture link, group commit.
 */
const db = openDatabase(process.env.DATA_DIR!);
const insertInspection = db.prepare(
  `INSERT INTO inspections (id, account_id, livemode, status, reference, vin, capture_token_hash, expires_at, created_at, updated_at)
   VALUES (?, 'acct_peer', 0, 'created', ?, ?, ?, ?, ?, ?)`,
);
const insertEvent = db.prepare(
  `INSERT INTO events (id, account_id, livemode, inspection_id, type, created_at, data, delivery_status)
   VALUES (?, 'acct_peer', 0, ?, 'inspection.created', ?, ?, 'none')`,
);

const app = Fastify();
app.post(
  "/v1/inspections",
  {
    schema: {
      body: {
        type: "object",
        additionalProperties: false,
        required: ["vehicle"],
        properties: {
          reference: { type: "string", minLength: 1, maxLength: 255 },
          vehicle: {
            type: "object",
            additionalProperties: false,
            required: ["vin"],
            properties: { vin: { type: "string", pattern: "^[A-HJ-NPR-Z0-9]{17}$" } },
          },
        },
      },
    },
  },
  async (request, reply) => {
    const body = request.body as { reference?: string; vehicle: { vin: string } };
    const now = Date.now();
    const inspection = {
      id: newId("insp"),
      object: "inspection",
      status: "created",
      livemode: false,
      reference: body.reference ?? null,
      vehicle: { vin: body.vehicle.vin },
      created_at: new Date(now).toISOString(),
      expires_at: new Date(now + 7 * 86_400_000).toISOString(),
    };
    transaction(db, () => {
      insertInspection.run(inspection.id, inspection.reference, inspection.vehicle.vin, newId("key"), now + 7 * 86_400_000, now, now);
      insertEvent.run(newId("evt"), inspection.id, now, JSON.stringify(inspection));
    });
    return reply.code(201).send(inspection);
  },
);
await app.listen({ port: Number(process.env.PORT), host: "127.0.0.1" });
console.log("ready");
