/**
 * The policy's pins grouped by tool, once per policy document: every judgement reads the pins of one tool, and a
 * policy may hold thousands (ToolPins.MAX_PINS), so scanning them all at every call would cost more than the call's
 * own work on the node. Keyed weakly by the pins array of the document, so a new policy copy is grouped anew.
 */
import type { ToolPin } from "../../domain/ToolPins.js"

const grouped = new WeakMap<ReadonlyArray<ToolPin>, ReadonlyMap<string, ReadonlyArray<ToolPin>>>()

const NONE: ReadonlyArray<ToolPin> = []

export const of = (pins: ReadonlyArray<ToolPin>, tool: string): ReadonlyArray<ToolPin> => {
  if (pins.length === 0) return NONE
  let byTool = grouped.get(pins)
  if (byTool === undefined) {
    const map = new Map<string, Array<ToolPin>>()
    for (const pin of pins) {
      const list = map.get(pin.tool)
      if (list === undefined) map.set(pin.tool, [pin])
      else list.push(pin)
    }
    byTool = map
    grouped.set(pins, byTool)
  }
  return byTool.get(tool) ?? NONE
}
