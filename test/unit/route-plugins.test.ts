import Fastify from "fastify";
import { describe, expect, it } from "vitest";
import { captureRoutes } from "../../capture/routes/capture-routes.ts";

describe("route plugins", () => {
  it("the capture routes refuse to load without the captures decorator they declare", async () => {
    const app = Fastify();
    app.register(captureRoutes);
    await expect(app.ready()).rejects.toThrow(/captures.*capture-routes/);
    await app.close();
  });
});
