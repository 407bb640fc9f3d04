import { progressLine, replayReport } from './replay-progress';
import type { ReplayProgress } from './replay.repository';
import { isReplayStart } from './topic-replay';

const progress = (p: Partial<ReplayProgress>): ReplayProgress => ({
  id: 'r1',
  groupId: 'g',
  topic: 't',
  fromSpec: 'earliest',
  status: 'running',
  startedAt: new Date(0),
  total: 10,
  reread: 0,
  skipped: 0,
  invalid: 0,
  deadLettered: 0,
  partitions: [],
  ...p,
});

describe('replay start', () => {
  it.each(['earliest', '2026-11-30', '2026-11-30T08:00:00Z', '2026-11-30T08:00:00.123+01:00', '2026-11-30T08:00Z'])(
    'accepts %s',
    (from) => {
      expect(isReplayStart(from)).toBe(true);
    },
  );
  it.each(['latest', 'yesterday', '', '30/11/2026', '2026-13-01T00:00:00Z', '2026-11-30 08:00'])(
    'refuses %j',
    (from) => {
      expect(isReplayStart(from)).toBe(false);
    },
  );
});

describe('replay progress and report', () => {
  it('splits what was re-read into skipped, new and invalid', () => {
    expect(progressLine(progress({ reread: 8, skipped: 5, invalid: 1 }))).toBe(
      're-read 8/10 (80%), skipped 5 as already processed, 2 new, 1 invalid',
    );
    expect(progressLine(progress({ total: 0 }))).toBe(
      're-read 0/0 (100%), skipped 0 as already processed, 0 new, 0 invalid',
    );
  });

  it('counts the events dead-lettered (failed, held) apart from skipped and new', () => {
    expect(progressLine(progress({ reread: 9, skipped: 5, invalid: 1, deadLettered: 2 }))).toBe(
      're-read 9/10 (90%), skipped 5 as already processed, 1 new, 2 dead-lettered (failed, held), 1 invalid',
    );
  });

  it('reports re-read vs skipped at the end', () => {
    expect(replayReport(progress({ reread: 10, skipped: 9, invalid: 0 }), 2_500, 'list it').split('\n')).toEqual([
      'replay r1 of group g on t from earliest finished in 2.5 s:',
      '  re-read                      10 of 10',
      '  skipped (already processed)  9',
      '  processed as new             1',
      '  dead-lettered (failed, held) 0',
      '  dead-lettered (invalid)      0',
    ]);
  });

  it('names the command that lists the open dead letters when the replay dead-lettered any', () => {
    const p = progress({ reread: 10, skipped: 6, invalid: 1, deadLettered: 2 });
    expect(replayReport(p, 1_000, 'list --group g').split('\n').slice(3)).toEqual([
      '  processed as new             1',
      '  dead-lettered (failed, held) 2',
      '  dead-lettered (invalid)      1',
      "the group's open dead letters: list --group g",
    ]);
  });

  it('says how many messages no member counted', () => {
    const p = progress({ reread: 7, skipped: 7 });
    expect(replayReport(p, 1_000, 'list --group g').split('\n').slice(3)).toEqual([
      '  processed as new             0',
      '  dead-lettered (failed, held) 0',
      '  dead-lettered (invalid)      0',
      '  not counted                  3 (a member of an earlier kit counts nothing; a batch handler that owns the inbox counts what its statement wrote)',
      "the group's open dead letters: list --group g",
    ]);
  });
});
