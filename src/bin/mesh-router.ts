#!/usr/bin/env node
import "../platform/runtime.js"
import "../platform/memory.js"
import "../platform/biscuit-wasm.js"
import { meshRouter } from "../cli/mesh-router.js"
import { runCommand } from "../cli/run.js"

runCommand("mesh-router", meshRouter, process.argv)
