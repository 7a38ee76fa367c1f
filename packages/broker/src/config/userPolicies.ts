// Per-user policy (issue 16 §1): the config's policy is every user's base; `users.<name>.policy` may narrow it for
// that user (more `deny` entries: refused to read and to write) and add write grants for that user only (`write`,
// the same grants as policy.write). It is compiled once at start-up, like the base, and applies wherever the base
// does for that user's calls and browsers: the gate, the network rules in their browsers, and the dashboard.
//
// @example
//   users:
//     alice:
//       policy:
//         deny: [{ host: "bank.example" }]
//         write: { click: { "shop.example": { label: "^Buy now$" } } }
import { z } from "zod";
import { compileReadPolicy, type CompiledReadPolicy, type ReadPolicyInput } from "../policy/readPolicy.js";
import { compileWritePolicy, type CompiledWritePolicy, type WritePolicyInput } from "../policy/writePolicy.js";

/** What a user's section may say: never a read allow (that would widen the base), never page tool grants. */
export function userPoliciesSchema<D extends z.ZodType, W extends z.ZodType>(deny: D, write: W) {
  return z.record(
    z.string().regex(/^[a-z0-9][a-z0-9._-]{0,39}$/, "a user's name as `tabrelay users list` shows it (lowercase letters, digits, . _ -)"),
    z.object({ policy: z.object({ deny: deny.optional(), write: write.optional() }).strict() }).strict(),
  );
}

export interface UserPolicy {
  policy: CompiledReadPolicy;
  writePolicy: CompiledWritePolicy;
}

type DenyEntry = { host: string; path: string };
type WriteSection = NonNullable<WritePolicyInput["write"]>;

/** Compiles each user's policy over the base inputs; throws an Error naming `users.<name>.policy...` on a bad one. */
export function compileUserPolicies(
  users: Record<string, { policy: { deny?: DenyEntry[]; write?: WriteSection } }>,
  base: { read: ReadPolicyInput; write: WritePolicyInput },
  ranking: readonly string[],
): ReadonlyMap<string, UserPolicy> {
  const compiled = new Map<string, UserPolicy>();
  for (const [name, { policy }] of Object.entries(users)) {
    if (name === "default")
      throw new Error(`users.default: "default" is the broker's own user, whose policy is the top-level policy; name a user from \`tabrelay users list\``);
    const where = `users.${name}.policy`;
    const deny = [...base.read.deny, ...(policy.deny ?? [])];
    try {
      compiled.set(name, {
        policy: compileReadPolicy({ ...base.read, deny }, ranking),
        writePolicy: compileWritePolicy({
          deny,
          write: mergeGrants(base.write.write ?? {}, policy.write ?? {}, where),
          ...(base.write.configName ? { configName: base.write.configName } : {}),
        }),
      });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      throw new Error(message.startsWith(where) ? message : `${where}: ${message}`, { cause: error });
    }
  }
  return compiled;
}

/**
 * The base's grants plus the user's. A host granted in both for the same kind takes either label (one regex, the
 * two as alternatives); a keys grant pairs keys with a label, so a host with a keys grant in both is refused.
 */
function mergeGrants(base: WriteSection, mine: WriteSection, where: string): WriteSection {
  const merged: Record<string, Record<string, Record<string, string>>> = {};
  for (const [kind, hosts] of Object.entries(base)) merged[kind] = { ...(hosts as Record<string, Record<string, string>>) };
  for (const [kind, hosts] of Object.entries(mine)) {
    const into = (merged[kind] ??= {});
    for (const [host, grant] of Object.entries(hosts as Record<string, Record<string, string>>)) {
      const existing = into[host];
      if (!existing) {
        into[host] = grant;
        continue;
      }
      if (kind === "keys") {
        throw new Error(
          `${where}.write.keys: "${host}" has a keys grant in policy.write.keys already, and a keys grant pairs its keys with its label; give the user's combination its own entry in policy.write.keys, or drop one of them`,
        );
      }
      if (kind === "eval") continue;
      into[host] = { ...existing, label: `(?:${existing["label"] ?? ""})|(?:${grant["label"] ?? ""})` };
    }
  }
  return merged;
}

const derived = new WeakMap<object, Map<string, { own: UserPolicy; mine: object }>>();

/**
 * The config a user's calls and browsers see: the base config with that user's read and write policy in place of
 * the base's. The same object for the same user, so caches keyed by config stay warm; the base for a user without
 * a section (and for the broker's own user).
 */
export function configFor<C extends { policy: CompiledReadPolicy; writePolicy: CompiledWritePolicy; userPolicies: ReadonlyMap<string, UserPolicy> }>(
  config: C,
  userName: string | undefined,
): C {
  const own = userName === undefined ? undefined : config.userPolicies.get(userName);
  if (!own || (config.policy === own.policy && config.writePolicy === own.writePolicy)) return config;
  let byUser = derived.get(config);
  if (!byUser) derived.set(config, (byUser = new Map()));
  const cached = byUser.get(userName as string);
  if (cached?.own === own) return cached.mine as C;
  // The user's policy over the config itself (its prototype): every other field is read from the config as it is
  // now, so a config.yaml change applied in place (config/reload.ts) reaches users' views too; a change to the
  // user's own policy makes new `own` objects, and so a new view.
  const mine = Object.create(config, { policy: { value: own.policy, enumerable: true }, writePolicy: { value: own.writePolicy, enumerable: true } }) as C;
  byUser.set(userName as string, { own, mine });
  return mine;
}
