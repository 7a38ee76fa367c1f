interface Status {
  state: string;
  lastError: string;
  brokerUrl: string;
  browserId: string;
  label: string;
  sharedTabs: number[];
}

const $ = <T extends HTMLElement>(id: string): T => {
  const el = document.getElementById(id);
  if (!el) throw new Error(`popup.html lacks #${id}`);
  return el as T;
};

/** The broker's dashboard for a bridge URL (ws://host:port/bridge -> http://host:port/), or the local default. */
export function dashboardUrl(bridgeUrl: string): string {
  try {
    const url = new URL(bridgeUrl);
    if (url.protocol !== "ws:" && url.protocol !== "wss:") return DEFAULT_DASHBOARD;
    return `${url.protocol === "wss:" ? "https:" : "http:"}//${url.host}/`;
  } catch {
    return DEFAULT_DASHBOARD;
  }
}

const DEFAULT_BRIDGE = "ws://127.0.0.1:9333/bridge";
const DEFAULT_DASHBOARD = "http://127.0.0.1:9333/";

/** The dashboard link follows the broker URL being typed: the code is on that broker's dashboard. */
function showWhere(): void {
  $<HTMLAnchorElement>("dashboard").href = dashboardUrl($<HTMLInputElement>("url").value.trim());
}

function render(status: Status): void {
  const box = $("state");
  box.dataset["state"] = status.state;
  box.textContent = `State: ${status.state}${status.lastError ? ` — ${status.lastError}` : ""}`;
  const url = $<HTMLInputElement>("url");
  // Not paired yet: the broker a first start runs (tabrelay start / serve on this machine).
  if (!url.value) url.value = status.brokerUrl || DEFAULT_BRIDGE;
  showWhere();
  $("browser").textContent = `This browser: ${status.label} (${status.browserId})`;
}

async function ask(message: unknown): Promise<Status> {
  return await chrome.runtime.sendMessage<unknown, Status>(message);
}

async function activeTabId(): Promise<number | undefined> {
  const [tab] = await chrome.tabs.query({ active: true, currentWindow: true });
  return tab?.id;
}

$("pair").addEventListener("submit", (event) => {
  event.preventDefault();
  const url = $<HTMLInputElement>("url").value.trim();
  const token = $<HTMLInputElement>("code").value.trim();
  void ask({ type: "pair", url, token }).then(render);
  $<HTMLInputElement>("code").value = "";
  setTimeout(() => void ask({ type: "status" }).then(render), 1000);
});

async function shareActiveTab(type: "share" | "unshare"): Promise<void> {
  const tabId = await activeTabId();
  if (tabId !== undefined) render(await ask({ type, tabId }));
}

$("url").addEventListener("input", showWhere);
$("share").addEventListener("click", () => void shareActiveTab("share"));
$("unshare").addEventListener("click", () => void shareActiveTab("unshare"));

void ask({ type: "status" }).then(render);
