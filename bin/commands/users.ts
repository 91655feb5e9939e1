import { text } from "node:stream/consumers";
import type { Config } from "../../core/runtime/config.ts";
import { newId } from "../../core/domain/ids.ts";
import { hashPassword, passwordProblem } from "../../dashboard/auth/passwords.ts";
import { normalizeEmail } from "../../dashboard/auth/email.ts";
import { accountStoresOnly } from "../account-stores.ts";

export class UserCreationError extends Error {}

/**
 * `users create`: a dashboard user of the account (made on first use). The password comes on
 * standard input, never as an argument, where `ps` and shell history would show it.
 */
export async function createUser(config: Config, email: string, account: string, password: string): Promise<string> {
  const address = normalizeEmail(email);
  if (!/^[^\s@]+@[^\s@]+$/.test(address)) throw new UserCreationError(`not an email address: ${email}`);
  const problem = passwordProblem(password);
  if (problem) throw new UserCreationError(problem);
  const passwordHash = await hashPassword(password);
  const { users, close } = await accountStoresOnly(config);
  try {
    const user = await users.createUser(account, { id: newId("user"), email: address, passwordHash }, Date.now());
    if (!user) throw new UserCreationError(`${address} already has a user`);
    return user.id;
  } finally {
    await close();
  }
}

/** The password as typed or piped: one line, its line ending dropped. */
export async function readPassword(stdin: NodeJS.ReadableStream): Promise<string> {
  return (await text(stdin)).replace(/\r?\n$/, "");
}
