/**
 * Wire protocol between the tabrelay broker and browsers (the MV3 extension today).
 *
 * Types, constants and the handshake proofs (handshake.ts): both ends import this module. Every frame is a JSON
 * object with a discriminant `type`. The browser dials the broker's `/bridge` WebSocket and the two prove to
 * each other that they know the pairing secret, which never crosses the wire: browser `hello` (a nonce and the
 * endpoint it dialled), broker `challenge` (its nonce, the endpoint it proves it is, and its proof), browser `auth` (its
 * proof, once the broker's checked out for the endpoint dialled), broker `welcome`. From the challenge on, every frame
 * either way is sealed under the connection's keys (`<mac>.<seq>.<json>`). The browser serves `call`s only on a socket
 * whose broker proved itself and welcomed it, and only sealed ones.
 *
 * @example
 * // broker -> browser
 * const call: BridgeCall<"tabs.list"> = { type: "call", id: 7, method: "tabs.list", params: {} };
 * // browser -> broker
 * const reply: BridgeResult = { type: "result", id: 7, ok: true, result: { tabs: [] } };
 */
export * from "./bridge.js";
export * from "./errors.js";
export * from "./frames.js";
export * from "./handshake.js";
export * from "./inpage.js";
export * from "./person.js";
