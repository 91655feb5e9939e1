import fp from "fastify-plugin";
import type { Config } from "../../core/runtime/config.ts";
import type { Services } from "../../core/runtime/services.ts";
import type { Clock } from "../../core/runtime/time.ts";

declare module "fastify" {
  interface FastifyInstance {
    /** The configuration validated at boot (core/runtime/config.ts). */
    config: Config;
    /** The service's clock: routes take the time from it, so tests can set it. */
    clock: Clock;
  }
}

/** The `config` and `clock` decorators, for the route plugins that declare them (dependency "config"). */
export const configPlugin = fp<{ services: Services }>(
  async (app, { services: s }) => {
    app.decorate("config", s.config);
    app.decorate("clock", s.clock);
  },
  { name: "config" },
);
