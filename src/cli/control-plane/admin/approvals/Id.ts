/** The `--id` of an enrollment request, as `approvals list` shows it. */
import * as Options from "@effect/cli/Options"

export const id = Options.text("id").pipe(
  Options.withDescription("ID of the enrollment request, as `approvals list` shows it."),
)
