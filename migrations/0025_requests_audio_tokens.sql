ALTER TABLE "requests" ADD COLUMN "input_audio_tokens" bigint;--> statement-breakpoint
ALTER TABLE "requests" ADD COLUMN "output_audio_tokens" bigint;