import { userInfo } from 'node:os';

/** The OS user running the command: who an audit row names when --by is not given. */
export function osUser(): string {
  try {
    return userInfo().username;
  } catch {
    return 'unknown';
  }
}
