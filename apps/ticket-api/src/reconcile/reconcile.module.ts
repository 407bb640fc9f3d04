import { Module } from '@nestjs/common';
import { ReconcileScheduleService } from './reconcile-schedule.service';

@Module({ providers: [ReconcileScheduleService] })
export class ReconcileModule {}
