/** What a write endpoint answers. Replays carry the stored bytes; expected outcomes are values. */
export interface WriteResult {
  outcome: 'created' | 'replayed' | 'deduplicated' | 'cancelled' | 'already_cancelled';
  status: number;
  /** The exact response body (JSON text) to send; stored with the key and replayed byte for byte. */
  body: string;
  ticketId: string;
  replayed: boolean;
  deduplicated: boolean;
  /** When the stored response stops being replayed (epoch ms); set on every committed create outcome. */
  replayUntil?: number;
}
