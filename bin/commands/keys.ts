import type { Config } from "../../core/runtime/config.ts";
import { newApiKey, newId, newWebhookSecret, sha256, type Environment } from "../../core/domain/ids.ts";
import { rotateWebhookSecret } from "../../core/operations/webhooks.ts";
import { systemClock } from "../../core/runtime/time.ts";
import { accountStoresOnly } from "../account-stores.ts";

export async function createKey(config: Config, env: Environment, account: string): Promise<string> {
  const { keys, close } = await accountStoresOnly(config);
  try {
    const key = newApiKey(env);
    await keys.createKey(account, env, sha256(key), key.slice(-4), newId("key"), Date.now());
    return key;
  } finally {
    await close();
  }
}

export async function listKeys(config: Config): Promise<string[]> {
  const { keys, close } = await accountStoresOnly(config);
  try {
    return (await keys.list()).map((k) =>
      [
        k.id,
        k.accountName,
        k.livemode ? "live" : "test",
        `sk_${k.livemode ? "live" : "test"}_…${k.last4}`,
        new Date(k.createdAt).toISOString(),
        k.revokedAt ? `revoked ${new Date(k.revokedAt).toISOString()}` : "active",
      ].join("\t"),
    );
  } finally {
    await close();
  }
}

export async function revokeKey(config: Config, keyId: string): Promise<boolean> {
  const { keys, close } = await accountStoresOnly(config);
  try {
    return await keys.revoke(keyId, Date.now());
  } finally {
    await close();
  }
}

export async function webhookSecret(config: Config, env: Environment, account: string): Promise<string> {
  const { keys, close } = await accountStoresOnly(config);
  try {
    return await keys.webhookSecret(account, env, newWebhookSecret, Date.now());
  } finally {
    await close();
  }
}

/** The new secret only; the one it replaces keeps signing for `overlapHours` (the operation's default when undefined). */
export async function rotateSecret(config: Config, env: Environment, account: string, overlapHours: number | undefined): Promise<string> {
  const { keys, close } = await accountStoresOnly(config);
  try {
    const scope = { accountId: await keys.accountId(account, Date.now()), livemode: env === "live" };
    return (await rotateWebhookSecret({ keys, clock: systemClock }, scope, overlapHours)).secret;
  } finally {
    await close();
  }
}
