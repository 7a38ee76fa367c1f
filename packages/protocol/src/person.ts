// What the broker tells the person's own browser (the extension's notifications and popup): the questions it puts to
// them (policy.ask) and what it knows of a tab (who holds it, what agents did there, the site's policy). Strings in
// them are for a person to read as text, never markup.

/**
 * A question as the extension shows it (broker gate/asks.ts). `text` is the broker's words with the page's label in
 * them: the extension shows it as text, never as markup.
 */
export interface AskNotice {
  id: string;
  /** The site the agent wants to act on: shown first, never cut. */
  host: string;
  /** What it wants to do: "click button «Add to cart»", "fill textbox «Comment», typing «hi»". */
  text: string;
  /** The agent's MCP client (as it named itself: the agent's words). */
  client: string;
  /** The browser and tab the agent wants to act in (a user's question goes to every browser of theirs). */
  browserId: string;
  tabId: number;
  url: string;
  expiresAt: number;
  /** The grant "Always" writes, in the config's words; null where only once or deny can be answered. */
  always: string | null;
}

/** The popup's view of one tab, from the broker. */
export interface TabStateView {
  tabId: number;
  /** The agent session holding the tab: its client and since when; null when no agent holds it. */
  holder: { client: string; since: number } | null;
  /** Whether the user took the tab back from the agents (Stop): their calls on it are refused. */
  takenBack: boolean;
  /** The last actions on the tab, newest first: tool, target, decision, time. */
  recent: Array<{
    time: number;
    tool: string;
    target: string;
    decision: string;
    code?: string;
    /**
     * For a refused call: the narrow grant that would have allowed it (the broker's offer), where it writes it, and
     * the hash of config.yaml it was offered on (a save on a file changed since is refused).
     */
    offer?: { record: number; text: string; key: string; base: string };
  }>;
  /** The read and write policy for the tab's site, in words. */
  policy: string[];
}
