/** The consumer group whose projection rows this process writes. */
export const STATS_GROUP_ID = Symbol('STATS_GROUP_ID');
