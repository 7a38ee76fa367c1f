import { createHash, timingSafeEqual } from "node:crypto";

/** Constant-time string comparison (hashing first makes lengths equal). */
export function safeEqual(a: string, b: string): boolean {
  const ha = createHash("sha256").update(a).digest();
  const hb = createHash("sha256").update(b).digest();
  return timingSafeEqual(ha, hb);
}

/** The rule for tokens tabrelay does not generate itself (environment, hand-written files); README "Safety model". */
export const MIN_TOKEN_BITS = 128;
export const TOKEN_ADVICE = "generate one with: openssl rand -hex 32 (or unset the variable and tabrelay generates and stores one)";

/**
 * An estimate of a token's strength, as a floor against obvious mistakes (it cannot tell a random token from
 * a well-disguised phrase): the length of its shortest repeating unit times log2 of the alphabet its character
 * classes span (hex digits 16, digits 10, lower case 26, upper case 26, anything else 33 more).
 * `openssl rand -hex 16` (32 hex digits) is 128 bits; `aaaaaaaaaaaaaaaa` is 75 and `abab...` counts as `ab`.
 */
export function estimatedTokenBits(token: string): number {
  const chars = [...token];
  const unit = shortestPeriod(chars);
  let alphabet: number;
  if (/^[0-9]+$/.test(token)) alphabet = 10;
  else if (/^[0-9a-f]+$/.test(token) || /^[0-9A-F]+$/.test(token)) alphabet = 16;
  else alphabet = (/[0-9]/.test(token) ? 10 : 0) + (/[a-z]/.test(token) ? 26 : 0) + (/[A-Z]/.test(token) ? 26 : 0) + (/[^0-9a-zA-Z]/.test(token) ? 33 : 0);
  return alphabet <= 1 ? 0 : unit * Math.log2(alphabet);
}

function shortestPeriod(chars: string[]): number {
  const n = chars.length;
  for (let period = 1; period <= n / 2; period++) {
    if (n % period !== 0) continue;
    if (chars.every((c, i) => c === chars[i % period])) return period;
  }
  return n;
}

/** Why a token is too weak to use, or undefined: >= 128 bits by the estimate above and >= 8 different characters. */
export function weakTokenReason(token: string): string | undefined {
  const distinct = new Set(token).size;
  if (distinct < 8) return `it uses only ${distinct} different character${distinct === 1 ? "" : "s"} (at least 8 are needed)`;
  const bits = Math.floor(estimatedTokenBits(token));
  if (bits < MIN_TOKEN_BITS) return `it carries about ${bits} bits by its length and alphabet (at least ${MIN_TOKEN_BITS} are needed, e.g. 32 hex digits or 22 letters and digits)`;
  return undefined;
}
