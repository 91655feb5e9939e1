import { Writable } from "node:stream";
import pino from "pino";
import { describe, expect, it, vi } from "vitest";
import { requestLogger } from "../../api/plugins/request-logger.ts";
import { loggerOptions } from "../../core/runtime/logger.ts";

/** A pino logger at `level` whose lines land in `lines`, without their time. */
function capturing(level: string) {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      const { time: _time, ...line } = JSON.parse(String(chunk));
      lines.push(line);
      done();
    },
  });
  return { logger: pino({ ...loggerOptions(level), base: null }, sink), lines };
}

describe("requestLogger", () => {
  it("makes no child until the request logs, then logs what pino's child would", async () => {
    const lazy = capturing("info");
    const eager = capturing("info");
    const child = vi.spyOn(lazy.logger, "child");
    const log = requestLogger(lazy.logger, { request_id: "req_1" }, {});
    expect(log.level).toBe("info");
    expect(child).not.toHaveBeenCalled();

    const args = [{ err: new Error("boom"), headers: { authorization: "Bearer sk_test_x" } }, "failed %s", "here"] as const;
    log.warn(...args);
    log.error("plain");
    log.debug("not at info");
    eager.logger.child({ request_id: "req_1" }).warn(...args);
    eager.logger.child({ request_id: "req_1" }).error("plain");
    await new Promise((resolve) => setImmediate(resolve));

    expect(child).toHaveBeenCalledTimes(1);
    expect(lazy.lines).toEqual(eager.lines);
    expect(lazy.lines[0]).toMatchObject({ request_id: "req_1", msg: "failed here", headers: { authorization: "[redacted]" } });
  });

  it("takes the level the route asks for", () => {
    const { logger } = capturing("info");
    const log = requestLogger(logger, { request_id: "req_2" }, { level: "debug" });
    expect(log.level).toBe("debug");
    log.debug("now");
    expect(log.level).toBe("debug");
  });
});
