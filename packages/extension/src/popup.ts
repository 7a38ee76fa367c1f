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

function render(status: Status): void {
  const box = $("state");
  box.dataset["state"] = status.state;
  box.textContent = `State: ${status.state}${status.lastError ? ` — ${status.lastError}` : ""}`;
  const url = $<HTMLInputElement>("url");
  if (!url.value) url.value = status.brokerUrl;
  $("browser").textContent = `This browser: ${status.label} (${status.browserId})`;
}

async function ask(message: unknown): Promise<Status> {
  return (await chrome.runtime.sendMessage(message)) as Status;
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

$("share").addEventListener("click", () => void shareActiveTab("share"));
$("unshare").addEventListener("click", () => void shareActiveTab("unshare"));

void ask({ type: "status" }).then(render);
