// Moved to ../gate/ (decisions.ts, enforce.ts, tabRecord.ts); kept while the tools' imports move there.
export { BLANK } from "../gate/decisions.js";
export { checkBeforeNavigation, checkLanding, enforceOnCommit, explainByDenial, pickBrowser } from "../gate/enforce.js";
export { Denials } from "../gate/tabRecord.js";
