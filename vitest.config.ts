import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Builds the Go servers (nats-server, versitygw) the integration tests run, once, where missing.
    globalSetup: ["test/helpers/global-setup.ts"],
    pool: "forks",
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Two cores: integration suites start real servers, so run files two at a time at most.
    maxWorkers: 2,
    // Browser steps upload photos and wait for the server; on a loaded 2-core machine 1 s is too short.
    expect: { poll: { timeout: 15_000, interval: 100 } },
  },
});
