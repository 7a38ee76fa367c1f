/**
 * The data dir, its token files and config files are taken only as tabrelay would have left them: owned by
 * the user, writable by nobody else, regular files (never symlinks). Where refusing would strand the user and
 * nothing untrusted was used (a data dir open to others, a token file readable by others), the problem is
 * fixed and reported; anything another user could have written is refused with the command that fixes it.
 * Files are opened with O_NOFOLLOW and judged by fstat of the opened descriptor, so the checked file is the
 * one read. POSIX only: on Windows, mode bits and uids mean nothing and the checks are skipped.
 */
import { randomBytes } from "node:crypto";
import {
  chmodSync,
  closeSync,
  constants,
  fchmodSync,
  fstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  readlinkSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
  type Stats,
} from "node:fs";
import { basename, dirname, join } from "node:path";

export type FileProblem = "symlink" | "not_regular" | "not_directory" | "not_owner" | "writable_by_others" | "shared_dir" | "unreadable";

export type FileCheck<T> = { ok: true; value: T; warnings: string[] } | { ok: false; code: FileProblem; message: string };

/** What a file is to tabrelay decides what is fixed and what is refused. */
export type FileRole = "token" | "config";

const POSIX = process.platform !== "win32";
const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0;
const O_NONBLOCK = constants.O_NONBLOCK ?? 0; // a planted FIFO must not hang start-up

function uid(): number | undefined {
  return POSIX && process.getuid ? process.getuid() : undefined;
}

function octal(mode: number): string {
  return `0${(mode & 0o7777).toString(8).padStart(3, "0")}`;
}

function shellQuote(path: string): string {
  return /^[\w@%+=:,./-]+$/.test(path) ? path : `'${path.replace(/'/g, "'\\''")}'`;
}

function refuse<T>(code: FileProblem, message: string): FileCheck<T> {
  return { ok: false, code, message };
}

function errnoOf(error: unknown): string | undefined {
  return error instanceof Error && "code" in error && typeof error.code === "string" ? error.code : undefined;
}

/**
 * Creates the data dir (0700) or checks the existing one. Refused: not a directory, owned by another user,
 * or a shared sticky directory such as /tmp. Open to group or others but ours: made 0700, with a warning.
 * A symlinked data dir is followed: the user named that path (TABRELAY_DATA_DIR, --data-dir, ~/.tabrelay).
 */
export function secureDataDir(dataDir: string): FileCheck<undefined> {
  let created = false;
  try {
    created = mkdirSync(dataDir, { recursive: true, mode: 0o700 }) !== undefined;
  } catch (error) {
    if (errnoOf(error) !== "EEXIST")
      return refuse("unreadable", `${dataDir}: cannot create the data dir: ${error instanceof Error ? error.message : String(error)}`);
  }
  let stats: Stats;
  try {
    stats = statSync(dataDir);
  } catch (error) {
    return refuse("unreadable", `${dataDir}: cannot read the data dir: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (!stats.isDirectory())
    return refuse("not_directory", `${dataDir}: the data dir is not a directory; pass --data-dir (or TABRELAY_DATA_DIR) naming a directory of your own`);
  const me = uid();
  if (me === undefined) return { ok: true, value: undefined, warnings: [] };
  if (stats.uid !== me) {
    return refuse(
      "not_owner",
      `${dataDir}: the data dir belongs to uid ${stats.uid}, not to you (uid ${me}), so its owner could replace the tokens and config in it; use a data dir of your own (--data-dir or TABRELAY_DATA_DIR), or: chown ${me} ${shellQuote(dataDir)} && chmod 700 ${shellQuote(dataDir)}`,
    );
  }
  const mode = stats.mode & 0o7777;
  if (mode & 0o022 && mode & 0o1000) {
    return refuse(
      "shared_dir",
      `${dataDir}: the data dir is a shared directory (mode ${octal(mode)}, like /tmp) where others can create files; use a directory of your own (--data-dir or TABRELAY_DATA_DIR), e.g. ${join(dirname(dataDir), "tabrelay")} after mkdir -m 700`,
    );
  }
  if ((mode & 0o077) === 0) return { ok: true, value: undefined, warnings: [] };
  chmodSync(dataDir, 0o700);
  if (created) return { ok: true, value: undefined, warnings: [] }; // mkdir's mode is cut by the umask, never widened; this is belt and braces
  const writable = (mode & 0o022) !== 0;
  return {
    ok: true,
    value: undefined,
    warnings: [
      writable
        ? `${dataDir}: the data dir was writable by ${mode & 0o002 ? "every user" : "its group"} (mode ${octal(mode)}): they could have replaced the tokens and config in it. tabrelay made it 0700 and checks each file in it; look over its config.yaml if you did not set that mode yourself.`
        : `${dataDir}: the data dir was readable by other users (mode ${octal(mode)}); tabrelay made it 0700 (it holds the tokens, the audit log and the browser profile).`,
    ],
  };
}

function fixFor(path: string, role: FileRole): string {
  const file = shellQuote(path);
  return role === "token"
    ? `if you wrote it yourself and trust it: chmod 600 ${file}; otherwise delete it (rm ${file}) and tabrelay creates a new one (then pair the browser again and update the token in your MCP client)`
    : `check its contents, then: chmod 600 ${file}`;
}

/**
 * Reads a token or config file. `undefined` when it does not exist. Refused: a symlink (unless `followSymlink`,
 * for a path the user named with --config), not a regular file, owned by someone else (root may own a config
 * file), writable by group or others. A token file readable by group or others is made 0600, with a warning.
 */
export function readOwnFile(path: string, role: FileRole, options: { followSymlink?: boolean } = {}): FileCheck<string | undefined> {
  const name = role === "token" ? `the token file ${path}` : `the config file ${path}`;
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | O_NONBLOCK | (options.followSymlink ? 0 : O_NOFOLLOW));
  } catch (error) {
    const code = errnoOf(error);
    if (code === "ENOENT") return { ok: true, value: undefined, warnings: [] };
    if (!options.followSymlink && (code === "ELOOP" || code === "EMLINK")) return refuse("symlink", symlinkMessage(path, name, role));
    return refuse("unreadable", `${name}: cannot read it: ${error instanceof Error ? error.message : String(error)}`);
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile())
      return refuse(
        "not_regular",
        `${name} is not a regular file; delete it (rm ${shellQuote(path)})${role === "token" ? " and tabrelay creates a new one" : ""}`,
      );
    const warnings: string[] = [];
    const me = uid();
    if (me !== undefined) {
      const mode = stats.mode & 0o7777;
      const owners = role === "config" ? [me, 0] : [me];
      if (!owners.includes(stats.uid)) {
        return refuse(
          "not_owner",
          `${name} belongs to uid ${stats.uid}, not to you (uid ${me}): another user put it there. ${role === "token" ? `Delete it (rm ${shellQuote(path)}) and tabrelay creates a new one` : `Check its contents, then make it yours: chown ${me} ${shellQuote(path)} && chmod 600 ${shellQuote(path)}`}`,
        );
      }
      if (mode & 0o022) {
        return refuse(
          "writable_by_others",
          `${name} is writable by ${mode & 0o002 ? "every user" : "its group"} (mode ${octal(mode)}), so anyone could have written ${role === "token" ? "the token in it" : "its settings"}; tabrelay will not use it. Fix: ${fixFor(path, role)}`,
        );
      }
      if (role === "token" && mode & 0o044) {
        fchmodSync(fd, 0o600);
        warnings.push(
          `${name} was readable by other users (mode ${octal(mode)}); tabrelay made it 0600. Anyone on this machine may have read the token: if that matters, delete it (rm ${shellQuote(path)}) and tabrelay creates a new one.`,
        );
      }
    }
    return { ok: true, value: readFileSync(fd, "utf8"), warnings };
  } finally {
    closeSync(fd);
  }
}

function symlinkMessage(path: string, name: string, role: FileRole): string {
  let target = "";
  try {
    target = readlinkSync(path);
  } catch {
    // gone meanwhile: the message still holds
  }
  const to = target ? ` (to ${target})` : "";
  return role === "token"
    ? `${name} is a symbolic link${to}; tabrelay reads tokens only from regular files in its data dir, since a link can hand it a token someone else chose. Delete the link (rm ${shellQuote(path)}) and tabrelay creates a new token`
    : `${name} is a symbolic link${to}; tabrelay reads the config in its data dir only from a regular file, since a link can point it at a file others can write. Replace the link with a copy (cp --remove-destination ${shellQuote(target || "TARGET")} ${shellQuote(path)}), or name the file you mean with --config ${shellQuote(target || "FILE")}`;
}

/**
 * Writes a secret file 0600 atomically: a new file created with O_EXCL|O_NOFOLLOW next to it (no link or
 * planted file is written through), then renamed over the path.
 */
export function writeSecretFile(path: string, content: string): void {
  const temp = join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(6).toString("hex")}`);
  const fd = openSync(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | O_NOFOLLOW, 0o600);
  try {
    fchmodSync(fd, 0o600);
    writeSync(fd, content);
  } catch (error) {
    closeSync(fd);
    unlinkSync(temp);
    throw error;
  }
  closeSync(fd);
  renameSync(temp, path);
}
