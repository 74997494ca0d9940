/**
 * The events of a `text/event-stream` body, as the HTML standard's parser reads them: lines end in CRLF, LF or CR;
 * `data` lines are joined with LF; `event` names the type; a blank line dispatches; comments and other fields are
 * skipped. Text goes in as it arrives, cut anywhere; each event comes out once its blank line has.
 */

export interface Event {
  /** The `event` field; "message" when there was none. */
  readonly type: string
  readonly data: string
}

export class Parser {
  private pending = ""
  /** The last chunk ended in CR: an LF opening the next one belongs to that line end. */
  private afterCr = false
  private data: Array<string> = []
  private type = ""

  /** The events completed by `text`. */
  push(text: string): ReadonlyArray<Event> {
    let chunk = text
    if (this.afterCr && chunk.startsWith("\n")) chunk = chunk.slice(1)
    this.afterCr = false
    const events: Array<Event> = []
    let start = 0
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk.charCodeAt(i)
      if (c !== 10 && c !== 13) continue
      const line = this.pending + chunk.slice(start, i)
      this.pending = ""
      if (c === 13) {
        if (i + 1 === chunk.length) this.afterCr = true
        else if (chunk.charCodeAt(i + 1) === 10) i += 1
      }
      start = i + 1
      const event = this.line(line)
      if (event !== undefined) events.push(event)
    }
    this.pending += chunk.slice(start)
    return events
  }

  private line(line: string): Event | undefined {
    if (line === "") {
      if (this.data.length === 0) {
        this.type = ""
        return undefined
      }
      const event = { type: this.type === "" ? "message" : this.type, data: this.data.join("\n") }
      this.data = []
      this.type = ""
      return event
    }
    if (line.startsWith(":")) return undefined
    const colon = line.indexOf(":")
    const field = colon === -1 ? line : line.slice(0, colon)
    let value = colon === -1 ? "" : line.slice(colon + 1)
    if (value.startsWith(" ")) value = value.slice(1)
    if (field === "data") this.data.push(value)
    else if (field === "event") this.type = value
    return undefined
  }
}
