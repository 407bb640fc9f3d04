/** The consumer group whose projection GET /v1/stats serves (STATS_GROUP_ID). */
export const STATS_GROUP = Symbol('STATS_GROUP');
