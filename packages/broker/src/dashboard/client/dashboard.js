// @ts-check
// The dashboard's script: an ES module served as /dashboard/app.js, importing its siblings from /dashboard/<name>.js
// (packages/broker/src/dashboard/page.ts serves every file of this folder it lists). Plain browser JavaScript, no
// build step, type-checked by `npm run typecheck` (tsconfig.json beside it):
//   dom.js       DOM helpers; page-derived strings reach the DOM only through pageBdi or, in attributes, pageString
//   api.js       the calls to /dashboard/api/* and the shapes of their answers; the session's end
//   browsers.js  the state poll: emergency stop state, audit health, browsers and their agent tabs
//   pages.js     page tools: the pages connected over /page, their tools, each one's state and grant
//   preview.js   the live view of the watched tab
//   audit.js     the activity table, from the audit stream
//   controls.js  emergency stop and resume, approving a changed page tool, log out, policy and pairing
//   asks.js      the questions put to you (policy.ask): allow once, always, or deny
//   policy.js    changing the policy (an admin's): the policy section's forms and Remove buttons, the activity's offers
//   chat.js      the chat panel: a task for the model, its programs, their results, refusals and the answer, streamed
import { pollAsks } from "./asks.js";
import { startAudit } from "./audit.js";
import { pollState } from "./browsers.js";
import { startChat } from "./chat.js";
import { loadConfig } from "./controls.js";
import { schedulePreview } from "./preview.js";

void pollState();
void pollAsks();
schedulePreview(300);
startAudit();
void loadConfig();
void startChat();
