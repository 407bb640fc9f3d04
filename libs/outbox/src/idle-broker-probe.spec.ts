import { OutageLog } from '@tickets/sleep';
import { IdleBrokerProbe } from './idle-broker-probe';

const until = async (check: () => boolean, what: string) => {
  for (const deadline = Date.now() + 5_000; !check();) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
};

describe('IdleBrokerProbe', () => {
  it('probes only while no send reports, and its outcome sets the broker state', async () => {
    const state = new OutageLog(undefined, 'broker', 1_000);
    let probes = 0;
    let answer: Error | undefined = new Error('connect ECONNREFUSED');
    const probe = new IdleBrokerProbe(
      state,
      async () => {
        probes++;
        if (answer) throw answer;
      },
      20,
    );
    probe.start();
    try {
      // Sends reporting more often than the interval: no probe.
      for (let i = 0; i < 10; i++) {
        probe.reporter.ok();
        await new Promise((r) => setTimeout(r, 5));
      }
      expect(probes).toBe(0);
      await until(() => state.down, 'the probe to see the broker down');
      answer = undefined;
      await until(() => !state.down, 'the probe to see the broker back');
    } finally {
      probe.stop();
    }
  });

  it('drops the outcome of a probe during which a send reported', async () => {
    const state = new OutageLog(undefined, 'broker', 1_000);
    let release!: () => void;
    let started = false;
    const probe = new IdleBrokerProbe(
      state,
      () =>
        new Promise<void>((resolve) => {
          started = true;
          release = resolve;
        }),
      10,
    );
    probe.start();
    try {
      await until(() => started, 'a probe');
      probe.reporter.failed(new Error('send failed'));
      release(); // the probe answers after the send failed: the send's word stands
      await new Promise((r) => setTimeout(r, 5));
      expect(state.down).toBe(true);
    } finally {
      probe.stop();
    }
  });
});
