import { buildGoServers, goCommand, missingGoServers } from "./go-servers.ts";

/**
 * Runs once before all test files (vitest.config.ts `globalSetup`): builds the Go servers the
 * integration tests run, where the cache lacks them, so no test's own timeout pays for a build.
 * Without Go, only the tests that start those servers fail, each saying why.
 */
export default async function setup(): Promise<void> {
  const missing = missingGoServers();
  if (missing.length === 0) return;
  if (!goCommand()) {
    console.warn(`Go is not installed: the tests that need ${missing.join(" and ")} will fail (https://go.dev/dl/).`);
    return;
  }
  await buildGoServers((line) => console.log(line));
}
