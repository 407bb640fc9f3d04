/** The Kafka protocol error type (e.g. `MESSAGE_TOO_LARGE`) somewhere in a kafkajs error's cause chain. */
export function kafkaErrorType(error: unknown): string | undefined {
  const seen = new Set<unknown>();
  let cur: unknown = error;
  while (cur && typeof cur === 'object' && !seen.has(cur)) {
    seen.add(cur);
    const type = (cur as { type?: unknown }).type;
    if (typeof type === 'string') return type;
    cur = (cur as { cause?: unknown }).cause;
  }
  return undefined;
}
