import type { KV, Kvm } from "@nats-io/kv";
import type { InviteRecord, UserRecord, UserStore } from "../../ports/user-store.ts";
import { kvToken as token, NatsAccounts } from "./nats-accounts.ts";
import { firstWriter, natsCall, storedValue } from "./nats-connection.ts";

type NewUser = { id: string; email: string; passwordHash: string };
type Session = { userId: string; email: string; expiresAt: number };
/** The invite as stored: with its account's name, which the user it makes carries. */
type StoredInvite = InviteRecord & { accountName: string };

const WHAT = "The user store";
/** Sessions last 12 h (dashboard/auth/sessions.ts); the bucket forgets any a week old, so dead ones do not pile up. */
const SESSIONS_KEPT_MS = 7 * 24 * 60 * 60 * 1000;

export type NatsUserStoreOptions = {
  /** Put before each bucket's name (`accounts`, shared with the key store, `users`, `user-ids`, `account-users`, `sessions`, `invites`, `key-use`). */
  prefix?: string;
};

/**
 * Dashboard users, sessions, invitations and API key use in NATS JetStream KV buckets, in the
 * accounts the NATS key store names, so every API replica signs the same people in. A user is
 * written as three keys, each first-writer-wins or harmless alone: its id → email, the account's
 * index entry, then the user under its email, which is what makes it exist; a crash between them
 * leaves entries that point at no user and are ignored. An accepted invite is its user: an invite
 * whose email has a user is used, whether or not its own write (the last) went through.
 */
export class NatsUserStore implements UserStore {
  readonly #accounts: NatsAccounts;
  readonly #users: KV;
  readonly #userIds: KV;
  readonly #accountUsers: KV;
  readonly #sessions: KV;
  readonly #invites: KV;
  readonly #keyUse: KV;

  private constructor(accounts: NatsAccounts, buckets: KV[]) {
    this.#accounts = accounts;
    [this.#users, this.#userIds, this.#accountUsers, this.#sessions, this.#invites, this.#keyUse] = buckets as [KV, KV, KV, KV, KV, KV];
  }

  static async open(kvm: Kvm, options: NatsUserStoreOptions = {}): Promise<NatsUserStore> {
    const prefix = options.prefix ?? "";
    const buckets = await natsCall(WHAT, () =>
      Promise.all(
        ["users", "user-ids", "account-users", "sessions", "invites", "key-use"].map((n) =>
          kvm.create(`${prefix}${n}`, { history: 1, ...(n === "sessions" ? { ttl: SESSIONS_KEPT_MS } : {}) }),
        ),
      ),
    );
    return new NatsUserStore(await NatsAccounts.open(kvm, prefix), buckets);
  }

  async createUser(accountName: string, user: NewUser, now: number): Promise<UserRecord | null> {
    return natsCall(WHAT, async () => this.#insertUser(await this.#accounts.id(accountName, now), accountName, user, now));
  }

  /** Null when the email already has a user. */
  async #insertUser(accountId: string, accountName: string, user: NewUser, now: number): Promise<UserRecord | null> {
    if (await this.#findByEmail(user.email)) return null;
    if (!(await firstWriter(this.#userIds.create(token(user.id), user.email)))) throw new Error(`constraint failed: users.id ${user.id}`);
    await this.#accountUsers.put(`${token(accountId)}.${token(user.id)}`, user.email);
    const made: UserRecord = { id: user.id, accountId, accountName, email: user.email, passwordHash: user.passwordHash, createdAt: now };
    if (await firstWriter(this.#users.create(token(user.email), JSON.stringify(made)))) return made;
    // Another replica made this email's user first: ours never existed.
    await Promise.all([this.#userIds.delete(token(user.id)), this.#accountUsers.delete(`${token(accountId)}.${token(user.id)}`)]);
    return null;
  }

  async findByEmail(email: string): Promise<UserRecord | null> {
    return natsCall(WHAT, () => this.#findByEmail(email));
  }

  async #findByEmail(email: string): Promise<UserRecord | null> {
    return storedValue<UserRecord>(await this.#users.get(token(email)));
  }

  async listUsers(accountId: string): Promise<UserRecord[]> {
    return natsCall(WHAT, async () => {
      const keys: string[] = [];
      for await (const k of await this.#accountUsers.keys(`${token(accountId)}.>`)) keys.push(k);
      const emails = await Promise.all(keys.map(async (k) => (await this.#accountUsers.get(k))?.string()));
      const users = await Promise.all(emails.map((e) => (e ? this.#findByEmail(e) : null)));
      return users.filter((u): u is UserRecord => u !== null && u.accountId === accountId).sort((a, b) => a.createdAt - b.createdAt);
    });
  }

  async createSession(idHash: string, userId: string, _now: number, expiresAt: number): Promise<void> {
    await natsCall(WHAT, async () => {
      const email = (await this.#userIds.get(token(userId)))?.string();
      if (!email) throw new Error("constraint failed: user_sessions.user_id references users");
      const session: Session = { userId, email, expiresAt };
      if (!(await firstWriter(this.#sessions.create(token(idHash), JSON.stringify(session))))) {
        throw new Error("constraint failed: user_sessions.id_hash");
      }
    });
  }

  async sessionUser(idHash: string, now: number): Promise<UserRecord | null> {
    return natsCall(WHAT, async () => {
      const session = storedValue<Session>(await this.#sessions.get(token(idHash)));
      if (!session || session.expiresAt <= now) return null;
      const user = await this.#findByEmail(session.email);
      return user?.id === session.userId ? user : null;
    });
  }

  async deleteSession(idHash: string): Promise<void> {
    await natsCall(WHAT, () => this.#sessions.delete(token(idHash)));
  }

  async createInvite(tokenHash: string, invite: Omit<InviteRecord, "acceptedAt">): Promise<void> {
    await natsCall(WHAT, async () => {
      const inviterEmail = (await this.#userIds.get(token(invite.invitedBy)))?.string();
      const inviter = inviterEmail ? await this.#findByEmail(inviterEmail) : null;
      if (!inviter) throw new Error("constraint failed: invites.invited_by references users");
      if (inviter.accountId !== invite.accountId) throw new Error("constraint failed: invites.account_id is the inviter's account");
      const stored: StoredInvite = { ...invite, acceptedAt: null, accountName: inviter.accountName };
      if (!(await firstWriter(this.#invites.create(token(tokenHash), JSON.stringify(stored))))) {
        throw new Error("constraint failed: invites.token_hash");
      }
    });
  }

  async openInvite(tokenHash: string, now: number): Promise<InviteRecord | null> {
    return natsCall(WHAT, async () => {
      const open = await this.#openInvite(tokenHash, now);
      return open && inviteRecord(open.invite);
    });
  }

  async #openInvite(tokenHash: string, now: number): Promise<{ invite: StoredInvite; revision: number } | null> {
    const entry = await this.#invites.get(token(tokenHash));
    const invite = storedValue<StoredInvite>(entry);
    if (!invite || invite.acceptedAt !== null || invite.expiresAt <= now) return null;
    if (await this.#findByEmail(invite.email)) return null;
    return { invite, revision: entry!.revision };
  }

  async acceptInvite(tokenHash: string, user: { id: string; passwordHash: string }, now: number): Promise<UserRecord | null> {
    return natsCall(WHAT, async () => {
      const open = await this.#openInvite(tokenHash, now);
      if (!open) return null;
      const { invite, revision } = open;
      const made = await this.#insertUser(invite.accountId, invite.accountName, { ...user, email: invite.email }, now);
      if (!made) return null;
      // Marked for what the dashboard lists; the user already makes it used (see openInvite).
      await firstWriter(this.#invites.update(token(tokenHash), JSON.stringify({ ...invite, acceptedAt: now }), revision));
      return made;
    });
  }

  async touchKey(keyId: string, at: number): Promise<void> {
    await natsCall(WHAT, () => this.#keyUse.put(token(keyId), String(at)));
  }

  async keysLastUsed(keyIds: readonly string[]): Promise<Map<string, number>> {
    return natsCall(WHAT, async () => {
      const entries = await Promise.all(keyIds.map(async (id) => [id, (await this.#keyUse.get(token(id)))?.string()] as const));
      const used = new Map<string, number>();
      for (const [id, at] of entries) if (at) used.set(id, Number(at));
      return used;
    });
  }
}

const inviteRecord = ({ accountName: _, ...invite }: StoredInvite): InviteRecord => invite;
