// The commands the kit prints as advice (in its bin, its replay report and the reasons of held dead letters) are
// pasted into a shell: each value in them is one shell word, so a group id with a space or an & runs as printed.

/** Characters a POSIX shell takes literally in a word. */
const SHELL_SAFE = /^[A-Za-z0-9_@%+=:,./-]+$/;

/** `value` as one word of a POSIX shell: as it is when safe, else in single quotes (a ' inside as '\''). */
export function shellQuoted(value: string): string {
  return SHELL_SAFE.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}
