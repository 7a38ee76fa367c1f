// `tabrelay serve --provider browserbase|kernel`: a hosted browser, created through the provider's API and
// driven over CDP. The provider runs the browser (ownsBrowser false); stop() ends the session, which is
// billed until then, so it is also called when attaching fails.
//
// Imported from the broker's build output until @tabrelay/broker's index exports these.
import { createProviderSession, ProviderError, type HostedProvider, type SecretSink } from "@tabrelay/broker";

/** The one Broker method used here (structural, so any build of Broker fits). */
export interface CdpAttacher {
  /** The broker's secrets registry: the API key and the session's URLs are registered in it. */
  readonly secrets?: SecretSink;
  attachCdp(endpoint: string, options: { label: string; ownsBrowser: boolean }): Promise<{ readonly closed: boolean; close(reason: string): void }>;
}

export interface ProviderHandle {
  /** Detaches the browser and ends the provider's session. Idempotent; never throws. */
  stop(): Promise<void>;
}

export async function startWithProvider(
  name: HostedProvider,
  broker: CdpAttacher,
  env: NodeJS.ProcessEnv,
  opts: { timeoutSeconds?: number; fetchImpl?: typeof fetch } = {},
): Promise<ProviderHandle> {
  const session = await createProviderSession(name, env, { ...opts, ...(broker.secrets ? { secrets: broker.secrets } : {}) });
  let driver: Awaited<ReturnType<CdpAttacher["attachCdp"]>>;
  try {
    driver = await broker.attachCdp(session.endpoint, { label: session.label, ownsBrowser: false });
  } catch (error) {
    await session.stop();
    const reason = session.redact(error instanceof Error ? error.message : String(error));
    throw new ProviderError(name, "attach", `${session.label}: session ${session.id} was created but could not be attached (${reason}); it was ended`);
  }
  process.stderr.write(`tabrelay: ${describe(session)}\n`);
  let stopping: Promise<void> | undefined;
  return {
    stop: () =>
      (stopping ??= (async () => {
        if (!driver.closed) driver.close("the provider session is ending");
        await session.stop();
      })()),
  };
}

function describe(session: { provider: HostedProvider; id: string; expiresAt?: number; idleTimeoutSeconds?: number }): string {
  const title = session.provider === "browserbase" ? "Browserbase session" : "Kernel browser";
  if (session.expiresAt !== undefined) {
    const minutes = Math.max(0, Math.round((session.expiresAt - Date.now()) / 60_000));
    return `${title} ${session.id} attached over CDP; the provider ends it at ${new Date(session.expiresAt).toISOString()} (in about ${minutes} min)`;
  }
  if (session.idleTimeoutSeconds !== undefined) {
    return `${title} ${session.id} attached over CDP; the provider ends it after ${session.idleTimeoutSeconds} s without a connection`;
  }
  return `${title} ${session.id} attached over CDP; it ends when tabrelay stops or at the provider's default timeout`;
}
