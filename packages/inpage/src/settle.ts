// Waiting for the page to render: one frame, and an element's box holding still.

/**
 * One rendering frame. Background tabs (where the agent usually works) get no animation frames at all and
 * throttle timers to 1 s, so there a message-channel tick stands in: layout is still computed on demand.
 */
export function frame(): Promise<void> {
  if (document.visibilityState === "visible") return new Promise<void>((r) => requestAnimationFrame(() => r()));
  return new Promise<void>((r) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => r();
    channel.port2.postMessage(0);
  });
}

/** Scrolls the element into view and waits until its box holds still for two frames (or ~500 ms). */
export async function settle(el: Element): Promise<void> {
  el.scrollIntoView({ block: "center", inline: "center", behavior: "instant" });
  let last = el.getBoundingClientRect();
  for (let i = 0; i < 30; i++) {
    await frame();
    const now = el.getBoundingClientRect();
    if (now.x === last.x && now.y === last.y && now.width === last.width && now.height === last.height) return;
    last = now;
  }
}
