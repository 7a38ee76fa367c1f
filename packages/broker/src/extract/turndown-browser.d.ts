// Turndown's browser build has the same API as its main entry (see extract.ts for why we load it).
declare module "turndown/lib/turndown.browser.cjs.js" {
  import TurndownService from "turndown";
  export default TurndownService;
}
