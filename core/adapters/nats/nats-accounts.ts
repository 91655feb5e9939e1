import type { KV, Kvm } from "@nats-io/kv";
import { newId } from "../../domain/ids.ts";
import { firstWriter, natsCall, storedValue } from "./nats-connection.ts";

import type { AccountRecord } from "../../ports/key-store.ts";

type Account = AccountRecord;

/** KV keys allow only `[-/_=.a-zA-Z0-9]`: names, hashes and ids are base64url-encoded into one token. */
export const kvToken = (s: string) => Buffer.from(s).toString("base64url");

/**
 * Accounts by name in the KV bucket `accounts`, which API keys and dashboard users both name: of
 * replicas racing to make one, the first writer's id is everyone's. Accounts are never renamed or
 * removed, so a name once read is its id for good and is held.
 */
export class NatsAccounts {
  readonly #kv: KV;
  readonly #ids = new Map<string, string>();

  private constructor(kv: KV) {
    this.#kv = kv;
  }

  static async open(kvm: Kvm, prefix = ""): Promise<NatsAccounts> {
    return new NatsAccounts(await natsCall("The account store", () => kvm.create(`${prefix}accounts`, { history: 1 })));
  }

  /** The account's id, made on first use. */
  async id(name: string, now: number): Promise<string> {
    const known = this.#ids.get(name);
    if (known) return known;
    const k = kvToken(name);
    let account = storedValue<Account>(await this.#kv.get(k));
    if (!account) {
      const made: Account = { id: newId("acct"), name, createdAt: now };
      account = (await firstWriter(this.#kv.create(k, JSON.stringify(made)))) ? made : storedValue<Account>(await this.#kv.get(k));
      if (!account) throw new Error(`account ${name} was removed while it was being made`);
    }
    this.#ids.set(name, account.id);
    return account.id;
  }

  /** Every account, in no order. */
  async all(): Promise<Account[]> {
    const names: string[] = [];
    for await (const k of await this.#kv.keys()) names.push(k);
    const stored = await Promise.all(names.map(async (k) => storedValue<Account>(await this.#kv.get(k))));
    return stored.filter((a): a is Account => a !== null);
  }

  /** Makes the account under the id given, where its name has none: the id the name then has. */
  async adopt(account: Account): Promise<string> {
    const k = kvToken(account.name);
    const made = await firstWriter(this.#kv.create(k, JSON.stringify(account)));
    const id = made ? account.id : storedValue<Account>(await this.#kv.get(k))?.id;
    if (!id) throw new Error(`account ${account.name} was removed while it was being made`);
    this.#ids.set(account.name, id);
    return id;
  }
}
