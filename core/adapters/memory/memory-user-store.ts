import type { InviteRecord, UserRecord, UserStore } from "../../ports/user-store.ts";
import { constraint, snapshot, type MemoryState } from "./memory-state.ts";

type NewUser = { id: string; email: string; passwordHash: string };

/** Dashboard users, sessions, invitations and key use in memory, in the accounts API keys name. */
export class MemoryUserStore implements UserStore {
  readonly #state: MemoryState;

  constructor(state: MemoryState) {
    this.#state = state;
  }

  async createUser(accountName: string, user: NewUser, now: number): Promise<UserRecord | null> {
    // A taken email is an answer (null), the account made all the same; a taken id is a failure that makes nothing.
    if (!this.#state.userEmails.has(user.email)) constraint(!this.#state.users.has(user.id), "users.id");
    return this.#insertUser(this.#state.account(accountName, now), accountName, user, now);
  }

  /** Null when the email already has a user. */
  #insertUser(accountId: string, accountName: string, user: NewUser, now: number): UserRecord | null {
    if (this.#state.userEmails.has(user.email)) return null;
    constraint(!this.#state.users.has(user.id), "users.id");
    const made = snapshot({ id: user.id, accountId, accountName, email: user.email, passwordHash: user.passwordHash, createdAt: now });
    this.#state.users.set(user.id, made);
    this.#state.userEmails.set(user.email, user.id);
    return made;
  }

  async findByEmail(email: string): Promise<UserRecord | null> {
    const id = this.#state.userEmails.get(email);
    return id === undefined ? null : this.#state.users.get(id)!;
  }

  async listUsers(accountId: string): Promise<UserRecord[]> {
    return [...this.#state.users.values()].filter((u) => u.accountId === accountId).sort((a, b) => a.createdAt - b.createdAt);
  }

  async createSession(idHash: string, userId: string, now: number, expiresAt: number): Promise<void> {
    constraint(this.#state.users.has(userId), "user_sessions.user_id references users");
    // Expired sessions of anyone go as new ones come: only live sessions are held.
    for (const [hash, s] of this.#state.sessions) if (s.expiresAt <= now) this.#state.sessions.delete(hash);
    constraint(!this.#state.sessions.has(idHash), "user_sessions.id_hash");
    this.#state.sessions.set(idHash, { userId, expiresAt });
  }

  async sessionUser(idHash: string, now: number): Promise<UserRecord | null> {
    const s = this.#state.sessions.get(idHash);
    return s && s.expiresAt > now ? (this.#state.users.get(s.userId) ?? null) : null;
  }

  async deleteSession(idHash: string): Promise<void> {
    this.#state.sessions.delete(idHash);
  }

  async createInvite(tokenHash: string, invite: Omit<InviteRecord, "acceptedAt">): Promise<void> {
    constraint(!this.#state.invites.has(tokenHash), "invites.token_hash");
    constraint(this.#state.accountNames.has(invite.accountId), "invites.account_id references accounts");
    constraint(this.#state.users.has(invite.invitedBy), "invites.invited_by references users");
    this.#state.invites.set(tokenHash, snapshot({ ...invite, acceptedAt: null }));
  }

  async openInvite(tokenHash: string, now: number): Promise<InviteRecord | null> {
    return this.#openInvite(tokenHash, now);
  }

  #openInvite(tokenHash: string, now: number): InviteRecord | null {
    const invite = this.#state.invites.get(tokenHash);
    return invite && invite.acceptedAt === null && invite.expiresAt > now ? invite : null;
  }

  async acceptInvite(tokenHash: string, user: { id: string; passwordHash: string }, now: number): Promise<UserRecord | null> {
    const invite = this.#openInvite(tokenHash, now);
    if (!invite) return null;
    const accountName = this.#state.accountNames.get(invite.accountId)!;
    const made = this.#insertUser(invite.accountId, accountName, { ...user, email: invite.email }, now);
    if (!made) return null;
    this.#state.invites.set(tokenHash, snapshot({ ...invite, acceptedAt: now }));
    return made;
  }

  async touchKey(keyId: string, at: number): Promise<void> {
    this.#state.keyUsage.set(keyId, at);
  }

  async keysLastUsed(keyIds: readonly string[]): Promise<Map<string, number>> {
    const used = new Map<string, number>();
    for (const id of keyIds) {
      const at = this.#state.keyUsage.get(id);
      if (at !== undefined) used.set(id, at);
    }
    return used;
  }
}
