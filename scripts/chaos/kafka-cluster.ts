// A Kafka cluster of its own (scripts/kafka/kafka.sh with --brokers N on its own ports and state dir),
// for the chaos run and the cluster test. It never touches the default broker on :9092: every call
// passes KAFKA_PORT / KAFKA_CONTROLLER_PORT / KAFKA_CLUSTER_DIR, and `down` stops only the nodes whose
// pid files live in that cluster dir.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, sep } from 'node:path';
import { promisify } from 'node:util';
import { Kafka, logLevel, type Admin } from 'kafkajs';

const run = promisify(execFile);
/** The repository root, from the source (scripts/chaos) or the build (dist/scripts/chaos). */
export const ROOT = __dirname.includes(`${sep}dist${sep}`)
  ? join(__dirname, '..', '..', '..')
  : join(__dirname, '..', '..');
const KAFKA_SH = join(ROOT, 'scripts', 'kafka', 'kafka.sh');

export interface ClusterOptions {
  brokers: number;
  /** Client port of node 1; node i listens on port + i - 1. */
  port: number;
  /** Controller port of node 1 (default port + 100). */
  controllerPort?: number;
  /** Config, pid files, logs and data of every node. */
  dir: string;
}

/** Leader node id per partition, in partition order. */
export type Leaders = Record<number, number>;

export class KafkaCluster {
  readonly bootstrap: string[];

  constructor(private readonly o: ClusterOptions) {
    this.bootstrap = Array.from({ length: o.brokers }, (_, i) => `127.0.0.1:${o.port + i}`);
  }

  private env(): NodeJS.ProcessEnv {
    return {
      ...process.env,
      KAFKA_BROKER_COUNT: String(this.o.brokers),
      KAFKA_PORT: String(this.o.port),
      KAFKA_CONTROLLER_PORT: String(this.o.controllerPort ?? this.o.port + 100),
      KAFKA_CLUSTER_DIR: this.o.dir,
    };
  }

  private async sh(...args: string[]): Promise<string> {
    const { stdout, stderr } = await run('bash', [KAFKA_SH, ...args], { env: this.env(), maxBuffer: 8 << 20 });
    return `${stdout}${stderr}`;
  }

  /** Starts every node that does not answer (all of them the first time); resolves when all are ready. */
  up(): Promise<string> {
    return this.sh('up');
  }

  /** Stops every node of this cluster (SIGTERM, then SIGKILL after 30 s). */
  down(): Promise<string> {
    return this.sh('down');
  }

  /** The JVM pid of node `id` (1-based), or undefined when its pid file is missing. */
  pid(id: number): number | undefined {
    try {
      const pid = Number(readFileSync(join(this.o.dir, `node-${id}`, 'kafka.pid'), 'utf8').trim());
      return Number.isInteger(pid) && pid > 0 ? pid : undefined;
    } catch {
      return undefined;
    }
  }

  /** SIGKILL of node `id`: no controlled shutdown, so its partitions move only after the controller notices. */
  kill(id: number, signal: NodeJS.Signals = 'SIGKILL'): number | undefined {
    const pid = this.pid(id);
    if (pid === undefined) return undefined;
    try {
      process.kill(pid, signal);
    } catch {
      return undefined;
    }
    return pid;
  }

  admin(clientId = 'chaos-admin'): Admin {
    return new Kafka({
      clientId,
      brokers: this.bootstrap,
      logLevel: logLevel.NOTHING,
      retry: { retries: 10, initialRetryTime: 200, maxRetryTime: 2_000 },
    }).admin();
  }
}

/** Leader per partition of `topic` as the cluster's metadata says now. */
export async function partitionLeaders(admin: Admin, topic: string): Promise<Leaders> {
  const meta = await admin.fetchTopicMetadata({ topics: [topic] });
  const leaders: Leaders = {};
  for (const p of meta.topics[0]?.partitions ?? []) leaders[p.partitionId] = p.leader;
  return leaders;
}

/** The broker that leads the most partitions (lowest id on a tie). */
export function busiestLeader(leaders: Leaders): number {
  const count = new Map<number, number>();
  for (const l of Object.values(leaders)) count.set(l, (count.get(l) ?? 0) + 1);
  return [...count.entries()].sort((a, b) => b[1] - a[1] || a[0] - b[0])[0][0];
}

/** "p0=1 p1=2 ..." for logs. */
export const formatLeaders = (leaders: Leaders): string =>
  Object.entries(leaders)
    .map(([p, l]) => `p${p}=${l}`)
    .join(' ');
