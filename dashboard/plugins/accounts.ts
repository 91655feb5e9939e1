import fp from "fastify-plugin";
import { logoBlobKey } from "../../core/domain/branding.ts";
import type { KeyStore } from "../../core/ports/key-store.ts";
import type { UserStore } from "../../core/ports/user-store.ts";
import type { Services } from "../../core/runtime/services.ts";
import { createShareToken, type ShareLinkDays, verifyShareToken } from "../auth/share-links.ts";

/** The people of an account: users, their sessions and invitations. */
export type Users = Pick<
  UserStore,
  | "findByEmail"
  | "listUsers"
  | "createInvite"
  | "openInvite"
  | "acceptInvite"
  | "createSession"
  | "deleteSession"
  | "sessionUser"
  | "keysLastUsed"
>;

/** An account's API keys, review policy and branding, and its logo's image. */
export type Accounts = Pick<
  KeyStore,
  "listIn" | "createKey" | "revoke" | "reviewPolicy" | "setReviewPolicy" | "branding" | "setBranding"
> & {
  putLogo(id: string, png: Buffer): Promise<void>;
  deleteLogo(id: string): Promise<void>;
};

/** Read-only report links (dashboard/auth/share-links.ts), signed with the service's share-link key. */
export type ShareLinks = {
  create(inspectionId: string, days: ShareLinkDays): ReturnType<typeof createShareToken>;
  verify(token: string): ReturnType<typeof verifyShareToken>;
};

declare module "fastify" {
  interface FastifyInstance {
    users: Users;
    accounts: Accounts;
    shareLinks: ShareLinks;
  }
}

/** The `users`, `accounts` and `shareLinks` decorators, for the dashboard's route plugins (dependency "accounts"). */
export const accountsPlugin = fp<{ services: Services }>(
  async (app, { services: s }) => {
    app.decorate("users", s.users satisfies Users);
    app.decorate("accounts", {
      listIn: (accountId, livemode) => s.keys.listIn(accountId, livemode),
      createKey: (...args) => s.keys.createKey(...args),
      revoke: (id, at) => s.keys.revoke(id, at),
      reviewPolicy: (accountId, livemode) => s.keys.reviewPolicy(accountId, livemode),
      setReviewPolicy: (accountId, livemode, policy) => s.keys.setReviewPolicy(accountId, livemode, policy),
      branding: (accountId) => s.keys.branding(accountId),
      setBranding: (accountId, branding) => s.keys.setBranding(accountId, branding),
      putLogo: (id, png) => s.blobs.put(logoBlobKey(id), png, "image/png"),
      deleteLogo: (id) => s.blobs.delete(logoBlobKey(id)),
    } satisfies Accounts);
    app.decorate("shareLinks", {
      create: (inspectionId, days) => createShareToken(s.signingKeys.shareLinks, inspectionId, s.clock.now(), days),
      verify: (token) => verifyShareToken(s.signingKeys.shareLinks, token, s.clock.now()),
    } satisfies ShareLinks);
  },
  { name: "accounts" },
);
