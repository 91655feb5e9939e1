#!/usr/bin/env node
import { RestoreRefused, restoreFromArchive } from "./commands/restore.ts";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { ConfigError, loadConfig } from "../core/runtime/config.ts";
import { DEFAULT_OVERLAP_HOURS, MAX_OVERLAP_HOURS, OverlapHours } from "../core/schemas/webhook.ts";
import { createKey, listKeys, revokeKey, rotateSecret, webhookSecret } from "./commands/keys.ts";
import { evaluate } from "./commands/eval.ts";
import { FOLDS } from "../inference/evaluation/held-out.ts";
import { evaluateProduct } from "./commands/eval-product.ts";
import { api } from "./commands/api.ts";
import { inference } from "./commands/inference.ts";
import { operator } from "./commands/operator.ts";
import { start } from "./commands/start.ts";
import { createUser, readPassword, UserCreationError } from "./commands/users.ts";
import { ListenError, listen } from "./commands/webhooks-listen.ts";
import { DemoError, demo } from "./commands/demo.ts";
import { configFile, MigrationRefused, migrateInstallation } from "./commands/migrate.ts";

const USAGE = `usage: vehicle-inspection <command>

  start                                    run the whole service (API, capture, controller, detection, webhooks)
  api                                      cluster mode: the /v1 and capture routes and the dashboard, alone
  operator                                 cluster mode: the controller and webhook delivery (detection on NATS workers with NATS_URL)
  inference                                cluster mode: a detection worker, taking jobs from NATS (NATS_URL required)
  demo [--account NAME] [--datasets DIR | --drawn-photos] [--url BASE] [--api-key sk_test_…]
                                           one inspection end to end against the running service, with sample
                                           photos from ../shared/datasets (or drawn ones): created, captured,
                                           submitted, its report; exits 1 unless it completed. With --api-key
                                           (the chart's helm test) that key's account, else a new key's
  keys create --env test|live [--account NAME]   create an API key; prints only the key
  keys list                                list API keys (never their secrets)
  keys revoke KEY_ID                       revoke an API key
  webhooks secret --env test|live [--account NAME]   print the webhook signing secret (whsec_…)
  webhooks rotate --env test|live [--account NAME] [--overlap-hours N]
                                           replace the signing secret; the old one also signs for N hours
                                           (default ${DEFAULT_OVERLAP_HOURS}, at most ${MAX_OVERLAP_HOURS}); prints only the new secret
  webhooks listen --api-key sk_test_… --forward-to URL [--url BASE]
                                           forward the key's account's test-mode events, from now on, to URL
                                           (a receiver on this machine), signed with the account's secret;
                                           BASE is the service (default http://localhost:$PORT)
  users create --email ADDRESS [--account NAME]   create a dashboard user; the password is read from standard input
  migrate --from EMBEDDED.env --to CLUSTER.env [--allow-other-data]
                                           copy a stopped embedded installation into a cluster one before its
                                           workloads start (each file: the environment of that mode, KEY=value
                                           lines); a re-run copies only what is missing; prints counts
  restore                                  with INSPECTION_STORE=kubernetes, after the Inspection resources were lost
                                           (kubectl delete crd archives them first): makes the archived inspections
                                           that would still be live resources again; prints what it did
  eval --data DIR [--model PATH]           score the damage detector on a YOLO-format folder; prints JSON last
  eval-product [--datasets DIR] [--fold N] the whole pipeline on clean cars, whole cars and close-ups; prints JSON last
                                           (--fold 1 to ${FOLDS - 1}: whole cars from a fifth the models were trained on,
                                           instead of the held-out one)

Configuration comes from the environment: PORT, DATA_DIR, PUBLIC_URL, WEBHOOKS_ALLOW_PRIVATE_TARGETS,
RATE_LIMIT_LIVE_PER_SECOND, RATE_LIMIT_TEST_PER_SECOND (see README).`;

class UsageError extends Error {}

function envOption(values: { env?: string }): "test" | "live" {
  if (values.env !== "test" && values.env !== "live") throw new UsageError("--env must be test or live");
  return values.env;
}

function overlapHoursOption(values: { "overlap-hours"?: string }): number | undefined {
  const raw = values["overlap-hours"];
  if (raw === undefined) return undefined;
  const hours = /^[0-9]+$/.test(raw) ? OverlapHours.safeParse(Number(raw)) : undefined;
  if (!hours?.success) throw new UsageError(`--overlap-hours must be a whole number of hours from 0 to ${MAX_OVERLAP_HOURS}`);
  return hours.data;
}

function foldOption(values: { fold?: string }): number | undefined {
  const raw = values.fold;
  if (raw === undefined) return undefined;
  if (!/^[0-9]+$/.test(raw) || Number(raw) >= FOLDS)
    throw new UsageError(`--fold must be a whole number from 0 (held out) to ${FOLDS - 1}`);
  return Number(raw);
}

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      env: { type: "string" },
      email: { type: "string" },
      account: { type: "string", default: "default" },
      "overlap-hours": { type: "string" },
      data: { type: "string" },
      datasets: { type: "string" },
      fold: { type: "string" },
      model: { type: "string" },
      "api-key": { type: "string" },
      "drawn-photos": { type: "boolean" },
      "forward-to": { type: "string" },
      url: { type: "string" },
      from: { type: "string" },
      to: { type: "string" },
      "allow-other-data": { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
  const [command, sub, arg] = positionals;
  if (values.help || !command) {
    console.log(USAGE);
    return command || values.help ? 0 : 2;
  }
  if (command === "migrate") {
    // Two configurations, each from its file: this process's environment is neither installation's.
    if (!values.from || !values.to)
      throw new UsageError("migrate needs --from FILE (the embedded configuration) and --to FILE (the cluster's)");
    await migrateInstallation(configFile(values.from, "source (--from)"), configFile(values.to, "target (--to)"), {
      allowOtherData: values["allow-other-data"] ?? false,
      print: (line) => console.log(line),
    });
    return 0;
  }
  const config = loadConfig();
  switch (`${command} ${sub ?? ""}`.trim()) {
    case "start":
    case "api":
    case "operator":
    case "inference": {
      // Asked to stop while still starting (waiting for NATS or the API server, or moving an SQLite
      // store's inspections, which the next start finishes): nothing is served yet, so it just ends.
      const early = () => process.exit(0);
      process.once("SIGTERM", early);
      process.once("SIGINT", early);
      const service = await { start, api, operator, inference }[command as "start" | "api" | "operator" | "inference"](config);
      process.off("SIGTERM", early);
      process.off("SIGINT", early);
      const shutdown = async () => {
        await service.close();
        process.exit(0);
      };
      process.once("SIGTERM", shutdown);
      process.once("SIGINT", shutdown);
      return -1;
    }
    case "demo": {
      // A test key of its own, in the account `keys create` and `users create` use by default, so
      // the dashboard's user sees the inspection; or the key given, where this process cannot reach
      // the key store (the chart's test pod).
      const given = values["api-key"];
      if (given !== undefined && !given.startsWith("sk_test_"))
        throw new UsageError("demo's --api-key must be a test-mode key (sk_test_…)");
      if (values["drawn-photos"] && values.datasets) throw new UsageError("demo takes --datasets or --drawn-photos, not both");
      const apiKey = given ?? (await createKey(config, "test", values.account!));
      await demo({
        api: values.url ?? `http://localhost:${config.port}`,
        apiKey,
        datasets: values["drawn-photos"] ? null : (values.datasets ?? join(import.meta.dirname, "../../shared/datasets")),
        print: (line) => console.log(line),
      });
      return 0;
    }
    case "restore":
      await restoreFromArchive(config, Date.now(), (line) => console.log(line));
      return 0;
    case "keys create":
      console.log(await createKey(config, envOption(values), values.account!));
      return 0;
    case "keys list":
      for (const line of await listKeys(config)) console.log(line);
      return 0;
    case "keys revoke":
      if (!arg) throw new UsageError("keys revoke needs a key id (key_…); see keys list");
      if (!(await revokeKey(config, arg))) {
        console.error(`no such key: ${arg}`);
        return 1;
      }
      console.error(`revoked ${arg}`);
      return 0;
    case "eval": {
      if (!values.data) throw new UsageError("eval needs --data DIR (a YOLO-format folder: images/ and labels/)");
      await evaluate(config, values.data, values.model);
      return 0;
    }
    case "eval-product": {
      const datasets = values.datasets ?? join(import.meta.dirname, "../../shared/datasets");
      await evaluateProduct(config, datasets, console.log, foldOption(values));
      return 0;
    }
    case "users create": {
      if (!values.email) throw new UsageError("users create needs --email ADDRESS (the password comes on standard input)");
      console.log(await createUser(config, values.email, values.account!, await readPassword(process.stdin)));
      return 0;
    }
    case "webhooks secret":
      console.log(await webhookSecret(config, envOption(values), values.account!));
      return 0;
    case "webhooks listen": {
      if (!values["api-key"] || !values["forward-to"])
        throw new UsageError("webhooks listen needs --api-key sk_test_… and --forward-to URL");
      const stop = new AbortController();
      process.once("SIGINT", () => stop.abort());
      await listen({
        api: values.url ?? `http://localhost:${config.port}`,
        apiKey: values["api-key"],
        forwardTo: values["forward-to"],
        signal: stop.signal,
        print: (line) => console.log(line),
      });
      return 0;
    }
    case "webhooks rotate":
      console.log(await rotateSecret(config, envOption(values), values.account!, overlapHoursOption(values)));
      return 0;
    default:
      throw new UsageError(`unknown command: ${positionals.join(" ")}`);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (error) => {
    if (
      error instanceof UserCreationError ||
      error instanceof ListenError ||
      error instanceof DemoError ||
      error instanceof MigrationRefused ||
      error instanceof RestoreRefused
    ) {
      console.error(`vehicle-inspection: ${error.message}`);
      process.exitCode = 1;
    } else if (
      error instanceof UsageError ||
      error instanceof ConfigError ||
      String((error as { code?: unknown }).code).startsWith("ERR_PARSE_ARGS")
    ) {
      console.error(`vehicle-inspection: ${(error as Error).message}\n\n${USAGE}`);
      process.exitCode = 2;
    } else {
      console.error(error);
      process.exitCode = 1;
    }
    // Ends whatever the command had started before it failed: a `start` whose port was taken kept
    // its probes (alive, never ready), the controller's timers and its watches, and never ended.
    process.exit();
  },
);
