import { WakeableSleep } from './wakeable-sleep';

const LONG = 60_000; // never reached: every test ends its sleeps by other means

describe('WakeableSleep', () => {
  it('ends a wakeable sleep on wake(), and not a non-wakeable one', async () => {
    const s = new WakeableSleep();
    const wakeable = s.sleep(LONG);
    const pacing = s.sleep(LONG, { wakeable: false });
    s.wake();
    await expect(wakeable).resolves.toBe('woken');
    s.interrupt();
    await expect(pacing).resolves.toBe('interrupted');
  });

  it('remembers a wake-up that came between sleeps, for exactly one sleep', async () => {
    const s = new WakeableSleep();
    s.wake();
    await expect(s.sleep(LONG)).resolves.toBe('woken');
    const second = s.sleep(LONG);
    s.interrupt();
    await expect(second).resolves.toBe('interrupted');
  });

  it('clearWake() forgets a remembered wake-up', async () => {
    const s = new WakeableSleep();
    s.wake();
    s.clearWake();
    const next = s.sleep(LONG);
    s.interrupt();
    await expect(next).resolves.toBe('interrupted');
  });

  it('runs out on its own', async () => {
    await expect(new WakeableSleep().sleep(1)).resolves.toBe('elapsed');
  });

  it('after stop() every sleep returns at once, until reset()', async () => {
    const s = new WakeableSleep();
    const running = s.sleep(LONG, { wakeable: false });
    s.stop();
    await expect(running).resolves.toBe('interrupted');
    await expect(s.sleep(LONG, { wakeable: false })).resolves.toBe('interrupted');
    s.reset();
    await expect(s.sleep(1)).resolves.toBe('elapsed');
  });
});
