/**
 * The broker's version, as its package.json says (packages/broker/test/config/core.test.ts holds them equal): a constant rather than a read
 * of package.json at start-up, so the runtime-neutral core has it without a file system.
 */
export const VERSION = "0.1.0";
