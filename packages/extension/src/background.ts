// The MV3 service worker's entry point (bundled by build.mjs). Chrome delivers events only to listeners added
// while the worker's script first runs: each module below adds its own at top level as it loads, so the order
// of these imports is the order in which listeners of one event run (navigation rules first).
import "./navigationRules.js";
import "./frames.js";
import "./httpStatus.js";
import "./downloadWatch.js";
import "./events.js";
import "./tabPush.js";
import "./webmcpEvents.js";
import "./popupMessages.js";
import { connect } from "./connection.js";

const KEEPALIVE_ALARM = "tabrelay-keepalive";

// The alarm is the backstop: if Chrome killed the worker anyway (connected, the pings keep it alive; waiting for a
// loopback broker, keepWorkerAlive does), the next alarm wakes it (at most 30 s later) and the new worker's connect()
// resumes the 250 ms probe loop where the dead one left off.
void chrome.alarms.create(KEEPALIVE_ALARM, { periodInMinutes: 0.5 });
chrome.alarms.onAlarm.addListener((alarm) => {
  if (alarm.name === KEEPALIVE_ALARM) void connect();
});
chrome.runtime.onStartup.addListener(() => void connect());
chrome.runtime.onInstalled.addListener(() => void connect());

void connect();
