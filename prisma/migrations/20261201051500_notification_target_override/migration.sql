-- A requeue with --url sends one dead notification to an operator-given URL ('override'), signed with the
-- tenant's current secret. Every other notification goes to its tenant's current target at each attempt.
ALTER TABLE "notifications" DROP CONSTRAINT "notifications_target_source_check";
ALTER TABLE "notifications" ADD CONSTRAINT "notifications_target_source_check"
  CHECK ("target_source" IS NULL OR "target_source" IN ('tenant', 'default', 'override'))
