import { Module } from '@nestjs/common';
import { ConsoleRepository } from './console.repository';
import { ConsoleServer } from './console.server';
import { TicketTimelineRepository } from './ticket-timeline.repository';

/** The ops console on the admin listener (off unless ADMIN_TOKEN is set). */
@Module({ providers: [ConsoleRepository, TicketTimelineRepository, ConsoleServer], exports: [ConsoleServer] })
export class ConsoleModule {}
