// When the extension dials its broker again. Pure (no chrome.*), so the schedule is unit-tested on its own.

/** Between probes of a broker on this machine while nothing listens there. */
export const LOOPBACK_RETRY_MS = 250;
const BACKOFF_BASE_MS = 250;
const BACKOFF_CAP_MS = 30_000;
/** A listener on this machine that turned us away is asked again at most this far apart: it costs this machine only. */
const LOOPBACK_BACKOFF_CAP_MS = 5_000;

/**
 * The wait before the next dial. `attempt` counts the dials in a row that reached a listener (any dial, for a remote
 * broker) and ended without a welcome. A broker on this machine that is simply not up yet is tried again every
 * LOOPBACK_RETRY_MS however long it was down: a refused loopback connection costs nothing, and someone restarting
 * tabrelay waits for nothing. A remote broker gets exponential backoff with jitter up to 30 s, so a thousand browsers
 * coming back to a restarted broker spread out; a local listener that turned us away (another program on the port, a
 * broker stopped from its dashboard) the same up to 5 s.
 *
 * @example reconnectDelay(0, true) // 250
 * @example reconnectDelay(3, false, () => 0.5) // 1500: the ceiling 2000, jittered within [1000, 2000]
 */
export function reconnectDelay(attempt: number, loopback: boolean, random: () => number = Math.random): number {
  if (loopback && attempt === 0) return LOOPBACK_RETRY_MS;
  const ceiling = Math.min(loopback ? LOOPBACK_BACKOFF_CAP_MS : BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** attempt);
  return ceiling / 2 + random() * (ceiling / 2);
}

/** The close code of a broker that is draining (SIGTERM, a deploy): RFC 6455 1012 "service restart". */
export const DRAIN_CLOSE_CODE = 1012;
/** A drained browser dials again within this long. */
export const DRAIN_REDIAL_MS = 250;
/** Drain closes in a row, with no welcome between them, that are redialled at once; past them the ordinary backoff. */
export const DRAIN_FAST_REDIALS = 3;

/**
 * The wait before dialling again after the broker closed the socket because it is draining, or undefined for the
 * ordinary schedule (reconnectDelay). The configured URL is a load balancer's in a team's deployment, so a dial at
 * once reaches another broker: no backoff, only a jitter within DRAIN_REDIAL_MS so that a drained broker's thousand
 * browsers do not arrive at the same instant. `streak` counts drain closes since the last welcome (this one
 * included); a dial that lands on a draining broker again is redialled at once too, but a cluster that is all
 * draining gets the ordinary backoff after DRAIN_FAST_REDIALS of them.
 *
 * @example drainRedialDelay(1, () => 0.5) // 125
 * @example drainRedialDelay(4) // undefined
 */
export function drainRedialDelay(streak: number, random: () => number = Math.random): number | undefined {
  return streak <= DRAIN_FAST_REDIALS ? random() * DRAIN_REDIAL_MS : undefined;
}
