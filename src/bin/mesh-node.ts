#!/usr/bin/env node
import "../platform/runtime.js"
import "../platform/memory.js"
import "../platform/biscuit-wasm.js"
import { meshNode } from "../cli/mesh-node.js"
import { runCommand } from "../cli/run.js"

runCommand("mesh-node", meshNode, process.argv)
