/**
 * A count with thousands separators ("50,000") for text an agent reads. Not toLocaleString: that loads ICU's
 * number formatting, ~5 MiB of resident memory in a process that otherwise never touches it.
 */
export function withThousands(count: number): string {
  return String(count).replace(/\B(?=(\d{3})+$)/g, ",");
}
