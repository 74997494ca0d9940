/** A bootstrap token as the admin API shows it (the fields the commands print). */
export interface TokenView {
  readonly id: string
  readonly role: string
  readonly description: string
  readonly max_usages: number
  readonly usages_count: number
  readonly autonomous_recovery: boolean
  readonly state: string
  readonly created_at: string
  readonly expires_at: string
}
