import { Injectable } from '@nestjs/common';
import { Database } from '../infra/database';

@Injectable()
export class HealthRepository {
  constructor(private readonly db: Database) {}

  /** Runs alone: one round trip; throws when the database does not answer. */
  async ping(): Promise<void> {
    await this.db.prisma.$queryRaw`SELECT 1`;
  }
}
