// Preloaded (`node -r`) into a process under `--cpu-prof`: Nest's shutdown hook re-raises SIGTERM after
// closing the app, which kills the process before V8 writes the profile. Exiting normally writes it.
process.once('SIGTERM', () => process.exit(0));
