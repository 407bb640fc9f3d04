// A connection string read as pg-connection-string 2.x reads it, for the kit's checks and messages (the kit does not
// call its parse: that reads the sslcert/sslkey/sslrootcert files).

/** pg-connection-string's own stand-in for the empty host of `postgresql://me@/db?host=/socket`. */
export const DUMMY_HOST = '___DUMMY___';

/**
 * `url` as a URL (relative to `base` when given, as pg reads one without a scheme relative to postgres://base),
 * tried again with the stand-in host for "user@/db?host=/socket" as pg does; `dummy` says the stand-in is in it.
 * Undefined when neither parses.
 */
export function readConnectionUrl(url: string, base?: string): { u: URL; dummy: boolean } | undefined {
  try {
    return { u: new URL(url, base), dummy: false };
  } catch {
    try {
      return { u: new URL(url.replace('@/', `@${DUMMY_HOST}/`), base), dummy: true };
    } catch {
      return undefined;
    }
  }
}
