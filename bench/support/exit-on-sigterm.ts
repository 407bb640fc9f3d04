// Preloaded (`node -r`) into a process under `--cpu-prof`: V8 writes the profile only when the process exits
// normally, so a SIGTERM ends it at once with exit(0), whatever the process's own stop would do.
process.once('SIGTERM', () => process.exit(0));
